#!/usr/bin/env node
/**
 * Time in the question (decision 0135), measured on the temporal questions of both dev sets
 * (../shared/eval/README.md), before and after, on one data directory:
 *
 *   node bench/lab/time-lab.js --root <a built checkout> --data-dir /tmp/time-lab [--modes keyword,hybrid] [--eval-dir ../shared/eval]
 *
 * Starts <root>/dist/src/main.js on 127.0.0.1 with the given (kept) data directory, imports the
 * haystacks of LongMemEval-S's temporal-reasoning questions (each turn one memory in project
 * lme-<question_id>, created_at = its session's date plus half a minute per turn, ids derived from
 * the turn so a second run skips them), then runs `bench/eval.js --dated` against it (LoCoMo, its
 * category 2 is temporal), waits for the embeddings, and asks each LongMemEval question verbatim
 * with query_date = its question_date. Run it with the base build's root and with this branch's on
 * the same data directory: the memories and vectors are the same, only the ranking differs (an
 * older build ignores query_date). Prints session and turn R@5 per mode, and eval.js's table.
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const zlib = require('node:zlib');
const crypto = require('node:crypto');
const { spawn, spawnSync } = require('node:child_process');
const HERE = path.resolve(__dirname, '..', '..');
const { freePort, request: rawRequest, expectStatus: expect } = require(HERE + '/bench/lib/http');

const o = {
  evalDir: evalDir(),
  root: HERE,
  dataDir: path.join(os.tmpdir(), 'memstore-time-lab'),
  modes: ['keyword', 'hybrid'],
  locomo: true,
  types: ['temporal-reasoning'],
};
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '--root') o.root = path.resolve(process.argv[++i]);
  else if (a === '--data-dir') o.dataDir = path.resolve(process.argv[++i]);
  else if (a === '--modes') o.modes = process.argv[++i].split(',');
  else if (a === '--no-locomo') o.locomo = false;
  else if (a === '--eval-dir') o.evalDir = path.resolve(process.argv[++i]);
  else if (a === '--types') o.types = process.argv[++i].split(',');
  else if (a === '--ids') o.ids = process.argv[++i].split(',');
  else if (a === '--concurrency') o.concurrency = process.argv[++i];
  else if (a === '--no-query-date')
    o.noQueryDate = true; // a build that refuses the parameter
  else throw new Error(`unknown option ${a}`);
}
const PASSWORD = 'time-lab-admin-password-0123456789';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function start() {
  fs.mkdirSync(o.dataDir, { recursive: true });
  const port = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMSTORE_')));
  const proc = spawn(process.execPath, [path.join(o.root, 'dist', 'src', 'main.js')], {
    cwd: o.root,
    env: {
      ...env,
      NODE_ENV: 'production',
      MEMSTORE_DATA_DIR: o.dataDir,
      MEMSTORE_HOST: '127.0.0.1',
      MEMSTORE_PORT: String(port),
      MEMSTORE_ADMIN_PASSWORD: PASSWORD,
      MEMSTORE_SECRET_KEY: 'time-lab-secret-key-0123456789abcdef0123456789abcd',
      MEMSTORE_LOG_LEVEL: 'error',
      MEMSTORE_IMPORT_MAX_SECONDS: '36000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const req = (m, p, opts) => rawRequest(port, m, p, opts);
  for (const deadline = Date.now() + 60_000; ; await sleep(200)) {
    if (proc.exitCode !== null) throw new Error(`the service exited:\n${output}`);
    try {
      await req('GET', '/api/health');
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`the service did not start:\n${output}`);
    }
  }
  const res = await req('POST', '/api/login', { body: { username: 'admin', password: PASSWORD } });
  const cookie = []
    .concat(res.headers['set-cookie'] || [])
    .map((c) => c.split(';')[0])
    .join('; ');
  const tok = expect(await req('POST', '/api/tokens', { headers: { cookie }, body: { name: `lab-${Date.now()}`, preset: 'full', rate_limit_per_minute: 0 } }), 201, 'token');
  return { port, base: `http://127.0.0.1:${port}`, token: tok.plaintext, req, stop: () => (proc.kill('SIGTERM'), new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)))) };
}

function importJsonl(svc, lines) {
  const http = require('node:http');
  const payload = Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return new Promise((resolve, reject) => {
    const r = http.request(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path: '/api/import?format=jsonl&on_conflict=skip',
        headers: { authorization: `Bearer ${svc.token}`, 'content-type': 'application/x-ndjson', 'content-length': payload.length },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`import: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`))));
      },
    );
    r.on('error', reject);
    r.end(payload);
  });
}

/** "2023/04/10 (Mon) 20:58" as UTC. */
const lmeDate = (s) => {
  const m = /(\d{4})\/(\d{2})\/(\d{2})\D+(\d{2}):(\d{2})/.exec(s);
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]));
};

