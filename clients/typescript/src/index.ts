/**
 * Memory Store client for TypeScript / JavaScript (Node 18+, or any runtime with a global `fetch`).
 * Zero runtime dependencies. The request and answer types come from the service's OpenAPI
 * document (src/openapi.ts, generated); the methods below are written by hand.
 *
 *   const store = new MemoryStore({ baseUrl: 'http://127.0.0.1:8080', token: process.env.MEMSTORE_TOKEN! });
 *   const { memory } = await store.createMemory({ content: 'Deploys go through blue-green.', tags: ['deploy'] });
 *   for await (const row of store.iterateMemories({ q: 'deploy' })) console.log(row.id, row.title);
 */
import type { components } from './openapi';

type Schemas = components['schemas'];

/**
 * A memory as fetch, create and update answer it. `content` is optional: an answer may leave it
 * out (e.g. for a token that may write but not read). Unknown extra fields are kept as they come.
 */
export type Memory = Omit<Schemas['MemoryDto'], 'content'> & { content?: string };
/** A list or search row: a memory without content, with a snippet (and a score when searching). */
export type MemoryRow = Schemas['MemoryRowDto'];
/** One page of GET /api/memories. */
export type MemoryPage = Omit<Schemas['MemoryListResponseDto'], 'rows'> & { rows: MemoryRow[] };
export type CreateMemoryInput = Schemas['CreateMemoryDto'];
export type UpdateMemoryInput = Schemas['UpdateMemoryDto'];
export type SimilarMemory = Schemas['SimilarMemoryDto'];
export type Stats = Schemas['StatsDto'];
export type BulkDeleteResult = Omit<Schemas['BulkDeleteResponseDto'], 'ok'>;
/** One entry of a 422 answer's `detail` (pydantic style). */
export type ValidationDetail = Schemas['ValidationErrorResponse']['detail'][number];

/** Filters of a list or search (GET /api/memories); `tag` may repeat (every tag must match). */
export interface ListParams {
  q?: string;
  type?: Memory['type'];
  scope?: Memory['scope'];
  agent?: string;
  project?: string;
  tag?: string | string[];
  days?: number;
  since?: string | Date;
  /** Page size, 1 to 200 (service default 20). */
  limit?: number;
  page?: number;
  skip?: number;
  /** Search only: hybrid (default), keyword or semantic. */
  mode?: 'hybrid' | 'keyword' | 'semantic';
  /** Search only: when the question is asked (default now); times in `q` ("last week", "in May") are read from it. */
  query_date?: string | Date;
  /** `next_cursor` of a previous list page (list mode only). */
  after?: string;
  /** Also memories a newer one superseded (left out by default). */
  include_superseded?: boolean;
  /** Answer as of this moment: memories created by then and not yet superseded then. */
  as_of?: string | Date;
}

/** The version an If-Match names: a version number, an ETag (`"3"`), or a memory (its `version`). */
export type VersionRef = number | string | { version: number };

export interface RetryOptions {
  /** Retries after the first attempt on 429 and 503 (default 3; 0 turns retrying off). */
  maxRetries?: number;
  /**
   * Longest wait before one retry, in ms (default 30,000). A Retry-After longer than this is not
   * waited for: the error is thrown at once (its `retryAfter` says how long the service asked for).
   */
  maxDelayMs?: number;
  /** First back-off when the answer has no Retry-After, doubled on each retry (default 500 ms). */
  baseDelayMs?: number;
}

export interface MemoryStoreOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string;
  /** An API token, `mem_tok_<id>_<secret>`. */
  token: string;
  retry?: RetryOptions;
  /** Per-attempt timeout in ms (default 30,000; 0 = none). */
  timeoutMs?: number;
  /** A fetch implementation (default: the global fetch). */
  fetch?: typeof fetch;
  /** Called before each retry: the error that caused it, the attempt number (1, 2, …) and the wait in ms. */
  onRetry?: (error: MemoryStoreError, attempt: number, delayMs: number) => void;
}

export interface RequestOptions {
  signal?: AbortSignal;
}

// --- Errors -------------------------------------------------------------------------------------

/** Any non-2xx answer, with the contract's error envelope (`{"ok": false, "error": "..."}`) read. */
export class MemoryStoreError extends Error {
  /** The HTTP status (0 when no answer came: network failure or timeout). */
  readonly status: number;
  /** The parsed JSON body when there was one. */
  readonly body: unknown;
  /** The answer's X-Request-Id (quote it when reporting a problem). */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (Retry-After), when it said. */
  readonly retryAfter: number | undefined;

