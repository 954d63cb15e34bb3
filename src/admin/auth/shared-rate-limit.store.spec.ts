import type { Options } from 'express-rate-limit';
import { RateLimitHits, RateLimitRepository } from '../../backends/ports/rate-limit.repository';
import { BackendUnavailableError } from '../../common/errors';
import { SharedRateLimitStore } from './shared-rate-limit.store';

/** An in-memory RateLimitRepository that can be switched to failing like an unreachable database. */
class FlakyCounters extends RateLimitRepository {
  down = false;
  readonly hits = new Map<string, RateLimitHits>();
  private check(): void {
    if (this.down) throw new BackendUnavailableError('Document database', 'cannot reach MongoDB');
  }
  override async increment(key: string, windowMs: number): Promise<RateLimitHits> {
    this.check();
    const h = this.hits.get(key) ?? { totalHits: 0, resetTime: new Date(Date.now() + windowMs) };
    h.totalHits++;
    this.hits.set(key, h);
    return { ...h };
  }
  override async decrement(key: string): Promise<void> {
    this.check();
    const h = this.hits.get(key);
    if (h && h.totalHits > 0) h.totalHits--;
  }
  override async reset(key: string): Promise<void> {
    this.check();
    this.hits.delete(key);
  }
}

describe('SharedRateLimitStore', () => {
  let counters: FlakyCounters;
  let fallbacks: unknown[];
  let store: SharedRateLimitStore;
  beforeEach(() => {
    counters = new FlakyCounters();
    fallbacks = [];
    store = new SharedRateLimitStore('login-limit:', counters, (e) => fallbacks.push(e));
    store.init({ windowMs: 60_000 } as Options);
  });
  afterEach(() => store.shutdown());

  it('counts in the repository under its prefix, with the window of the limiter', async () => {
    const before = Date.now();
    expect((await store.increment('10.0.0.1')).totalHits).toBe(1);
    const second = await store.increment('10.0.0.1');
    expect(second.totalHits).toBe(2);
    expect(second.resetTime!.getTime()).toBeGreaterThanOrEqual(before + 60_000);
    await store.decrement('10.0.0.1');
    expect(counters.hits.get('login-limit:10.0.0.1')!.totalHits).toBe(1);
    await store.resetKey('10.0.0.1');
    expect(counters.hits.has('login-limit:10.0.0.1')).toBe(false);
    expect(store.localKeys).toBe(false);
    expect(fallbacks).toEqual([]);
  });

  it('falls back to in-process counters while the repository fails (still throttled, never an error), and back again', async () => {
    await store.increment('10.0.0.1');
    counters.down = true;
    expect((await store.increment('10.0.0.1')).totalHits).toBe(1);
    expect((await store.increment('10.0.0.1')).totalHits).toBe(2);
    await store.decrement('10.0.0.1');
    const third = await store.increment('10.0.0.1');
    expect(third.totalHits).toBe(2);
    expect(third.resetTime).toBeInstanceOf(Date);
    await expect(store.resetKey('10.0.0.1')).resolves.toBeUndefined();
    expect(fallbacks).toHaveLength(5);
    expect(fallbacks[0]).toBeInstanceOf(BackendUnavailableError);

    counters.down = false;
    expect((await store.increment('10.0.0.1')).totalHits).toBe(2);
  });
});
