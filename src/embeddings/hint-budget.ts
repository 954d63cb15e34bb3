/** Duplicate hints may keep the embedding provider busy at most this share of the time. */
export const HINT_SHARE = 0.1;
/** How much provider time a quiet service has in hand for a burst of creates (ms). */
export const HINT_BURST_MS = 500;
/** What a hint is expected to cost before one has been measured (ms). */
const FIRST_GUESS_MS = 20;

/**
 * The duplicate hints' budget of embedding time: a token bucket of milliseconds, HINT_BURST_MS
 * deep, refilled at HINT_SHARE of the clock. A hint starts while the bucket holds time; it
 * reserves the typical cost of a hint at once (so hints started together cannot overdraw it by
 * more than one each) and settles the time it really took when it ends.
 *
 * Counting time rather than calls makes the cap the same whatever the memories' length: a
 * 0.7 KB memory costs the local model ~20 ms, a one-line note ~4 ms. (20 calls a second, the
 * earlier cap, kept half a core of a 2-core machine busy with bench-sized memories.)
 */
export class HintBudget {
  private left = HINT_BURST_MS;
  private at: number;
  private typical = FIRST_GUESS_MS;

  constructor(private readonly now: () => number = Date.now) {
    this.at = now();
  }

  /** Reserves a hint's typical cost and answers it; null (nothing reserved) when the budget is spent. */
  take(): number | null {
    const t = this.now();
    this.left = Math.min(HINT_BURST_MS, this.left + (t - this.at) * HINT_SHARE);
    this.at = t;
    if (this.left <= 0) return null;
    const reserved = this.typical;
    this.left -= reserved;
    return reserved;
  }

  /** A hint that reserved `reserved` took `ms`: the difference goes back (or is taken too). */
  settle(reserved: number, ms: number): void {
    this.left += reserved - ms;
    this.typical += (ms - this.typical) / 4;
  }
}
