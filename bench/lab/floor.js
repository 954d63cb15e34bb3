#!/usr/bin/env node
/**
 * Relevance floor lab (decision 0121): LoCoMo dev recall@5 kept against the share of empty
 * answers on queries about absent things (unrelated ones, and the eval's conversation-bound ones
 * of bench/locomo-absent.json), at several floors, with the service's own ranking step
 * (dist/src/memories/search/relevance.js) over candidates built the way the adapters build them
 * (best 50 by keyword match, best 50 by cosine, session neighbours; df over the whole store).
 * Embeddings are cached in $LAB_DIR (default /tmp/memstore-floor-lab); $MODEL_DIR picks another
 * local model (give it its own LAB_DIR; its model.json's cosine scale, if any, replaces COSINE_ZERO
 * and COSINE_ONE). Variants of RELEVANCE's constants as a JSON list.
 * Needs `npm run build`.
 *
 *   node bench/lab/floor.js ['[{"MEANING_GATE":0},{"FLOOR":0.45}]'] [--json out.json]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const { turnsOf, normaliseEvidence } = require('../lib/locomo');
const ROOT = path.resolve(__dirname, '..', '..');
const LAB = process.env.LAB_DIR || '/tmp/memstore-floor-lab';
fs.mkdirSync(LAB, { recursive: true });
const data = JSON.parse(fs.readFileSync(path.join(evalDir(), 'locomo-dev.json'), 'utf8'));
const absent = require('./absent-queries.json');
const { termMatcher, parseSearchQuery, matchWords, memoryEmbeddingText } = require(ROOT + '/dist/libs/search-query/index.js');
const rel = require(ROOT + '/dist/src/memories/search/relevance.js');

async function embedAll(file, texts, kind, p) {
  if (fs.existsSync(file)) return new Float32Array(fs.readFileSync(file).buffer.slice(0));
  const buf = new Float32Array(texts.length * 384);
  for (let i = 0; i < texts.length; i++) buf.set(await p.embed(texts[i], kind), i * 384);
  fs.writeFileSync(file, Buffer.from(buf.buffer));
  return buf;
}
const dot = (a, ai, b, bi) => {
  let s = 0;
  for (let k = 0; k < 384; k++) s += a[ai * 384 + k] * b[bi * 384 + k];
  return s;
};

async function main() {
  const jsonOut = process.argv.indexOf('--json') > 0 ? process.argv[process.argv.indexOf('--json') + 1] : null;
  const samples = data.map((s) => ({ id: s.sample_id, turns: turnsOf(s) }));
  const all = samples.flatMap((s, si) => s.turns.map((t, i) => ({ ...t, si, i, prev: i > 0 ? s.turns[i - 1].content : null })));
  const questions = [];
  for (const [si, s] of data.entries()) {
    const known = new Set(samples[si].turns.map((t) => t.dia_id));
    for (const q of s.qa)
      if ([1, 2, 3, 4].includes(Number(q.category))) {
        const ev = normaliseEvidence(q.evidence ?? [], known);
        if (ev.length) questions.push({ si, q: q.question, ev });
      }
  }
  const { LocalEmbeddingProvider } = require(ROOT + '/dist/src/embeddings/local-embedding.provider.js');
  const p = new LocalEmbeddingProvider(process.env.MODEL_DIR || ROOT + '/models/bge-small-en-v1.5-q');
  const docV = await embedAll(
    `${LAB}/docs.bin`,
    all.map((t) => memoryEmbeddingText(t.title, t.content, t.prev)),
    'document',
    p,
  );
  const qV = await embedAll(
    `${LAB}/questions.bin`,
    questions.map((q) => q.q.replace(/"/g, ' ')),
    'query',
    p,
  );
  const aV = await embedAll(`${LAB}/absent.bin`, absent, 'query', p);
  // The eval's absent-thing questions (bench/locomo-absent.json): each written against one
  // conversation and sharing its names, so harder than the unrelated ones above.
  const evalAbsent = require('../locomo-absent.json').questions;
  const eV = await embedAll(
    `${LAB}/absent-eval.bin`,
    evalAbsent.map((q) => q.question),
    'query',
    p,
  );
  // A model that states its cosine scale (model.json, decision 0172) is ranked by it, as the service does.
  const scale = p.cosineScale;
  await p.close();

  const offsets = [];
  let o = 0;
  for (const s of samples) (offsets.push(o), (o += s.turns.length));

  /** Candidates of one query in sample si, as an adapter builds them. */
  // Each turn's words once; a word's document count over the whole store once (memoised).
  const { lightStem, foldAccents, splitWords } = require(ROOT + '/dist/libs/search-query/index.js');
  const tokens = all.map((t) => splitWords(foldAccents(`${t.title}\n${t.dia_id}\n${t.content}`)));
  const dfMemo = new Map();
  const dfOf = (w) => {
    if (!dfMemo.has(w)) {
      const s = lightStem(w);
      dfMemo.set(w, tokens.filter((ts) => ts.some((x) => x.startsWith(s))).length);
    }
    return dfMemo.get(w);
  };
  function candidates(text, vecs, vi, si) {
    const match = termMatcher(text);
    const words = matchWords(parseSearchQuery(text));
    const df = words.map((w) => [w, dfOf(w)]);
    const matches = [];
    for (let i = 0; i < samples[si].turns.length; i++) {
      const t = all[offsets[si] + i];
      matches[offsets[si] + i] = match(t.title, [t.dia_id], t.content);
    }
    const base = offsets[si];
    const n = samples[si].turns.length;
    const cos = [];
    for (let i = 0; i < n; i++) cos.push(dot(docV, base + i, vecs, vi));
    const idx = [...Array(n).keys()];
    const byCos = [...idx].sort((a, b) => cos[b] - cos[a]).slice(0, 50);
    const kwScore = (i) => matches[base + i].words.length;
    const byKw = idx
      .filter((i) => kwScore(i) > 0)
      .sort((a, b) => kwScore(b) - kwScore(a) || b - a)
      .slice(0, 50);
    const set = new Map();
    for (const i of byKw) set.set(i, { kw: kwScore(i) });
    for (const i of byCos) set.set(i, { ...(set.get(i) ?? {}), sem: true });
    const list = [...set.entries()].map(([i, v]) => ({
      row: { id: samples[si].turns[i].dia_id, type: 'conversation', createdAt: new Date(1e12 + i * 1000) },
      length: samples[si].turns[i].content.length,
      cosine: cos[i],
      semantic: !!v.sem,
      keyword: v.kw,
      words: matches[base + i].words,
      phrases: matches[base + i].phrases,
      neighbours: [i - 1, i + 1].filter((j) => set.has(j)).map((j) => samples[si].turns[j].dia_id),
    }));
    return { list, docs: all.length, df };
  }

  // Candidate sets once; each variant of the constants (argv JSON list) ranks them all.
  const setsQ = questions.map((q, qi) => candidates(q.q, qV, qi, q.si));
  const setsA = absent.flatMap((a, ai) => samples.map((_, si) => candidates(a, aV, ai, si)));
  const setsE = evalAbsent.map((q, i) =>
    candidates(
      q.question,
      eV,
      i,
      samples.findIndex((s) => s.id === q.sample_id),
    ),
  );
  const pct = (xs, p) => [...xs].sort((x, y) => x - y)[Math.floor(p * (xs.length - 1))].toFixed(3);
  const maxCos = (sets) => sets.map((s) => Math.max(...s.list.map((c) => c.cosine)));
  const evCos = setsQ.flatMap((s, qi) => s.list.filter((c) => questions[qi].ev.includes(c.row.id)).map((c) => c.cosine));
  console.log('max cosine, absent queries: p50', pct(maxCos(setsA), 0.5), 'p90', pct(maxCos(setsA), 0.9), 'max', pct(maxCos(setsA), 1));
  console.log('max cosine, dev questions: p10', pct(maxCos(setsQ), 0.1), 'p50', pct(maxCos(setsQ), 0.5));
  console.log('evidence turn cosine (when a candidate): p10', pct(evCos, 0.1), 'p25', pct(evCos, 0.25), 'p50', pct(evCos, 0.5));
  const floors = [0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5];
  const variants = process.argv[2] && !process.argv[2].startsWith('--') ? JSON.parse(process.argv[2]) : [{}];
  const defaults = { ...rel.RELEVANCE };
  const out = [];
  for (const v of variants) {
    Object.assign(rel.RELEVANCE, defaults, v);
    const rank = async (sets, texts, mode) => {
      const r = [];
      for (const [i, s] of sets.entries()) r.push((await rel.rankCandidates(s, { mode, text: texts(i), floor: 0, scale })).rows);
      return r;
    };
    const ranksQ = await rank(setsQ, (i) => questions[i].q, 'hybrid');
    const ranksSQ = await rank(setsQ, (i) => questions[i].q, 'semantic');
    const ranksA = await rank(setsA, (i) => absent[Math.floor(i / samples.length)], 'hybrid');
    const ranksS = await rank(setsA, (i) => absent[Math.floor(i / samples.length)], 'semantic');
    const ranksE = await rank(setsE, (i) => evalAbsent[i].question, 'hybrid');
    const curve = floors.map((f) => {
      const r5 = (ranks) =>
        ranks.reduce((sum, r, qi) => {
          const top = r
            .filter((x) => x.score >= f)
            .slice(0, 5)
            .map((x) => x.row.id);
          return sum + questions[qi].ev.filter((e) => top.includes(e)).length / questions[qi].ev.length;
        }, 0) / questions.length;
      const empty = (ranks) => ranks.filter((r) => !r.some((x) => x.score >= f)).length / ranks.length;
      return {
        floor: f,
        hybridR5: +r5(ranksQ).toFixed(3),
        hybridAbsentEmpty: +empty(ranksA).toFixed(3),
        evalAbsentEmpty: +empty(ranksE).toFixed(3),
        devEmpty: +empty(ranksQ).toFixed(3),
        semanticR5: +r5(ranksSQ).toFixed(3),
        semanticAbsentEmpty: +empty(ranksS).toFixed(3),
      };
    });
    console.log(JSON.stringify(v));
    console.table(curve);
    out.push({ params: { ...rel.RELEVANCE }, curve });
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 1));
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
