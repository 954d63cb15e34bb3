/**
 * Where the markdown files live (embedded: filesystem under the data dir; production: S3-compatible).
 * Keys are relative, e.g. "memories/<id>.md"; adapters refuse keys that could escape their root.
 * Adapters throw NotFoundError for a missing key and BackendUnavailableError('Object store', reason)
 * for anything else that goes wrong.
 */
export interface SignedUrl {
  url: string;
  expiresAt: Date;
}

export abstract class ObjectStore {
  /** 'filesystem' | 's3' */
  abstract readonly kind: string;
  abstract put(key: string, body: string | Buffer, contentType: string): Promise<void>;
  abstract get(key: string): Promise<Buffer>;
  /** Idempotent: deleting a missing key is not an error. */
  abstract delete(key: string): Promise<void>;
  /** Every key under the prefix (for reindex). */
  abstract list(prefix: string): AsyncIterable<string>;
  /**
   * A URL that downloads the object without a token until it expires.
   * `baseUrl` is the service's public base URL (the filesystem store signs URLs served by the service).
   */
  abstract signedUrl(key: string, ttlSeconds: number, opts: { baseUrl: string; filename: string }): Promise<SignedUrl>;
  /**
   * Removes the adapter's own temporary files older than `olderThanMs` (left by a crash in the
   * middle of a put); returns how many. Default: nothing to do.
   */
  async sweepTemporary(_olderThanMs: number): Promise<number> {
    return 0;
  }
  /** Put, get and delete a probe object; throws BackendUnavailableError with the reason. */
  abstract probe(): Promise<void>;
  /** Short human description for status, e.g. "filesystem at ./data/objects" or "s3 bucket 'x' at <endpoint>". */
  abstract describe(): string;
  abstract close(): Promise<void>;
}
