#!/usr/bin/env node
/**
 * A vector fixture with a realistic neighbourhood structure, for measuring the vector index's
 * recall at 100,000 and more without embedding 100,000 texts (decision record 0150).
 *
 *   node bench/lab/real-vectors.js [--sentences 25000] [--queries 512]
 *
 * 1. Real sentences: the dialogue turns of the evaluation sets in ../shared/eval (LongMemEval-S
 *    haystack sessions and LoCoMo conversations), split into sentences of 25–400 characters,
 *    deduplicated, kept in conversation order; each embedded once with the local model as a
 *    passage. Queries: the sets' questions, embedded as queries (never among the sentences).
 * 2. Cached as bench/results/real-vectors/{sentences,queries}.f32 (+ .json): git-ignored, never
 *    shipped (the data's licence allows evaluation only). A second run reuses the cache.
 *
 * `expand(fixture, n)` (used by vector-lab.js) makes n "memories" out of them: windows of 1–W
 * consecutive sentences of one session, each vector the normalised mean of its sentences' vectors
 * (a fair stand-in for embedding the window's text; consecutive windows overlap as the turns of
 * one conversation do). Unlike noisy copies of a few anchors, neighbours are then ordered by
 * meaning, with the near-duplicates and topic clusters of a real store.
 */
'use strict';
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const fs = require('node:fs');
const zlib = require('node:zlib');

const ROOT = path.resolve(__dirname, '..', '..');
const EVAL = evalDir();
const CACHE = path.join(ROOT, 'bench', 'results', 'real-vectors');

