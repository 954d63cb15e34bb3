/** The JSON API, same origin, with the session cookie. Errors carry the server's sentence. */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: Record<string, unknown> | null,
    readonly retryAfter: number | null,
  ) {
    super(message);
  }

  /** The first 422 detail entries as "field: message" lines. */
  details(): string[] {
    const detail = this.body?.detail;
    if (!Array.isArray(detail)) return [];
    return detail.map((d: { loc?: unknown[]; msg?: string }) => {
      const loc = Array.isArray(d.loc) ? d.loc.filter((p) => p !== 'body' && p !== 'query').join('.') : '';
      return loc ? `${loc}: ${d.msg ?? ''}` : String(d.msg ?? '');
    });
  }

  /** A one-line message for a person. */
  describe(): string {
    const lines = this.details();
    return lines.length ? `${this.message} (${lines.join('; ')})` : this.message;
  }
}

/** Called when a request answers 401 after we believed we were signed in. */
let onUnauthorized: (() => void) | null = null;
export function setUnauthorizedHandler(fn: () => void): void {
  onUnauthorized = fn;
}

export async function api<T = Record<string, unknown>>(method: string, path: string, body?: unknown, opts: { quiet401?: boolean; headers?: Record<string, string> } = {}): Promise<T> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: { Accept: 'application/json', ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...opts.headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'The service cannot be reached. Check that it is running and try again.', null, null);
  }
  let data: Record<string, unknown> | null = null;
  const type = res.headers.get('content-type') ?? '';
  if (type.includes('json')) {
    try {
      data = (await res.json()) as Record<string, unknown>;
    } catch {
      data = null;
    }
  }
  if (!res.ok || (data && data.ok === false)) {
    const retry = Number(res.headers.get('retry-after'));
    const message = typeof data?.error === 'string' ? data.error : `Request failed (HTTP ${res.status})`;
    if (res.status === 401 && !opts.quiet401 && onUnauthorized) onUnauthorized();
    throw new ApiError(res.status, message, data, Number.isFinite(retry) && retry > 0 ? retry : null);
  }
  return (data ?? {}) as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const patch = <T>(path: string, body: unknown, headers?: Record<string, string>) => api<T>('PATCH', path, body, { headers });
export const del = <T>(path: string) => api<T>('DELETE', path);

/** Builds a query string, leaving out empty values; arrays repeat the key. */
export function query(params: Record<string, string | number | string[] | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === null || v === undefined || v === '') continue;
    if (Array.isArray(v)) v.filter(Boolean).forEach((x) => q.append(k, x));
    else q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
