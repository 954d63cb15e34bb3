'use strict';
/**
 * The load generator, run as its own process (child_process.fork) so that it never shares a
 * CPU-bound event loop with the service or the orchestrator. It receives one scenario over IPC,
 * runs autocannon against it and sends back autocannon's summary plus every 2xx response time
 * (autocannon's histogram is whole ms; run.js computes exact percentiles, over several slices
 * of a class with --rounds).
 *
 * Scenario: { url, connections, duration, warmup, method, headers, paths: [..], bodies?: [..], offset?, unique?, rate? }
 * Requests rotate through `paths` (and `bodies`) from `offset`, so a run is not one cached query
 * repeated. With `unique` (queries the service must not have seen: no query-vector cache hits),
 * every request takes the next path and a wrap-around is counted as `repeats`; the caller moves
 * `offset` on by `sent` after each run.
 *
 * With `rate` (requests per second) the load is paced instead (paced()): one request every
 * 1/rate seconds whatever is still outstanding, as independent clients arrive, each latency
 * counted from the moment its request was due. That is the latency a user sees at that load;
 * autocannon's own rate option sends each second's requests as one burst, which measures a queue.
 */
const http = require('node:http');
const autocannon = require('autocannon');

/** The paced run: autocannon's summary fields that load.js reports, from node:http. */
function paced(sc, duration, record, counter) {
  const url = new URL(sc.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const summary = { requests: { total: 0 }, duration, '2xx': 0, non2xx: 0, errors: 0, timeouts: 0, statusCodeStats: {}, throughput: { total: 0 } };
  const interval = 1000 / sc.rate;
  const start = performance.now();
  return new Promise((resolve) => {
    let due = 0;
    let outstanding = 0;
    let done = false;
    const finish = () => {
      if (done && outstanding === 0) {
        agent.destroy();
        resolve(summary);
      }
    };
    const send = () => {
      const n = (sc.offset || 0) + counter.sent++;
      if (sc.unique && n >= sc.paths.length) counter.repeats++;
      const body = sc.bodies ? sc.bodies[n % sc.bodies.length] : undefined;
      const dueAt = start + due * interval;
      outstanding++;
      const req = http.request({ host: url.hostname, port: url.port, path: sc.paths[n % sc.paths.length], method: sc.method || 'GET', headers: sc.headers || {}, agent, timeout: 10000 }, (res) => {
        res.on('data', (chunk) => (summary.throughput.total += chunk.length));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          summary.requests.total++;
          summary.statusCodeStats[status] = { count: (summary.statusCodeStats[status]?.count ?? 0) + 1 };
          if (status >= 200 && status < 300) {
            summary['2xx']++;
            if (record) record.lat.push(performance.now() - dueAt);
          } else summary.non2xx++;
          outstanding--;
          finish();
        });
      });
      req.on('timeout', () => {
        summary.timeouts++;
        req.destroy(new Error('timeout'));
      });
      req.on('error', () => {
        summary.errors++;
        outstanding--;
        finish();
      });
      req.end(body);
    };
    const tick = () => {
      const now = performance.now();
      if (now - start >= duration * 1000) {
        done = true;
        finish();
        return;
      }
      while (start + due * interval <= now) {
        send();
        due++;
      }
      setTimeout(tick, Math.max(0, start + due * interval - performance.now()));
    };
    tick();
  });
}

function run(sc, duration, record, counter) {
  if (sc.rate) return paced(sc, duration, record, counter);
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