function splitSentences(text) {
  return String(text)
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+(?=[A-Z0-9"'(])/)
    .map((s) => s.trim())
    .filter((s) => s.length >= 25 && s.length <= 400);
}

/** Sentences grouped by session, in order; and the questions. */
function collect(maxSentences) {
  const seen = new Set();
  const sessions = [];
  let count = 0;
  const addSession = (turns) => {
    const out = [];
    for (const t of turns) {
      for (const s of splitSentences(t)) {
        if (seen.has(s) || count >= maxSentences) continue;
        seen.add(s);
        out.push(s);
        count++;
      }
    }
    if (out.length) sessions.push(out);
  };
  const questions = [];
  const locomo = JSON.parse(fs.readFileSync(path.join(EVAL, 'locomo-dev.json'), 'utf8'));
  for (const sample of locomo) {
    const c = sample.conversation;
    for (const k of Object.keys(c)) if (/^session_\d+$/.test(k) && Array.isArray(c[k])) addSession(c[k].map((t) => t.text));
    for (const qa of sample.qa) if (qa.question) questions.push(qa.question);
  }
  const lines = zlib
    .gunzipSync(fs.readFileSync(path.join(EVAL, 'longmemeval-s-dev.jsonl.gz')))
    .toString('utf8')
    .split('\n')
    .filter(Boolean);
  const items = lines.map((l) => JSON.parse(l));
  for (const it of items) questions.push(it.question);
  // Round-robin over the questions' haystacks so a cap keeps a spread of users and topics.
  const hay = items.map((it) => it.haystack_sessions || []);
  for (let i = 0; count < maxSentences; i++) {
    let any = false;
    for (const h of hay) {
      if (i < h.length) {
        any = true;
        addSession(h[i].map((t) => t.content));
      }
    }
    if (!any) break;
  }
  return { sessions, questions: [...new Set(questions)] };
}

function writeF32(file, vectors, meta) {
  const dims = vectors[0].length;
  const all = new Float32Array(vectors.length * dims);
  vectors.forEach((v, i) => all.set(v, i * dims));
  fs.writeFileSync(file, Buffer.from(all.buffer));
  fs.writeFileSync(file.replace(/\.f32$/, '.json'), JSON.stringify({ ...meta, count: vectors.length, dims }, null, 1));
}

function readF32(file) {
  const meta = JSON.parse(fs.readFileSync(file.replace(/\.f32$/, '.json'), 'utf8'));
  const buf = fs.readFileSync(file);
  const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  const vectors = [];
  for (let i = 0; i < meta.count; i++) vectors.push(all.subarray(i * meta.dims, (i + 1) * meta.dims));
  return { meta, vectors };
}

/** Whether the fixture is cached (a fresh clone has none until this script has run once). */
function isCached() {
  return ['sentences', 'queries'].every((f) => fs.existsSync(path.join(CACHE, `${f}.json`)) && fs.existsSync(path.join(CACHE, `${f}.f32`)));
}

/** The cached fixture: { sentences: Float32Array[], sessionOf: number[], queries: Float32Array[] }. */
function load() {
  const s = readF32(path.join(CACHE, 'sentences.f32'));
  const q = readF32(path.join(CACHE, 'queries.f32'));
  return { sentences: s.vectors, sessionOf: s.meta.sessionOf, queries: q.vectors, model: s.meta.model };
}

/** n memory vectors from windows of consecutive sentences of one session (widest window first grown until n). */
function expand(fixture, n) {
  const { sentences, sessionOf } = fixture;
  const dims = sentences[0].length;
  const out = [];
  for (let w = 1; out.length < n; w++) {
    const before = out.length;
    for (let i = 0; i + w <= sentences.length && out.length < n; i++) {
      if (sessionOf[i] !== sessionOf[i + w - 1]) continue;
      const v = new Float32Array(dims);
      for (let j = i; j < i + w; j++) for (let d = 0; d < dims; d++) v[d] += sentences[j][d];
      let norm = 0;
      for (let d = 0; d < dims; d++) norm += v[d] * v[d];
      norm = Math.sqrt(norm);
      for (let d = 0; d < dims; d++) v[d] /= norm;
      out.push(v);
    }
    if (out.length === before) throw new Error(`only ${out.length} windows from ${sentences.length} sentences`);
  }
  // Interleave the widths (a store is not sorted by memory length): a fixed shuffle.
  let s = 7;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

async function build(opts) {
  const { LocalEmbeddingProvider } = require(path.join(ROOT, 'dist/src/embeddings/local-embedding.provider.js'));
  fs.mkdirSync(CACHE, { recursive: true });
  const { sessions, questions } = collect(opts.sentences);
  const flat = [];
  const sessionOf = [];
  sessions.forEach((ss, i) => ss.forEach((s) => (flat.push(s), sessionOf.push(i))));
  const modelDir = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q');
  const provider = new LocalEmbeddingProvider(modelDir);
  const t0 = Date.now();
  const embedAll = async (texts, kind) => {
    const out = new Array(texts.length);
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < texts.length) {
        const i = next++;
        out[i] = await provider.embed(texts[i], kind, true);
        if (++done % 1000 === 0) console.error(`${kind}: ${done}/${texts.length} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      }
    };
    await Promise.all(Array.from({ length: provider.parallelism * 2 }, worker));
    return out;
  };
  const qTexts = questions.slice(0, opts.queries);
  const qv = await embedAll(qTexts, 'query');
  writeF32(path.join(CACHE, 'queries.f32'), qv, { model: provider.model, kind: 'query', texts: qTexts.length });
  const sv = await embedAll(flat, 'passage');
  writeF32(path.join(CACHE, 'sentences.f32'), sv, { model: provider.model, kind: 'passage', sessions: sessions.length, sessionOf });
  await provider.close();
  console.log(`${flat.length} sentences of ${sessions.length} sessions and ${qTexts.length} questions embedded in ${((Date.now() - t0) / 1000).toFixed(0)} s -> ${CACHE}`);
}

module.exports = { load, expand, collect, isCached };

if (require.main === module) {
  const argv = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : dflt;
  };
  if (argv.includes('--count')) {
    const c = collect(opt('--sentences', 25000));
    console.log(
      c.sessions.length,
      c.sessions.reduce((a, s) => a + s.length, 0),
      c.questions.length,
    );
  } else {
    build({ sentences: opt('--sentences', 25000), queries: opt('--queries', 512) }).catch((e) => {
      console.error(e);
      process.exitCode = 1;
    });
  }
}
