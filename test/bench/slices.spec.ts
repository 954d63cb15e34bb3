/**
 * `npm run bench -- --rounds R` measures each reading class in R slices, the classes taking
 * turns; the slices of a class must add up to what one long window would have reported.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { combine, percentile } = require('../../bench/lib/slices');

interface Slice {
  requests: number;
  durationSec: number;
  ok2xx: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, number>;
  bytes: number;
  latencies: number[];
  proc: { rssPeak: number | null; rssEnd: number | null; cpuMs: number | null };
}

function slice(latencies: number[], cpuMs: number | null, rssPeak: number, extra: Partial<Slice> = {}): Slice {
  return {
    requests: latencies.length,
    durationSec: 2,
    ok2xx: latencies.length,
    non2xx: 0,
    errors: 0,
    timeouts: 0,
    statusCodes: { 200: latencies.length },
    bytes: latencies.length * 100,
    latencies,
    proc: { rssPeak, rssEnd: rssPeak - 1, cpuMs },
    ...extra,
  };
}

describe('bench slices', () => {
  it('pools the latencies of every slice before taking percentiles', () => {
    // One slice alone has p99 1 ms and the other 100 ms; pooled, 2 of 200 are slow: p99 is the 198th value.
    const fast = Array.from({ length: 150 }, () => 1);
    const slow = [...Array.from({ length: 48 }, () => 2), 100, 100];
    const r = combine([slice(fast, 300, 10), slice(slow, 100, 30)]);
    expect(r.requests).toBe(200);
    expect(r.durationSec).toBe(4);
    expect(r.rps).toBe(50);
    expect(r.latencyMs.p50).toBe(1);
    expect(r.latencyMs.p99).toBe(2);
    expect(r.latencyMs.max).toBe(100);
    expect(r.latencyMs.mean).toBeCloseTo((150 + 96 + 200) / 200, 10);
    expect(r.slices).toBe(2);
  });

  it('sums CPU, time, bytes and status codes, and keeps the highest RSS', () => {
    const a = slice([1, 2, 3, 4], 8, 500, { statusCodes: { 200: 3, 500: 1 }, ok2xx: 3, non2xx: 1 });
    const b = slice([5, 6], 4, 700);
    const r = combine([a, b]);
    expect(r.server.cpuMs).toBe(12);
    expect(r.server.cpuMsPerRequest).toBe(2);
    expect(r.server.rssPeak).toBe(700);
    expect(r.server.rssEnd).toBe(699);
    expect(r.statusCodes).toEqual({ 200: 5, 500: 1 });
    expect(r.non2xx).toBe(1);
    expect(r.bytesPerSec).toBe(600 / 4);
  });

  it('reports no CPU when one slice could not read it, and one slice as it was', () => {
    expect(combine([slice([1], 5, 1), slice([2], null, 1)]).server.cpuMsPerRequest).toBeNull();
    const one = combine([slice([3, 1, 2], 6, 9)]);
    expect(one.slices).toBeUndefined();
    expect(one.latencyMs).toMatchObject({ p50: 2, p99: 3, max: 3 });
    expect(one.server.cpuMsPerRequest).toBe(2);
    expect(percentile([], 99)).toBeNull();
  });
});
