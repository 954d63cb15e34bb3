#!/usr/bin/env node
/**
 * Offline fusion lab, step 1 (bench/README.md "Retrieval quality"): stores every LoCoMo turn in a
 * keyword-only service (dist/, sequentially, so creation order = turn order), keeps each
 * question's keyword list (limit 100, with scores), and embeds every turn in each text variant
 * below and every question with and without bge's query prefix, with the local model. Output:
 * $LAB_DIR (default /tmp/memstore-lab). Then `node bench/lab/lab.js '[{...}]'`, `cv.js`, `perconv.js`.
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const { turnsOf, normaliseEvidence } = require('../lib/locomo');
const ROOT = path.resolve(__dirname, '..', '..');
const LAB = process.env.LAB_DIR || '/tmp/memstore-lab';
fs.mkdirSync(LAB, { recursive: true });
process.chdir(ROOT);
const { freePort, request: rawRequest, expectStatus: expect } = require(ROOT + '/bench/lib/http');
const { spawn } = require('node:child_process');
const os = require('node:os');
const data = JSON.parse(fs.readFileSync(process.argv[2] || path.join(evalDir(), 'locomo-dev.json'), 'utf8'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function main() {
  const turns = {};
  const questions = [];
  for (const s of data) {
    turns[s.sample_id] = turnsOf(s);
    const known = new Set(turns[s.sample_id].map((t) => t.dia_id));
    for (const q of s.qa) {
      if (![1, 2, 3, 4].includes(Number(q.category))) continue;
      const ev = normaliseEvidence(q.evidence ?? [], known);
      if (!ev.length) continue;
      questions.push({ sample: s.sample_id, q: q.question, category: Number(q.category), evidence: ev });
    }
  }
  fs.writeFileSync(LAB + '/base.json', JSON.stringify({ turns, questions }));
  if (!fs.existsSync(LAB + '/keyword.json')) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-lab-'));
    const port = await freePort();
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MEMSTORE_')));
    const PW = 'eval-admin-password-0123456789';
    const proc = spawn(process.execPath, ['dist/src/main.js'], {
      env: {
        ...env,
        NODE_ENV: 'production',
        MEMSTORE_DATA_DIR: dataDir,
        MEMSTORE_HOST: '127.0.0.1',
        MEMSTORE_PORT: String(port),
        MEMSTORE_ADMIN_PASSWORD: PW,
        MEMSTORE_SECRET_KEY: 'eval-secret-key-0123456789abcdef0123456789abcdef',
        MEMSTORE_LOG_LEVEL: 'error',
        MEMSTORE_EMBEDDING_MODEL_DIR: '/nonexistent',
      },
      stdio: 'ignore',
    });
    try {
      for (;;) {
        try {
          await rawRequest(port, 'GET', '/api/health');
          break;
        } catch {
          await sleep(200);
        }
      }
      const res = await rawRequest(port, 'POST', '/api/login', { body: { username: 'admin', password: PW } });
      const cookie = []
        .concat(res.headers['set-cookie'] || [])
        .map((c) => c.split(';')[0])
        .join('; ');
      const tok = expect(await rawRequest(port, 'POST', '/api/tokens', { headers: { cookie }, body: { name: 'eval', preset: 'full', rate_limit_per_minute: 0 } }), 201, 'token');
      const auth = { authorization: `Bearer ${tok.plaintext}` };
      const idTo = new Map();
      for (const s of data)
        for (const t of turns[s.sample_id]) {
          // sequential: created order = turn order
          const r = expect(
            await rawRequest(port, 'POST', '/api/memories', { headers: auth, body: { title: t.title, content: t.content, tags: [t.dia_id], type: 'conversation', project: s.sample_id } }),
            201,
            'store',
          );
          idTo.set(r.memory.id, t.dia_id);
        }
      const kw = [];
      for (const q of questions) {
        const qs = new URLSearchParams({ q: q.q, project: q.sample, limit: '100', mode: 'keyword' });
        const body = expect(await rawRequest(port, 'GET', `/api/memories?${qs}`, { headers: auth }), 200, 'search');
        kw.push(body.rows.map((r) => [idTo.get(r.id), r.score]));
      }
      fs.writeFileSync(LAB + '/keyword.json', JSON.stringify(kw));
      console.log('keyword lists done');
    } finally {
      proc.kill('SIGTERM');
    }
  }
  const { LocalEmbeddingProvider } = require(ROOT + '/dist/src/embeddings/local-embedding.provider.js');
  const p = new LocalEmbeddingProvider(ROOT + '/models/bge-small-en-v1.5-q');
  const variants = {
    titleContent: (t) => `${t.title}\n${t.content}`,
    content: (t) => t.content,
    contentTitle: (t) => `${t.content}\n${t.title}`,
    // The previous turn of the same LoCoMo session (the service: the previous memory of the same project/agent within 30 min).
    ctxAfter: (t, i, ts) => `${t.content}\n${t.title}` + (i > 0 && ts[i - 1].session === t.session ? `\n${ts[i - 1].content.slice(0, 500)}` : ''),
  };
  for (const [name, f] of Object.entries(variants)) {
    const file = `${LAB}/doc-${name}.bin`;
    if (fs.existsSync(file)) continue;
    const all = [];
    const t0 = Date.now();
    for (const s of data) {
      const ts = turns[s.sample_id];
      for (let i = 0; i < ts.length; i++) all.push(await p.embed(f(ts[i], i, ts), 'document'));
    }
    const buf = new Float32Array(all.length * 384);
    all.forEach((v, i) => buf.set(v, i * 384));
    fs.writeFileSync(file, Buffer.from(buf.buffer));
    console.log(name, (Date.now() - t0) / 1000, 's');
  }
  for (const [name, kind] of [
    ['qPrefix', 'query'],
    ['qPlain', 'document'],
  ]) {
    const file = `${LAB}/${name}.bin`;
    if (fs.existsSync(file)) continue;
    const buf = new Float32Array(questions.length * 384);
    for (let i = 0; i < questions.length; i++) buf.set(await p.embed(questions[i].q, kind), i * 384);
    fs.writeFileSync(file, Buffer.from(buf.buffer));
    console.log(name);
  }
  await p.close();
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
