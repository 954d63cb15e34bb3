'use strict';
/**
 * The built service (dist/src/main.js) started for `npm run eval` on 127.0.0.1 with a data
 * directory of its own, plus the `memstore` command-line tool on the same directory (backup,
 * restore). Inherited MEMSTORE_* variables are dropped (except the model directory), so an
 * operator's shell never points the eval at another backend.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, execFile } = require('node:child_process');
const { freePort, request: rawRequest, expectStatus: expect } = require('./http');

const ROOT = path.resolve(__dirname, '..', '..');
const ADMIN_PASSWORD = 'eval-admin-password-0123456789';
const SECRET_KEY = 'eval-secret-key-0123456789abcdef0123456789abcdef';

/**
 * A request to the service at `base` (http://127.0.0.1:PORT).
 * @param {{ body?: unknown, rawBody?: Buffer, headers?: Record<string, string> }} [opts]
 */
function request(base, method, p, opts) {
  return rawRequest(Number(new URL(base).port), method, p, opts);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The stop() of every service running now: Ctrl-C or SIGTERM stops them and removes their temp data directories. */
const running = new Set();
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    void Promise.allSettled([...running].map((stop) => stop())).then(() => process.exit(130));
  });
}

/** The environment of the service and of the command-line tool on `dataDir`. */
function serviceEnv(dataDir, embeddings) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMSTORE_') || k === 'MEMSTORE_EMBEDDING_MODEL_DIR'));
  return {
    ...env,
    NODE_ENV: 'production',
    MEMSTORE_DATA_DIR: dataDir,
    MEMSTORE_HOST: '127.0.0.1',
    MEMSTORE_ADMIN_PASSWORD: ADMIN_PASSWORD,
    MEMSTORE_SECRET_KEY: SECRET_KEY,
    MEMSTORE_LOG_LEVEL: 'error',
    // 'none': keyword-only (no vector is computed, nothing to wait for).
    ...(embeddings ? { MEMSTORE_EMBEDDING_PROVIDER: embeddings } : {}),
  };
}

/** Runs `memstore <args>` (dist/src/cli) on `dataDir`; rejects with its output when it fails. */
function cli(dataDir, args, embeddings = null) {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(ROOT, 'dist', 'src', 'cli', 'index.js'), ...args],
      { cwd: ROOT, env: serviceEnv(dataDir, embeddings), maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`memstore ${args.join(' ')} failed: ${err.message}\n${stdout}${stderr}`));
        else resolve(stdout);
      },
    );
  });
}

/**
 * Starts the service on `dataDir` (a fresh temp directory when null, removed by stop()), signs in
 * and creates a `full` token without a rate limit. `embeddings`: MEMSTORE_EMBEDDING_PROVIDER
 * ('none' for keyword-only runs) or null for the service's default. `removeDir`: stop() removes
 * `dataDir` too. `namespaces`: the token's binding (issue 43; the service's default, `default`, when null).
 * @param {{ dataDir?: string | null, embeddings?: string | null, removeDir?: boolean, namespaces?: string[] | null }} [opts]
 */
async function startService({ dataDir = null, embeddings = null, removeDir = false, namespaces = null } = {}) {
  const own = dataDir === null || removeDir;
  const dir = dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-eval-'));
  const port = await freePort();
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: { ...serviceEnv(dir, embeddings), MEMSTORE_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    running.delete(stop);
    if (proc.exitCode === null) {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r(undefined) : proc.once('exit', r)));
    }
    if (own) fs.rmSync(dir, { recursive: true, force: true });
  };
  running.add(stop);
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`the service exited (code ${proc.exitCode}):\n${output}`);
      try {
        await request(base, 'GET', '/api/health');
        break;
      } catch {
        if (Date.now() > deadline) throw new Error(`the service did not start:\n${output}`);
        await sleep(100);
      }
    }
    const res = await request(base, 'POST', '/api/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
    expect(res, 200, 'sign-in');
    const cookie = []
      .concat(res.headers['set-cookie'] || [])
      .map((c) => c.split(';')[0])
      .join('; ');
    // rate_limit_per_minute: 0 = unlimited (issue 10's token field; ignored by a service without it).
    const tok = expect(
      await request(base, 'POST', '/api/tokens', { headers: { cookie }, body: { name: 'eval', preset: 'full', rate_limit_per_minute: 0, ...(namespaces ? { namespaces } : {}) } }),
      201,
      'token',
    );
    return { base, token: tok.plaintext, dataDir: dir, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Waits until /api/status says no embedding is pending (or search is keyword-only); returns the status's embeddings. */
async function waitForEmbeddings(base, auth, maxMs = 60 * 60_000) {
  const t0 = Date.now();
  for (;;) {
    const e = expect(await request(base, 'GET', '/api/status', { headers: auth }), 200, 'status').embeddings;
    if (!e || e.state === 'keyword-only' || e.pending === 0) return e;
    if (Date.now() - t0 > maxMs) throw new Error(`embeddings still pending after ${maxMs / 60_000} min: ${JSON.stringify(e)}`);
    await sleep(1000);
  }
}

/** Whether GET /api/memories declares query parameter `name` in /openapi.json (a build that does not answers 422 to it). */
async function searchAccepts(base, name) {
  const r = await request(base, 'GET', '/openapi.json');
  const op = r.body?.paths?.['/api/memories']?.get;
  return Array.isArray(op?.parameters) && op.parameters.some((p) => p.name === name && p.in === 'query');
}

/**
 * GET /api/memories with `params`. A semantic or hybrid search whose query vector took longer than
 * the service waits for it (3 s: the model's first load, a busy machine) runs keyword-only and says
 * so in `search_mode`; that is the machine, not the ranking, so it is asked again (up to `tries`
 * times, the model then warm). Returns the answer's body and how many tries it took; the caller
 * reports `search_mode` as it came.
 * @param {string} base
 * @param {Record<string, string>} auth
 * @param {Record<string, string>} params
 */
async function search(base, auth, params, tries = 5) {
  for (let i = 1; ; i++) {
    const body = expect(await request(base, 'GET', `/api/memories?${new URLSearchParams(params)}`, { headers: auth }), 200, `search ${params.q}`);
    if (params.mode === 'keyword' || (body.search_mode ?? params.mode) === params.mode || i >= tries) return { body, tries: i };
    await sleep(500);
  }
}

module.exports = { ROOT, request, sleep, startService, waitForEmbeddings, searchAccepts, search, cli };