  constructor(message: string, init: { status: number; body?: unknown; requestId?: string; retryAfter?: number; cause?: unknown }) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = new.target.name;
    this.status = init.status;
    this.body = init.body;
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }
}
/** 401: missing, invalid, expired or revoked token. */
export class AuthenticationError extends MemoryStoreError {}
/** 403: the token lacks the scope, or its IP is not allowed. */
export class PermissionDeniedError extends MemoryStoreError {}
/** 404: no such memory (or route). */
export class NotFoundError extends MemoryStoreError {}
/** 409: the request conflicts with the stored state. */
export class ConflictError extends MemoryStoreError {}
/** 412: If-Match named a version that is not the current one; `currentVersion` is the current one. */
export class VersionConflictError extends MemoryStoreError {
  get currentVersion(): number | undefined {
    const v = (this.body as { current_version?: unknown } | undefined)?.current_version;
    return typeof v === 'number' ? v : undefined;
  }
}
/** 413: the request body is over the service's limit. */
export class PayloadTooLargeError extends MemoryStoreError {}
/** 422: the request was refused; `detail` says which field and why. */
export class ValidationError extends MemoryStoreError {
  get detail(): ValidationDetail[] {
    const d = (this.body as { detail?: unknown } | undefined)?.detail;
    return Array.isArray(d) ? (d as ValidationDetail[]) : [];
  }
}
/** 429: over the token's rate limit (after the retries, if any). */
export class RateLimitError extends MemoryStoreError {}
/** 503: a backend (database, object store, embeddings) is unavailable (after the retries, if any). */
export class ServiceUnavailableError extends MemoryStoreError {}

const ERROR_CLASSES: Record<number, typeof MemoryStoreError> = {
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  412: VersionConflictError,
  413: PayloadTooLargeError,
  422: ValidationError,
  429: RateLimitError,
  503: ServiceUnavailableError,
};

// --- Helpers ------------------------------------------------------------------------------------

/** The If-Match value for a version: `"3"` (an ETag given as such is passed on unchanged). */
export function etag(ref: VersionRef): string {
  if (typeof ref === 'number') return `"${ref}"`;
  if (typeof ref === 'string') return ref;
  return `"${ref.version}"`;
}

/** Retry-After as seconds: delta-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function randomKey(): string {
  return globalThis.crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: ListParams;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether a 503 may be retried (the request is safe to repeat). 429 always may: it was not processed. */
  retry503: boolean;
  signal?: AbortSignal;
}

// --- The client ---------------------------------------------------------------------------------

export class MemoryStore {
  private readonly baseUrl: string;
  /** A true private field: the token does not show when the client is logged or inspected. */
  readonly #token: string;
  private readonly maxRetries: number;
  private readonly maxDelayMs: number;
  private readonly baseDelayMs: number;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly onRetry?: MemoryStoreOptions['onRetry'];

  constructor(options: MemoryStoreOptions) {
    if (!options?.baseUrl) throw new TypeError('MemoryStore: baseUrl is required');
    if (!options.token) throw new TypeError('MemoryStore: token is required');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.maxRetries = Math.max(0, options.retry?.maxRetries ?? 3);
    this.maxDelayMs = Math.max(0, options.retry?.maxDelayMs ?? 30_000);
    this.baseDelayMs = Math.max(0, options.retry?.baseDelayMs ?? 500);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    const f = options.fetch ?? globalThis.fetch;
    if (typeof f !== 'function') throw new TypeError('MemoryStore: no fetch available (Node 18+ has one; or pass options.fetch)');
    this.fetchImpl = f;
    this.onRetry = options.onRetry;
  }

  /** Creates a memory. Sends an Idempotency-Key (yours, or a random one) so a retried create is stored once. */
  async createMemory(input: CreateMemoryInput, options: RequestOptions & { idempotencyKey?: string } = {}): Promise<{ memory: Memory; similar: SimilarMemory[] }> {
    const body = await this.call<{ memory: Memory; similar?: SimilarMemory[] }>({
      method: 'POST',
      path: '/api/memories',
      body: input,
      headers: { 'Idempotency-Key': options.idempotencyKey ?? randomKey() },
      retry503: true,
      signal: options.signal,
    });
    return { memory: body.memory, similar: body.similar ?? [] };
  }

