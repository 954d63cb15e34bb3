#!/usr/bin/env node
/**
 * `npm run eval`: retrieval quality on LoCoMo conversations (../shared/eval/README.md).
 *
 * Starts the built service (dist/src/main.js) on 127.0.0.1 with a fresh temp data dir (or uses
 * --url with --token), stores every dialogue turn as one memory through the API (content
 * "<speaker>: <text>" [+ " [image: <caption>]"], title "<session date> — <speaker>", tags
 * [dia_id], type conversation, project = sample_id; one turn at a time, in order), waits until /api/status says
 * embeddings.pending = 0, then asks every question of categories 1–4 verbatim as `q` with
 * project = its sample_id and limit=10 (--concurrency questions at a time, default 4), in each
 * mode (keyword, semantic, hybrid), and reports
 * R@1/5/10 (share of a question's evidence turns in the top k, averaged), Hit@1/5/10 and
 * MRR@10, overall and per category. The data is read from outside the repo and never shipped.
 *
 *   npm run eval                                 # build, then evaluate ../shared/eval/locomo-dev.json
 *   node bench/eval.js --data other.json         # another file of the same format
 *   node bench/eval.js --url http://127.0.0.1:PORT --token TOKEN   # a running service
 *   node bench/eval.js --modes hybrid --json out.json
 *   node bench/eval.js --dated      # memories dated by their session (JSONL import with created_at), and
 *                                   # each question asked with query_date = its conversation's last session
 *                                   # (--no-query-date: without it, for a build that does not know it)
 * Every run also writes bench/results/eval-<date>-<seq>.json and .md, and latest-eval.md (lib/results.js).
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { freePort, request: rawRequest, expectStatus: expect } = require('./lib/http');
const { evalMarkdown, gitDescribe, writeResults } = require('./lib/results');

const ROOT = path.resolve(__dirname, '..');
const ADMIN_PASSWORD = 'eval-admin-password-0123456789';

function args(argv) {
  const o = { data: path.resolve(ROOT, '..', 'shared', 'eval', 'locomo-dev.json'), modes: ['keyword', 'semantic', 'hybrid'], concurrency: 4, url: null, token: null, json: null, dated: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === '--data') o.data = path.resolve(v());
    else if (a === '--modes') o.modes = v().split(',');
    else if (a === '--concurrency') o.concurrency = Number(v());
    else if (a === '--url') o.url = v().replace(/\/+$/, '');
    else if (a === '--token') o.token = v();
    else if (a === '--json') o.json = v();
    else if (a === '--dated') o.dated = true;
    else if (a === '--no-query-date') o.noQueryDate = true;
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

/** A request to the service at `base` (http://127.0.0.1:PORT). */
function request(base, method, p, opts) {
  return rawRequest(Number(new URL(base).port), method, p, opts);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startService() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-eval-'));
  const port = await freePort();
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMSTORE_') || k === 'MEMSTORE_EMBEDDING_MODEL_DIR'));
  const proc = spawn(process.execPath, [path.join(ROOT, 'dist', 'src', 'main.js')], {
    cwd: ROOT,
    env: {
      ...env,
      NODE_ENV: 'production',
      MEMSTORE_DATA_DIR: dataDir,
      MEMSTORE_HOST: '127.0.0.1',
      MEMSTORE_PORT: String(port),
      MEMSTORE_ADMIN_PASSWORD: ADMIN_PASSWORD,
      MEMSTORE_SECRET_KEY: 'eval-secret-key-0123456789abcdef0123456789abcdef',
      MEMSTORE_LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
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
  const login = expect(await request(base, 'POST', '/api/login', { body: { username: 'admin', password: ADMIN_PASSWORD } }), 200, 'sign-in');
  void login;
  const res = await request(base, 'POST', '/api/login', { body: { username: 'admin', password: ADMIN_PASSWORD } });
  const cookie = []
    .concat(res.headers['set-cookie'] || [])
    .map((c) => c.split(';')[0])
    .join('; ');
  // rate_limit_per_minute: 0 = unlimited (issue 10's token field; ignored by a service without it).
  const tok = expect(await request(base, 'POST', '/api/tokens', { headers: { cookie }, body: { name: 'eval', preset: 'full', rate_limit_per_minute: 0 } }), 201, 'token');
  return {
    base,
    token: tok.plaintext,
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Evidence ids as the README says: split "a; b", fix "D:11:26" and "D30:05", drop unknown ids. */
function normaliseEvidence(ev, known) {
  const out = new Set();
  for (const raw of ev) {
    for (let id of String(raw).split(/[;,]/)) {
      id = id.trim().replace(/^D:/, 'D');
      const m = /^D(\d+):0*(\d+)$/.exec(id);
      if (!m) continue;
      id = `D${m[1]}:${m[2]}`;
      if (known.has(id)) out.add(id);
    }
  }
  return [...out];
}

function turnsOf(sample) {
  const c = sample.conversation;
  const turns = [];
  for (let n = 1; c[`session_${n}`] !== undefined || c[`session_${n + 1}`] !== undefined; n++) {
    const session = c[`session_${n}`];
    if (!Array.isArray(session)) continue;
    const date = c[`session_${n}_date_time`] ?? `session ${n}`;
    for (const t of session) {
      const content = `${t.speaker}: ${t.text}${t.blip_caption ? ` [image: ${t.blip_caption}]` : ''}`;
      turns.push({
        dia_id: t.dia_id,
        at: sessionTime(date, session.indexOf(t)),
        body: { title: `${date} — ${t.speaker}`, content, tags: [t.dia_id], type: 'conversation', project: sample.sample_id },
      });
    }
  }
  return turns;
}

/** "1:56 pm on 8 May, 2023" (LoCoMo's session dates, read as UTC) plus `i` half minutes: the turn's time (--dated); null when unreadable. */
function sessionTime(date, i) {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(String(date));
  if (!m) return null;
  const month = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'].indexOf(m[5].slice(0, 3).toLowerCase());
  const hour = (Number(m[1]) % 12) + (m[3].toLowerCase() === 'pm' ? 12 : 0);
  return month < 0 ? null : new Date(Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])) + i * 30_000);
}

/** POST /api/import of JSONL lines (--dated): the memories keep their created_at; a line whose id exists is skipped. */
function importJsonl(base, token, lines) {
  const http = require('node:http');
  const payload = Buffer.from(lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: Number(new URL(base).port),
        method: 'POST',
        path: '/api/import?format=jsonl&on_conflict=skip',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', 'content-length': payload.length },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`import: HTTP ${res.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 500)}`))));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function pool(items, n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

async function main() {
  const o = args(process.argv.slice(2));
  const started = new Date();
  const loadAvgStart = os.loadavg();
  if (!fs.existsSync(o.data)) throw new Error(`no evaluation data at ${o.data} (see ../shared/eval/README.md)`);
  const samples = JSON.parse(fs.readFileSync(o.data, 'utf8'));
  const svc = o.url ? { base: o.url, token: o.token, stop: async () => {} } : await startService();
  const auth = { authorization: `Bearer ${svc.token}` };
  try {
    const status0 = expect(await request(svc.base, 'GET', '/api/status', { headers: auth }), 200, 'status').embeddings;
    console.log(`embeddings: ${status0 ? `${status0.provider} ${status0.model ?? ''} (${status0.state})` : 'not reported'}`);
    // 1. Store every turn.
    const idToDia = new Map();
    const questions = [];
    let stored = 0;
    const t0 = Date.now();
    // One turn after another, in order, as an agent in a conversation writes them: the embedded
    // text carries the previous memory of the session, and keyword ranking reads each term's newest
    // matches first, so writes in flight together would change vectors and ranks from run to run.
    for (const s of samples) {
      const turns = turnsOf(s);
      if (o.dated) {
        // Ids derived from the turn, so a second run against the same service skips what is there.
        const idOf = (t) => require('node:crypto').createHash('sha256').update(`locomo/${s.sample_id}/${t.dia_id}`).digest('hex').slice(0, 24);
        await importJsonl(
          svc.base,
          svc.token,
          turns.map((t) => ({ id: idOf(t), ...t.body, created_at: t.at.toISOString(), updated_at: t.at.toISOString() })),
        );
        for (const t of turns) idToDia.set(idOf(t), `${s.sample_id}/${t.dia_id}`);
        stored += turns.length;
      }
      for (const t of o.dated ? [] : turns) {
        const r = expect(await request(svc.base, 'POST', '/api/memories', { headers: auth, body: t.body }), 201, `store ${s.sample_id} ${t.dia_id}`);
        idToDia.set(r.memory.id, `${s.sample_id}/${t.dia_id}`);
        stored++;
      }
      /** @type {Date | null} */
      let lastSession = null;
      for (const t of turns) if (t.at && (!lastSession || t.at > lastSession)) lastSession = t.at;
      const known = new Set(turns.map((t) => t.dia_id));
      for (const q of s.qa) {
        if (![1, 2, 3, 4].includes(Number(q.category))) continue;
        const evidence = normaliseEvidence(q.evidence ?? [], known).map((d) => `${s.sample_id}/${d}`);
        if (evidence.length === 0) continue;
        questions.push({ sample: s.sample_id, q: q.question, category: Number(q.category), evidence, date: o.dated && !o.noQueryDate && lastSession ? lastSession.toISOString() : undefined });
      }
    }
    console.log(`stored ${stored} turns in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${questions.length} questions (categories 1-4 with evidence)`);
    // 2. Wait for the embeddings.
    const t1 = Date.now();
    for (;;) {
      const e = expect(await request(svc.base, 'GET', '/api/status', { headers: auth }), 200, 'status').embeddings;
      if (!e || e.state === 'keyword-only' || e.pending === 0) break;
      if (Date.now() - t1 > 30 * 60_000) throw new Error(`embeddings still pending after 30 min: ${JSON.stringify(e)}`);
      await sleep(1000);
    }
    console.log(`embeddings done ${((Date.now() - t1) / 1000).toFixed(1)} s after the last write (${((stored / Math.max(1, Date.now() - t0)) * 1000).toFixed(0)} memories/s stored and embedded)`);
    // 3. Ask.
    const report = {};
    for (const mode of o.modes) {
      const per = [];
      await pool(questions, o.concurrency, async (q, i) => {
        const qs = new URLSearchParams({ q: q.q, project: q.sample, limit: '10', mode, ...(q.date ? { query_date: q.date } : {}) });
        const body = expect(await request(svc.base, 'GET', `/api/memories?${qs}`, { headers: auth }), 200, `search ${q.q}`);
        const got = body.rows.map((r) => idToDia.get(r.id));
        per[i] = { q, got, ran: body.search_mode ?? 'keyword' };
      });
      report[mode] = score(per);
      report[mode].ran = [...new Set(per.map((p) => p.ran))].join(',');
    }
    print(report);
    if (o.json) fs.writeFileSync(o.json, JSON.stringify(report, null, 2));
    const meta = {
      startedAt: started.toISOString(),
      finishedAt: new Date().toISOString(),
      commit: o.url ? `a running service at ${o.url}` : gitDescribe(),
      loadAvgStart,
      loadAvgEnd: os.loadavg(),
      data: path.relative(ROOT, o.data).startsWith('../..') ? o.data : path.relative(ROOT, o.data),
      questions: questions.length,
      embeddings: status0 ?? null,
    };
    const written = writeResults('eval', started, { ...meta, modes: report }, evalMarkdown(report, meta));
    console.log(`\nResults: ${path.relative(ROOT, written.mdFile)} (also ${path.relative(ROOT, written.latest)}), ${path.relative(ROOT, written.jsonFile)}`);
  } finally {
    await svc.stop();
  }
}

function score(per) {
  const agg = () => ({ n: 0, r1: 0, r5: 0, r10: 0, h1: 0, h5: 0, h10: 0, mrr: 0 });
  const all = agg();
  const byCat = {};
  for (const { q, got } of per) {
    const ev = new Set(q.evidence);
    const rec = (k) => got.slice(0, k).filter((g) => ev.has(g)).length / ev.size;
    const hit = (k) => (got.slice(0, k).some((g) => ev.has(g)) ? 1 : 0);
    const first = got.findIndex((g) => ev.has(g));
    for (const a of [all, (byCat[q.category] ??= agg())]) {
      a.n++;
      a.r1 += rec(1);
      a.r5 += rec(5);
      a.r10 += rec(10);
      a.h1 += hit(1);
      a.h5 += hit(5);
      a.h10 += hit(10);
      a.mrr += first >= 0 && first < 10 ? 1 / (first + 1) : 0;
    }
  }
  const fin = (a) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, k === 'n' ? v : Number((v / Math.max(1, a.n)).toFixed(3))]));
  return { ...fin(all), byCategory: Object.fromEntries(Object.entries(byCat).map(([k, v]) => [k, fin(v)])) };
}

function print(report) {
  console.log('\nmode      ran       n    R@1    R@5    R@10   Hit@1  Hit@5  Hit@10 MRR@10');
  for (const [mode, r] of Object.entries(report)) {
    const f = (v) => v.toFixed(3).padStart(6);
    console.log(`${mode.padEnd(9)} ${String(r.ran).padEnd(9)} ${String(r.n).padStart(3)} ${f(r.r1)} ${f(r.r5)} ${f(r.r10)} ${f(r.h1)} ${f(r.h5)} ${f(r.h10)} ${f(r.mrr)}`);
  }
  console.log('\nR@5 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):');
  for (const [mode, r] of Object.entries(report)) {
    console.log(
      `${mode.padEnd(9)} ${Object.entries(r.byCategory)
        .map(([c, v]) => `${c}: ${v.r5.toFixed(3)} (n=${v.n})`)
        .join('  ')}`,
    );
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
