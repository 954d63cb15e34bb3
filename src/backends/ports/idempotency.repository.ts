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
}
