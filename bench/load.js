'use strict';
/**
 * The load generator, run as its own process (child_process.fork) so that it never shares a
 * CPU-bound event loop with the service or the orchestrator. It receives one scenario over IPC,
 * runs autocannon against it and sends back autocannon's summary plus every 2xx response time
 * (autocannon's histogram is whole ms; run.js computes exact percentiles, over several slices
 * of a class with --rounds).
 *
 * Scenario: { url, connections, duration, warmup, method, headers, paths: [..], bodies?: [..], offset?, unique? }
 * Requests rotate through `paths` (and `bodies`) from `offset`, so a run is not one cached query
 * repeated. With `unique` (queries the service must not have seen: no query-vector cache hits),
 * every request takes the next path and a wrap-around is counted as `repeats`; the caller moves
 * `offset` on by `sent` after each run.
 */
const autocannon = require('autocannon');

function run(sc, duration, record, counter) {
  const request = {
    method: sc.method || 'GET',
    setupRequest: (req) => {
      const n = (sc.offset || 0) + counter.sent++;
      if (sc.unique && n >= sc.paths.length) counter.repeats++;
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
      });
    }
  });
}

process.on('message', async (/** @type {any} */ sc) => {
  try {
    const counter = { sent: 0, repeats: 0 };
    if (sc.warmup > 0) await run(sc, sc.warmup, null, counter);
    const record = { lat: [] };
    const res = await run(sc, sc.duration, record, counter);
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
        bytes: res.throughput.total,
        latencies: record.lat,
        sent: counter.sent,
        repeats: counter.repeats,
      },
    });
  } catch (e) {
    process.send({ ok: false, error: String((e && e.stack) || e) });
  }
});
