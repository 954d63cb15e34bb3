'use strict';
/**
 * The load generator, run as its own process (child_process.fork) so that it never shares a
 * CPU-bound event loop with the service or the orchestrator. It receives one scenario over IPC,
 * runs autocannon against it and sends back autocannon's summary plus exact latency
 * percentiles computed from every 2xx response time (autocannon's histogram is whole ms).
 *
 * Scenario: { url, connections, duration, warmup, method, headers, paths: [..], bodies?: [..] }
 * Requests rotate through `paths` (and `bodies`), so a run is not one cached query repeated.
 */
const autocannon = require('autocannon');

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

function run(sc, duration, record) {
  let i = 0;
  const request = {
    method: sc.method || 'GET',
    setupRequest: (req) => {
      const n = i++;
      const out = { ...req, path: sc.paths[n % sc.paths.length] };
      if (sc.bodies) out.body = sc.bodies[n % sc.bodies.length];
      return out;
    },
  };
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url: sc.url,
        connections: sc.connections,
        duration,
        headers: sc.headers || {},
        requests: [request],
        timeout: 10,
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    if (record) {
      inst.on('response', (_client, status, _bytes, ms) => {
        if (status >= 200 && status < 300) record.lat.push(ms);
        else if (record.samples.length < 5) record.samples.push(status);
      });
    }
  });
}

process.on('message', async (sc) => {
  try {
    if (sc.warmup > 0) await run(sc, sc.warmup, null);
    const record = { lat: [], samples: [] };
    const res = await run(sc, sc.duration, record);
    const lat = Float64Array.from(record.lat).sort();
    const mean = lat.length ? lat.reduce((a, b) => a + b, 0) / lat.length : null;
    process.send({
      ok: true,
      result: {
        requests: res.requests.total,
        durationSec: res.duration,
        rps: res.requests.total / res.duration,
        ok2xx: res['2xx'],
        non2xx: res.non2xx,
        errors: res.errors,
        timeouts: res.timeouts,
        statusCodes: Object.fromEntries(Object.entries(res.statusCodeStats).map(([k, v]) => [k, v.count])),
        bytesPerSec: res.throughput.average,
        latencyMs: {
          mean,
          p50: percentile(lat, 50),
          p90: percentile(lat, 90),
          p99: percentile(lat, 99),
          max: lat.length ? lat[lat.length - 1] : null,
        },
      },
    });
  } catch (e) {
    process.send({ ok: false, error: String((e && e.stack) || e) });
  }
});
