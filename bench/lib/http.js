/** HTTP helpers shared by the benchmark (run.js) and the retrieval evaluation (eval.js). */
'use strict';
const http = require('node:http');
const net = require('node:net');

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (s.address());
      s.close(() => resolve(port));
    });
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * A JSON request to the service: { status, headers, body }. A GET is retried once when a
 * kept-alive socket was closed by the server while idle (ECONNRESET / "socket hang up").
 */
/** @param {{ body?: unknown, rawBody?: Buffer, headers?: Record<string, string> }} [opts] */
async function request(port, method, urlPath, opts = {}) {
  try {
    return await requestOnce(port, method, urlPath, opts);
  } catch (e) {
    if (method !== 'GET' || !(e.code === 'ECONNRESET' || /socket hang up/.test(e.message))) throw e;
    return requestOnce(port, method, urlPath, opts);
  }
}

/**
 * @param {number} port
 * @param {string} method
 * @param {string} urlPath
 * @param {{ body?: unknown, rawBody?: Buffer, headers?: Record<string, string> }} [options]
 */
function requestOnce(port, method, urlPath, { body, rawBody, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    // rawBody: sent as it is (the caller sets content-type); body: sent as JSON.
    const payload = rawBody ?? (body === undefined ? undefined : Buffer.from(JSON.stringify(body)));
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent,
        headers: { accept: 'application/json', ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}), ...headers },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json = null;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode, headers: res.headers, body: json, text });
        });
      },
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${urlPath} timed out`)));
    if (payload) req.write(payload);
    req.end();
  });
}

function expectStatus(res, status, what) {
  if (res.status !== status) {
    throw new Error(`${what}: expected HTTP ${status}, got ${res.status}: ${res.text.slice(0, 500)}`);
  }
  return res.body;
}

module.exports = { freePort, request, requestOnce, expectStatus, agent };
