/** A counter of hits in a fixed window (see RateLimitRepository). */
export interface RateLimitHits {
  /** Hits counted in the current window, this one included (at least 1). */
  totalHits: number;
  /** When the current window ends and the counter starts again. */
  resetTime: Date;
}

/**
 * Fixed-window hit counters in the document database (login throttling), shared by every
 * instance that uses the same database and kept across restarts. Keys are opaque strings
 * (the caller's prefix + client address). A counter lives until its window ends; adapters
 * remove ended counters by themselves (TTL index or pruning), so keys never pile up.
 */
export abstract class RateLimitRepository {
  /**
   * Counts one hit for `key`, atomically (concurrent calls from any instance each count once).
   * Starts a new window of `windowMs` (at 1 hit) when there is none or the last one has ended.
   */
  abstract increment(key: string, windowMs: number): Promise<RateLimitHits>;
  /** Takes one hit back from the current window (never below 0); nothing when there is none. */
  abstract decrement(key: string): Promise<void>;
  /** Forgets the counter of `key`. */
  abstract reset(key: string): Promise<void>;
}
