import { ClientRateLimitInfo, MemoryStore, Options, Store } from 'express-rate-limit';
import type { RateLimitRepository } from '../../backends/ports/rate-limit.repository';

/**
 * An express-rate-limit Store over the document database (RateLimitRepository), so that every
 * instance sharing that database counts the same attempts, and counters survive a restart.
 * One instance per limiter, each with its own `prefix` (express-rate-limit refuses a shared
 * store). The repository is the port bound to the active document database: after a switch at
 * run time the counters simply start afresh in the new database.
 *
 * When the document database fails (down, misconfigured), the store falls back to in-process
 * counters for as long as it fails: attempts stay throttled (per instance, starting from zero),
 * never let through unthrottled, and a failing database never turns a sign-in into a 503 —
 * the admin must be able to sign in to fix the settings. `onFallback` hears each failure.
 */
export class SharedRateLimitStore implements Store {
  /** Keys are shared with other instances through the database. */
  readonly localKeys = false;
  private readonly local = new MemoryStore();
  private windowMs = 60_000;

  constructor(
    readonly prefix: string,
    private readonly shared: RateLimitRepository,
    private readonly onFallback: (error: unknown) => void,
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
    this.local.init(options);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    try {
      return await this.shared.increment(this.prefix + key, this.windowMs);
    } catch (e) {
      this.onFallback(e);
      const { totalHits, resetTime } = await this.local.increment(key);
      return { totalHits, resetTime: resetTime && new Date(resetTime) };
    }
  }

  async decrement(key: string): Promise<void> {
    try {
      await this.shared.decrement(this.prefix + key);
    } catch (e) {
      this.onFallback(e);
      await this.local.decrement(key);
    }
  }

  async resetKey(key: string): Promise<void> {
    await this.local.resetKey(key);
    try {
      await this.shared.reset(this.prefix + key);
    } catch (e) {
      this.onFallback(e);
    }
  }

  shutdown(): void {
    this.local.shutdown();
  }
}