  /** Fetches a memory with its content. */
  async getMemory(id: string, options: RequestOptions = {}): Promise<Memory> {
    return (await this.call<{ memory: Memory }>({ method: 'GET', path: `/api/memories/${encodeURIComponent(id)}`, retry503: true, signal: options.signal })).memory;
  }

  /**
   * Changes some fields. With `ifMatch` (a version, an ETag or the memory you read) the change is
   * made only if that is still the current version; otherwise a VersionConflictError is thrown.
   */
  async updateMemory(id: string, changes: UpdateMemoryInput, options: RequestOptions & { ifMatch?: VersionRef } = {}): Promise<Memory> {
    const headers = options.ifMatch === undefined ? undefined : { 'If-Match': etag(options.ifMatch) };
    return (await this.call<{ memory: Memory }>({ method: 'PATCH', path: `/api/memories/${encodeURIComponent(id)}`, body: changes, headers, retry503: true, signal: options.signal })).memory;
  }

  /** Deletes a memory; with `ifMatch`, only if that is still its current version (else VersionConflictError). */
  async deleteMemory(id: string, options: RequestOptions & { ifMatch?: VersionRef } = {}): Promise<void> {
    const headers = options.ifMatch === undefined ? undefined : { 'If-Match': etag(options.ifMatch) };
    await this.call({ method: 'DELETE', path: `/api/memories/${encodeURIComponent(id)}`, headers, retry503: true, signal: options.signal });
  }

  /** Updates `memory` only if nobody changed it since it was read (If-Match with its version). */
  updateIfUnchanged(memory: Pick<Memory, 'id' | 'version'>, changes: UpdateMemoryInput, options: RequestOptions = {}): Promise<Memory> {
    return this.updateMemory(memory.id, changes, { ...options, ifMatch: memory.version });
  }

  /** Deletes `memory` only if nobody changed it since it was read. */
  deleteIfUnchanged(memory: Pick<Memory, 'id' | 'version'>, options: RequestOptions = {}): Promise<void> {
    return this.deleteMemory(memory.id, { ...options, ifMatch: memory.version });
  }

  /**
   * Read, change, write with If-Match, again on a conflict (at most `attempts` times, default 3):
   * `change` gets the current memory and returns the fields to change.
   */
  async modifyMemory(id: string, change: (current: Memory) => UpdateMemoryInput | Promise<UpdateMemoryInput>, options: RequestOptions & { attempts?: number } = {}): Promise<Memory> {
    const attempts = Math.max(1, options.attempts ?? 3);
    for (let i = 1; ; i++) {
      const current = await this.getMemory(id, options);
      try {
        return await this.updateIfUnchanged(current, await change(current), options);
      } catch (e) {
        if (!(e instanceof VersionConflictError) || i >= attempts) throw e;
      }
    }
  }

  /** One page of the newest-first list (no `q`) or of a search (`q`). */
  listMemories(params: ListParams = {}, options: RequestOptions = {}): Promise<MemoryPage> {
    return this.call<MemoryPage>({ method: 'GET', path: '/api/memories', query: params, retry503: true, signal: options.signal });
  }

  /** One page of a full-text / meaning search, best match first. */
  searchMemories(q: string, params: Omit<ListParams, 'q' | 'after'> = {}, options: RequestOptions = {}): Promise<MemoryPage> {
    return this.listMemories({ ...params, q }, options);
  }

  /**
   * Every page, one after the other: the list follows `next_cursor` (stable while memories are
   * added), a search follows page numbers while `has_next`.
   */
  async *pages(params: ListParams = {}, options: RequestOptions = {}): AsyncGenerator<MemoryPage, void, undefined> {
    const searching = (params.q ?? '').trim() !== '';
    let next: ListParams = { ...params };
    for (;;) {
      const page = await this.listMemories(next, options);
      yield page;
      if (!page.has_next || page.rows.length === 0) return;
      if (!searching && page.next_cursor) {
        const { page: _p, skip: _s, ...rest } = next;
        next = { ...rest, after: page.next_cursor };
      } else if (searching) {
        const { skip: _s, ...rest } = next;
        next = { ...rest, page: (page.page ?? next.page ?? 1) + 1 };
      } else {
        return; // list mode without a cursor: nothing to follow
      }
    }
  }