async function main() {
  const file = path.join(o.evalDir, 'longmemeval-s-dev.jsonl.gz');
  const qs = zlib
    .gunzipSync(fs.readFileSync(file))
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((q) => (o.ids ? o.ids.includes(q.question_id) : o.types.includes(q.question_type)) && !q.question_id.endsWith('_abs'));
  const svc = await start();
  const auth = { authorization: `Bearer ${svc.token}` };
  try {
    if (o.locomo) {
      // LoCoMo via eval.js (dated): it imports, waits for the embeddings and prints its table.
      const r = spawnSync(
        process.execPath,
        [
          path.join(HERE, 'bench', 'eval.js'),
          '--url',
          svc.base,
          '--token',
          svc.token,
          '--sets',
          'locomo',
          '--dated',
          '--data',
          path.join(o.evalDir, 'locomo-dev.json'),
          '--modes',
          o.modes.join(','),
          ...(o.noQueryDate ? [] : ['--query-date']),
          ...(o.concurrency ? ['--concurrency', o.concurrency] : []),
        ],
        { stdio: 'inherit', cwd: HERE },
      );
      if (r.status !== 0) throw new Error('eval.js failed');
    }
    const where = new Map(); // memory id -> { session, answer }
    for (const q of qs) {
      const lines = [];
      q.haystack_sessions.forEach((session, s) => {
        const sid = q.haystack_session_ids[s];
        const at = lmeDate(q.haystack_dates[s]).getTime();
        session.forEach((t, i) => {
          const id = crypto.createHash('sha256').update(`lme/${q.question_id}/${sid}/${i}`).digest('hex').slice(0, 24);
          const when = new Date(at + i * 30_000).toISOString();
          where.set(id, { q: q.question_id, session: sid, answer: Boolean(t.has_answer) });
          lines.push({
            id,
            title: `${q.haystack_dates[s]} — ${t.role}`,
            content: t.content || '(empty)',
            tags: [sid],
            type: 'conversation',
            project: `lme-${q.question_id}`,
            created_at: when,
            updated_at: when,
          });
        });
      });
      if (lines.length > 0) await importJsonl(svc, lines);
    }
    console.log(`LongMemEval: ${qs.length} questions, ${where.size} turns imported`);
    for (const t0 = Date.now(); ; await sleep(2000)) {
      const e = expect(await svc.req('GET', '/api/status', { headers: auth }), 200, 'status').embeddings;
      if (!e || e.pending === 0) break;
      if ((Date.now() - t0) % 60_000 < 2000) console.log(`embeddings pending: ${e.pending}`);
    }
    console.log('\nLongMemEval-S dev, ' + o.types.join(',') + ` (${qs.length} questions), with query_date = question_date:`);
    for (const mode of o.modes) {
      let sr5 = 0;
      let tr5 = 0;
      let tn = 0;
      const per = [];
      for (const q of qs) {
        const p = new URLSearchParams({ q: q.question, project: `lme-${q.question_id}`, limit: '10', mode, ...(o.noQueryDate ? {} : { query_date: lmeDate(q.question_date).toISOString() }) });
        const body = expect(await svc.req('GET', `/api/memories?${p}`, { headers: auth }), 200, 'search');
        const top = body.rows.slice(0, 5).map((r) => where.get(r.id));
        const sessions = new Set(top.map((t) => t?.session));
        const s = q.answer_session_ids.filter((id) => sessions.has(id)).length / q.answer_session_ids.length;
        sr5 += s;
        const answers = [...where.entries()].filter(([, w]) => w.answer && w.q === q.question_id);
        let t = null;
        if (answers.length > 0) {
          const ids = new Set(body.rows.slice(0, 5).map((r) => r.id));
          t = answers.filter(([id]) => ids.has(id)).length / answers.length;
          tr5 += t;
          tn++;
        }
        per.push(`${q.question_id}: session ${s.toFixed(2)}${t === null ? '' : ` turn ${t.toFixed(2)}`}`);
      }
      console.log(`${mode.padEnd(8)} session R@5 ${(sr5 / qs.length).toFixed(3)}  turn R@5 ${(tr5 / Math.max(1, tn)).toFixed(3)} (n=${tn})`);
      console.log('   ' + per.join('\n   '));
    }
  } finally {
    await svc.stop();
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
