/**
 * Idempotency-Key records (issue 9): the first request with a key claims it, runs, and stores its
 * response; a repeat within the retention period gets that response replayed. Shared by every
 * instance on the same document database, and kept across restarts.
 */
export interface IdempotencyRecord {
  /** Caller scope + key (e.g. "token:<id>:<key>"). */
  key: string;
  /** Hash of method, route and body: a different request under the same key is refused. */
  fingerprint: string;
  /** null while the first request is still running. */
  status: number | null;
  /** JSON of the response body (null while running). */
  body: string | null;
  createdAt: Date;
}

export abstract class IdempotencyRepository {
  /**
   * Claims `record.key` (status and body null). Returns null when claimed, else the record that
   * already holds the key (running or finished). Records older than `record.createdAt - ttlMs` do
   * not count (they are replaced).
   */
  abstract claim(record: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null>;
  /** Stores the response of a claimed key. */
  abstract complete(key: string, status: number, body: string): Promise<void>;
  /** Gives a claimed key back (the request failed: a retry may run again). */
  abstract release(key: string): Promise<void>;
  abstract get(key: string): Promise<IdempotencyRecord | null>;
  /**
   * Purge (issue 43): deletes the records of `namespace` (see idempotencyKeyNamespace), or with
   * `memoryIds` only those whose stored answer shows one of these memories (idempotencyAnswerIds).
   * Returns how many.
   */
  abstract forget(namespace: string, memoryIds?: readonly string[]): Promise<number>;
}

/**
 * The namespace of a record, read from its key as IdempotencyInterceptor builds it:
 * `<caller>|ns:<namespace>|<method> <path>|<key>`, or without the `ns:` part for 'default'
 * (records written before namespaces). Neither the caller nor a namespace holds a `|`.
 */
export function idempotencyKeyNamespace(key: string): string {
  const rest = key.slice(key.indexOf('|') + 1);
  return rest.startsWith('ns:') ? rest.slice(3, rest.indexOf('|')) : 'default';
}

/** The memories a stored answer shows: a created memory (`memory.id`) and its near-copies (`similar[].id`, with their titles). */
export function idempotencyAnswerIds(body: string | null): string[] {
  if (body === null) return [];
  try {
    const v = JSON.parse(body) as { memory?: { id?: unknown }; similar?: Array<{ id?: unknown }> } | null;
    if (v === null || typeof v !== 'object') return [];
    const ids = [v.memory?.id, ...(Array.isArray(v.similar) ? v.similar.map((s) => s?.id) : [])];
    return ids.filter((id): id is string => typeof id === 'string');
  } catch {
    return [];
  }
}
