'use strict';
/** A class measured in slices (run.js --rounds) as one measurement. */

/** The p-th percentile of sorted values (nearest rank); null when there are none. */
function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

/** A class's slices as one measurement: requests, CPU and time summed, latencies pooled. */
function combine(slices) {
  const sum = (f) => slices.reduce((a, x) => a + f(x), 0);
  const lat = Float64Array.from(slices.flatMap((x) => x.latencies)).sort();
  const statusCodes = {};
  for (const x of slices) for (const [k, v] of Object.entries(x.statusCodes)) statusCodes[k] = (statusCodes[k] ?? 0) + v;
  const requests = sum((x) => x.requests);
  const durationSec = sum((x) => x.durationSec);
  const cpuMs = slices.every((x) => x.proc.cpuMs !== null) ? sum((x) => x.proc.cpuMs) : null;
  const peaks = slices.map((x) => x.proc.rssPeak).filter((v) => v !== null);
  return {
    requests,
    durationSec,
    rps: requests / durationSec,
    ok2xx: sum((x) => x.ok2xx),
    non2xx: sum((x) => x.non2xx),
    errors: sum((x) => x.errors),
    timeouts: sum((x) => x.timeouts),
    statusCodes,
    bytesPerSec: sum((x) => x.bytes) / durationSec,
    latencyMs: {
      mean: lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : null,
      p50: percentile(lat, 50),
      p90: percentile(lat, 90),
      p99: percentile(lat, 99),
      max: lat.length ? lat[lat.length - 1] : null,
    },
    ...(slices.length > 1 ? { slices: slices.length } : {}),
    server: {
      rssPeak: peaks.length ? Math.max(...peaks) : null,
      rssEnd: slices[slices.length - 1].proc.rssEnd,
      cpuMs,
      cpuMsPerRequest: cpuMs !== null && requests ? cpuMs / requests : null,
    },
  };
}

module.exports = { combine, percentile };
