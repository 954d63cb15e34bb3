import { Injectable, Logger } from '@nestjs/common';
import { RateLimitRepository } from '../backends/ports/rate-limit.repository';
import { TooManyRequestsError } from '../common/errors';
import { AppConfig } from '../config/app-config';

/** What a token's last request learned about its limit (sent as RateLimit-* headers). */
export interface RateLimitState {
  limit: number;
  /** Requests left in the window (an estimate across instances, never above the truth by more than one lease). */
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

/** 429 for a token over its limit, with Retry-After and the IETF draft RateLimit-* headers. */
export class TokenRateLimitedError extends TooManyRequestsError {
  readonly headers: Record<string, string>;

  constructor(state: RateLimitState) {
    super(`Rate limit exceeded: this token may send ${state.limit} requests per minute; retry in ${state.resetSeconds} s`);
    this.headers = { 'Retry-After': String(state.resetSeconds), ...rateLimitHeaders(state) };
  }
}

export function rateLimitHeaders(s: RateLimitState): Record<string, string> {
  return { 'RateLimit-Limit': String(s.limit), 'RateLimit-Remaining': String(s.remaining), 'RateLimit-Reset': String(s.resetSeconds) };
}

/** A share of a token's window claimed by this instance. */
interface Lease {
  resetAt: number;
  /** Requests this instance may still admit from its claimed shares. */
  left: number;
  /** Requests admitted in the window by every instance, as far as this instance knows (claimed shares minus `left`). */
  used: number;
  /** The shared counter said no: refuse until resetAt without asking again. */
  exhausted: boolean;
}

/** While the document database fails, at most one warning per this period. */
const WARN_EVERY_MS = 60_000;
/** A window is split into this many shares; one database round trip per share and instance. */
const SHARES_PER_WINDOW = 20;

/**
 * Per-token rate limits (issue 10), counted in the document database through the
 * RateLimitRepository port (the one the login throttle uses), so every instance that shares the
 * database shares the limit.
 *
 * Hot path: a request does not pay a database round trip. An instance claims the window in
 * shares of ceil(limit / 20) requests with one atomic `increment` of the token's shared counter
 * (the counter counts shares, and the window starts with the first share any instance claims);
 * requests then draw on the share locally. When the counter passes the number of shares, the
 * instance refuses until the window ends, without asking again.
 *
 * Bounds: over-admission is none while the database answers (the shares add up to the limit);
 * under-admission is at most one unused share per instance (5% of the limit each). While the
 * database fails, each instance counts alone (a token then gets up to its limit per instance),
 * with a warning at most once a minute.
 */
@Injectable()
export class TokenRateLimiter {
  private readonly logger = new Logger('TokenRateLimits');
  private readonly windowMs: number;
  private readonly leases = new Map<string, Lease>();
  /** A share being claimed per token: concurrent requests wait for it instead of each claiming one. */
  private readonly claiming = new Map<string, Promise<void>>();
  /** Admitted requests per token in this instance's current and previous fixed minute (for the token list). */
  private readonly recent = new Map<string, { minute: number; current: number; previous: number }>();
  private lastWarning = 0;

  constructor(
    private readonly counters: RateLimitRepository,
    cfg: AppConfig,
  ) {
    this.windowMs = cfg.tokenRateWindowSeconds * 1000;
  }

  /** Counts one request of `tokenId` against `limit` (0 = unlimited); throws TokenRateLimitedError when over. */
  async take(tokenId: string, limit: number): Promise<RateLimitState | null> {
    if (limit <= 0) {
      this.noteRecent(tokenId);
      return null;
    }
    for (let round = 0; round < 3; round++) {
      const now = Date.now();
      let lease = this.leases.get(tokenId);
      if (lease && lease.resetAt <= now) {
        this.leases.delete(tokenId);
        lease = undefined;
      }
      if (lease && lease.left > 0) {
        lease.left--;
        lease.used++;
        this.noteRecent(tokenId);
        return this.state(lease, limit, now);
      }
      if (lease?.exhausted) throw new TokenRateLimitedError(this.state(lease, limit, now));
      let pending = this.claiming.get(tokenId);
      if (!pending) {
        pending = this.claim(tokenId, limit).finally(() => this.claiming.delete(tokenId));
        this.claiming.set(tokenId, pending);
      }
      await pending;
    }
    // Other requests of this token took every share this instance claimed meanwhile.
    const lease = this.leases.get(tokenId);
    throw new TokenRateLimitedError(lease ? this.state(lease, limit, Date.now()) : { limit, remaining: 0, resetSeconds: 1 });
  }

  /** Requests per minute this instance admitted for the token recently (sliding estimate). */
  recentRate(tokenId: string, now = Date.now()): number {
    const r = this.recent.get(tokenId);
    if (!r) return 0;
    const minute = Math.floor(now / 60_000);
    const into = (now % 60_000) / 60_000;
    if (r.minute === minute) return Math.round(r.current + r.previous * (1 - into));
    if (r.minute === minute - 1) return Math.round(r.current * (1 - into));
    return 0;
  }

  forget(tokenId: string): void {
    this.leases.delete(tokenId);
    this.recent.delete(tokenId);
  }

  private async claim(tokenId: string, limit: number): Promise<void> {
    const share = Math.max(1, Math.ceil(limit / SHARES_PER_WINDOW));
    const shares = Math.ceil(limit / share);
    let claimed: number;
    let resetAt: number;
    try {
      const hits = await this.counters.increment(`token-rate:${tokenId}`, this.windowMs);
      claimed = hits.totalHits;
      resetAt = hits.resetTime.getTime();
    } catch (e) {
      this.warn(e);
      // Counted by this instance alone until the database answers again: the whole limit, one window.
      const previous = this.leases.get(tokenId);
      if (previous && previous.resetAt > Date.now()) {
        previous.exhausted = true;
        return;
      }
      this.leases.set(tokenId, { resetAt: Date.now() + this.windowMs, left: limit, used: 0, exhausted: false });
      return;
    }
    const previous = this.leases.get(tokenId);
    const usedBefore = (claimed - 1) * share;
    if (claimed > shares) {
      this.leases.set(tokenId, { resetAt, left: 0, used: limit, exhausted: true });
      return;
    }
    // The last share holds what is left of the limit.
    const size = claimed === shares ? limit - (shares - 1) * share : share;
    const carried = previous && previous.resetAt === resetAt ? previous.left : 0;
    this.leases.set(tokenId, { resetAt, left: carried + size, used: usedBefore, exhausted: false });
  }

  private state(lease: Lease, limit: number, now: number): RateLimitState {
    const remaining = lease.exhausted ? 0 : Math.max(0, limit - lease.used);
    return { limit, remaining, resetSeconds: Math.max(1, Math.ceil((lease.resetAt - now) / 1000)) };
  }

  private noteRecent(tokenId: string): void {
    const minute = Math.floor(Date.now() / 60_000);
    const r = this.recent.get(tokenId);
    if (!r) this.recent.set(tokenId, { minute, current: 1, previous: 0 });
    else if (r.minute === minute) r.current++;
    else {
      r.previous = r.minute === minute - 1 ? r.current : 0;
      r.current = 1;
      r.minute = minute;
    }
  }

  private warn(e: unknown): void {
    if (Date.now() - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = Date.now();
    this.logger.warn(`Token rate limits use in-process counters until the document database answers again: ${e instanceof Error ? e.message : String(e)}`);
  }
}