  /** Every row of every page (see `pages`). */
  async *iterateMemories(params: ListParams = {}, options: RequestOptions = {}): AsyncGenerator<MemoryRow, void, undefined> {
    for await (const page of this.pages(params, options)) yield* page.rows;
  }

  /** Deletes up to 1,000 memories; ids that did not exist come back in `missing`. */
  async bulkDelete(ids: string[], options: RequestOptions & { idempotencyKey?: string } = {}): Promise<BulkDeleteResult> {
    const { ok: _ok, ...rest } = await this.call<Schemas['BulkDeleteResponseDto']>({
      method: 'POST',
      path: '/api/memories/bulk-delete',
      body: { ids },
      headers: { 'Idempotency-Key': options.idempotencyKey ?? randomKey() },
      retry503: true,
      signal: options.signal,
    });
    return rest;
  }

  /** Counts by type, scope, project and agent. */
  async stats(options: RequestOptions = {}): Promise<Stats> {
    return (await this.call<{ stats: Stats }>({ method: 'GET', path: '/api/stats', retry503: true, signal: options.signal })).stats;
  }

  // --- transport ---

  private url(path: string, query?: ListParams): string {
    const url = new URL(this.baseUrl + path);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, v instanceof Date ? v.toISOString() : String(v));
    }
    return url.toString();
  }

  private async call<T>(c: Call): Promise<T> {
    const url = this.url(c.path, c.query);
    const headers: Record<string, string> = { Accept: 'application/json', Authorization: `Bearer ${this.#token}`, ...c.headers };
    if (c.body !== undefined) headers['Content-Type'] = 'application/json';
    const payload = c.body === undefined ? undefined : JSON.stringify(c.body);
    for (let attempt = 0; ; attempt++) {
      const error = await this.attempt<T>(c, url, headers, payload);
      if (!(error instanceof MemoryStoreError)) return error.value;
      const retriable = error.status === 429 || (error.status === 503 && c.retry503);
      if (!retriable || attempt >= this.maxRetries) throw error;
      const delay = error.retryAfter !== undefined ? error.retryAfter * 1000 : this.baseDelayMs * 2 ** attempt * (0.5 + Math.random() / 2);
      if (delay > this.maxDelayMs) throw error;
      this.onRetry?.(error, attempt + 1, delay);
      await sleep(delay, c.signal);
    }
  }

  /** One request: the parsed body of a 2xx, or the error (thrown only for aborts by the caller). */
  private async attempt<T>(c: Call, url: string, headers: Record<string, string>, body: string | undefined): Promise<{ value: T } | MemoryStoreError> {
    const signals = [c.signal, this.timeoutMs > 0 ? AbortSignal.timeout(this.timeoutMs) : undefined].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 && 'any' in AbortSignal ? (AbortSignal as unknown as { any(s: AbortSignal[]): AbortSignal }).any(signals) : signals[0];
    let res: Response;
    let text: string;
    try {
      // No redirect is followed: the API never redirects, and a redirect elsewhere must not get the token.
      res = await this.fetchImpl(url, { method: c.method, headers, body, signal, redirect: 'manual' });
      text = await res.text();
    } catch (e) {
      if (c.signal?.aborted) throw e;
      const timedOut = e instanceof Error && (e.name === 'TimeoutError' || e.name === 'AbortError');
      return new MemoryStoreError(timedOut ? `${c.method} ${c.path}: no answer within ${this.timeoutMs} ms` : `${c.method} ${c.path}: ${e instanceof Error ? e.message : String(e)}`, {
        status: 0,
        cause: e,
      });
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (res.ok) return { value: parsed as T };
    const envelope = parsed as { error?: unknown } | undefined;
    const location = res.status >= 300 && res.status < 400 ? res.headers.get('location') : null;
    const message =
      typeof envelope?.error === 'string'
        ? envelope.error
        : location
          ? `HTTP ${res.status}: redirected to ${location} (not followed; use that address as baseUrl if it is the service)`
          : `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`;
    const Cls = ERROR_CLASSES[res.status] ?? MemoryStoreError;
    return new Cls(message, {
      status: res.status,
      body: parsed,
      requestId: res.headers.get('x-request-id') ?? undefined,
      retryAfter: parseRetryAfter(res.headers.get('retry-after')),
    });
  }
}

export default MemoryStore;
