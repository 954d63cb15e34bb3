import { randomBytes } from 'node:crypto';
import type { RateLimitRepository } from '../../src/backends/ports/rate-limit.repository';

export interface RateLimitRepositoryHarness {
  repo: RateLimitRepository;
  /** The same database through a second connection (another instance of the service). */
  peer: RateLimitRepository;
  cleanup(): Promise<void>;
}

const freshKey = () => `test:${randomBytes(6).toString('hex')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MINUTE = 60_000;

/**
 * n concurrent increments of one fresh key: none is lost (the last to count sees n) and the k-th
 * smallest count is at least k, so no more than `limit` of them can pass a limiter. (SQLite
 * gives exactly 1..n; the MongoDB adapter counts after inserting, so two may both see the same
 * higher count.)
 */
function expectFairCounts(counts: number[]): void {
  const sorted = [...counts].sort((x, y) => x - y);
  sorted.forEach((c, i) => expect(c).toBeGreaterThanOrEqual(i + 1));
  expect(sorted[sorted.length - 1]).toBe(counts.length);
}

/**
 * The behaviour every RateLimitRepository adapter must show (login throttling counters).
 * Usage: rateLimitRepositoryContract('sqlite', async () => ({ repo, peer, cleanup }))
 */
export function rateLimitRepositoryContract(name: string, make: () => Promise<RateLimitRepositoryHarness>): void {
  describe(`RateLimitRepository contract: ${name}`, () => {
    let h: RateLimitRepositoryHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('counts hits within the window; the reset time is set by the first hit and kept', async () => {
      const key = freshKey();
      const before = Date.now();
      const first = await h.repo.increment(key, MINUTE);
      expect(first.totalHits).toBe(1);
      expect(first.resetTime.getTime()).toBeGreaterThanOrEqual(before + MINUTE);
      expect(first.resetTime.getTime()).toBeLessThanOrEqual(Date.now() + MINUTE);
      const second = await h.repo.increment(key, MINUTE);
      const third = await h.repo.increment(key, MINUTE);
      expect([second.totalHits, third.totalHits]).toEqual([2, 3]);
      expect(third.resetTime.getTime()).toBe(first.resetTime.getTime());
    });

    it('keys are counted apart', async () => {
      const a = freshKey();
      const b = freshKey();
      await h.repo.increment(a, MINUTE);
      await h.repo.increment(a, MINUTE);
      expect((await h.repo.increment(b, MINUTE)).totalHits).toBe(1);
      expect((await h.repo.increment(a, MINUTE)).totalHits).toBe(3);
    });

    it('a hit after the window has ended starts a new window at 1', async () => {
      const key = freshKey();
      await h.repo.increment(key, 300);
      const old = await h.repo.increment(key, 300);
      expect(old.totalHits).toBe(2);
      await sleep(450);
      const fresh = await h.repo.increment(key, MINUTE);
      expect(fresh.totalHits).toBe(1);
      expect(fresh.resetTime.getTime()).toBeGreaterThan(old.resetTime.getTime() + 30_000);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(2);
    });

    it('decrement takes one hit back, never below 0, and does nothing to a missing key', async () => {
      const key = freshKey();
      await h.repo.increment(key, MINUTE);
      await h.repo.increment(key, MINUTE);
      await h.repo.decrement(key);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(2);
      await h.repo.decrement(key);
      await h.repo.decrement(key);
      await h.repo.decrement(key);
      await h.repo.decrement(key);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(1);

      const missing = freshKey();
      await h.repo.decrement(missing);
      expect((await h.repo.increment(missing, MINUTE)).totalHits).toBe(1);
    });

    it('reset forgets the counter of one key only', async () => {
      const key = freshKey();
      const other = freshKey();
      await h.repo.increment(key, MINUTE);
      await h.repo.increment(key, MINUTE);
      await h.repo.increment(other, MINUTE);
      await h.repo.reset(key);
      await h.repo.reset(key);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(1);
      expect((await h.repo.increment(other, MINUTE)).totalHits).toBe(2);
    });

    it('another connection to the same database sees the same counters', async () => {
      const key = freshKey();
      await h.repo.increment(key, MINUTE);
      expect((await h.peer.increment(key, MINUTE)).totalHits).toBe(2);
      await h.peer.decrement(key);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(2);
      await h.peer.reset(key);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(1);
    });

    it('concurrent increments from two connections each count once (50 in parallel → 50)', async () => {
      const key = freshKey();
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? h.peer : h.repo).increment(key, MINUTE)));
      expectFairCounts(results.map((r) => r.totalHits));
      expect(new Set(results.map((r) => r.resetTime.getTime())).size).toBe(1);
      expect((await h.repo.increment(key, MINUTE)).totalHits).toBe(51);
    });

    it('concurrent increments on an ended window restart it once', async () => {
      const key = freshKey();
      await h.repo.increment(key, 200);
      await h.repo.increment(key, 200);
      await sleep(350);
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? h.peer : h.repo).increment(key, MINUTE)));
      expectFairCounts(results.map((r) => r.totalHits));
      expect(new Set(results.map((r) => r.resetTime.getTime())).size).toBe(1);
      expect((await h.peer.increment(key, MINUTE)).totalHits).toBe(21);
    });
  });
}
