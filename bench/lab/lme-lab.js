#!/usr/bin/env node
/**
 * LongMemEval fusion lab, step 2: re-ranks the candidates lme-collect.js kept ($LAB_DIR/lme.json)
 * from their explain signals with variants of the hybrid score, and scores them like bench/eval.js
 * (session and turn R@5 of the answerable questions, by type; answerable and abstention questions
 * answered with no row). Variant 'service' is the service's own order; 'keyword' the keyword mode's.
 * Neighbours are the turns before and after in the same session (what the service links).
 * Options: the constants (gate, penalty, floor, neighbour, cz, c1); bm25 / kwRank (the keyword
 * list's score or rank in K); parts 'max' | 'own' with partScale (decision 0164's sides);
 * diversity (what each further turn of a session pays in order) with byTime (sessions as the
 * service sees them), allow (only from the allow-th turn on), adjacent (only after a neighbour)
 * and aggOnly (only questions about a total; decision 0165). SHOW_PARTS=1, SHOW_ROWS=<id> print.
 *
 *   node bench/lab/lme-lab.js '[{"name":"no gate","gate":0}, {"name":"bm25","bm25":0.5}]'
 */
'use strict';
const fs = require('node:fs');
const LAB = process.env.LAB_DIR || '/tmp/memstore-lme-lab';
const path = require('node:path');
const ROOT = path.resolve(__dirname, '..', '..');
const { evalDir } = require('../lib/eval-dir');
const { load, haystack, questionWords } = require('../lib/lme');
const sq = require(ROOT + '/dist/libs/search-query/index.js');
const data = JSON.parse(fs.readFileSync(`${LAB}/lme.json`, 'utf8'));

// Each question's words' document frequencies over its haystack (what the adapter counts), for
// keyword signals over parts of a question (the service's own K is in explain).
const byId = new Map(load(path.join(evalDir(), 'longmemeval-s-dev.jsonl.gz')).map((q) => [q.question_id, q]));
for (const q of data) {
  const { lines, found, df } = questionWords(byId.get(q.id));
  Object.assign(q, { found, df, n: lines.length });
}
const idfOf = (q, words) => {
  const idf = new Map(words.map((w) => [w, Math.log(1 + (Math.max(q.n, q.df.get(w) ?? 0) - (q.df.get(w) ?? 0) + 0.5) / ((q.df.get(w) ?? 0) + 0.5))]));
  return { idf, max: Math.log(1 + (q.n - 1 + 0.5) / 1.5) };
};
/** K over `words` only (relevance.ts keywordSignal without phrases). */
const kOver = (q, i, words) => {
  const { idf, max } = idfOf(q, words);
  let all = 0;
  for (const v of idf.values()) all += v;
  let got = 0;
  let rarest = 0;
  for (const w of q.found[i])
    if (idf.has(w)) {
      got += idf.get(w);
      rarest = Math.max(rarest, idf.get(w));
    }
  return all > 0 ? (got / all) * (0.7 + 0.3 * Math.min(1, rarest / max)) : 0;
};
for (const q of data) q.parts = sq.comparisonSides(q.question).map((side) => Object.assign([...side.words], { own: side.own }));

const clamp01 = (x) => (x < 0 ? 0 : x > 1 ? 1 : x);
const DEFAULTS = { gate: 0.2, penalty: 0.1, floor: 0.4, neighbour: 0.5, cz: 0.55, c1: 0.85, bm25: 0, bm25Pow: 1, kwRank: 0, lenNorm: 0, partScale: 1 };

/** The variant's order of one question's hybrid candidates (turn indexes, floor applied). */
function rank(q, v) {
  const o = { ...DEFAULTS, ...v };
  if (o.name === 'service') return q.hybrid.filter((r) => r.score >= 0.4).map((r) => r.i);
  if (o.name === 'keyword') return q.keyword.map((r) => r.i);
  const kwPos = new Map(q.keyword.map((r, p) => [r.i, p]));
  const maxBm = Math.max(1e-9, ...q.keyword.map((r) => r.score));
  const bmOf = new Map(q.keyword.map((r) => [r.i, r.score / maxBm]));
  const S = (c) => (c.explain.cosine === null ? 0 : clamp01((c.explain.cosine - o.cz) / (o.c1 - o.cz)));
  const close = q.hybrid.some((c) => S(c) >= o.gate);
  const base = new Map();
  const rows = q.hybrid.map((c) => {
    let k = o.recompute ? kOver(q, c.i, [...q.df.keys()]) : c.explain.keyword;
    if (o.parts && q.parts) {
      const kp = q.parts.map((ws) => (o.parts === 'own' && !ws.own.some((w) => q.found[c.i].includes(w)) ? 0 : kOver(q, c.i, ws)));
      const covered = q.parts.every((ws) => ws.some((w) => !q.head?.has(w) && q.df.get(w) > 0));
      if (o.parts === 'max' || covered) k = Math.max(k, o.partScale * Math.max(...kp));
    }
    if (o.bm25 > 0) k = k * (1 - o.bm25 + o.bm25 * Math.pow(bmOf.get(c.i) ?? 0, o.bm25Pow));
    if (o.lenNorm > 0) k = k * Math.min(1, Math.pow(o.lenRef / q.turns[c.i].len, o.lenNorm));
    if (o.kwRank > 0 && kwPos.has(c.i)) k = 1 - (1 - k) * (1 - o.kwRank / (1 + kwPos.get(c.i)));
    const s = close ? S(c) : 0;
    let b = 1 - (1 - k) * (1 - s);
    if (!close) b -= o.penalty;
    b = clamp01(b);
    base.set(c.i, b);
    return { c, score: b };
  });
  for (const r of rows) {
    const t = q.turns[r.c.i];
    let best = 0;
    for (const n of [r.c.i - 1, r.c.i + 1]) if (q.turns[n]?.session === t.session) best = Math.max(best, base.get(n) ?? 0);
    r.score += o.neighbour * best * (1 - r.score);
  }
  rows.sort((a, b) => b.score - a.score || (b.c.explain.cosine ?? -1) - (a.c.explain.cosine ?? -1));
  const kept = rows.filter((r) => r.score >= o.floor);
  const AGG = /\b(how many|how much|in total|total|all the|all of)\b(?!\s+(?:minutes|hours|days|weeks|months|years)\b)/i;
  if (o.diversity && (!o.aggOnly || AGG.test(q.question))) {
    // A second turn of a session already shown pays o.diversity (a session's turns repeat each other).
    const seen = new Map();
    // The service's view of a session: candidates chained by at most 30 minutes between created_at (date + index s).
    const at = (i) => q.turns[i].date + (i - q.turns.findIndex((t) => t.session === q.turns[i].session)) * 1000;
    const byTime = [...kept].sort((a, b) => at(a.c.i) - at(b.c.i));
    const group = new Map();
    byTime.forEach((r, j) => group.set(r.c.i, j > 0 && at(r.c.i) - at(byTime[j - 1].c.i) <= 30 * 60_000 ? group.get(byTime[j - 1].c.i) : j));
    for (const r of kept) {
      const s = o.byTime ? group.get(r.c.i) : q.turns[r.c.i].session;
      if (o.adjacent) {
        const placed = new Set(kept.slice(0, kept.indexOf(r)).map((x) => x.c.i));
        r.adj = r.score - ([r.c.i - 1, r.c.i + 1].some((n) => placed.has(n) && q.turns[n]?.session === q.turns[r.c.i].session) ? o.diversity : 0);
        continue;
      }
      const above = seen.get(s) ?? 0;
      r.adj = r.score - (o.allow ? (above >= o.allow ? o.diversity : 0) : o.diversity * above);
      seen.set(s, (seen.get(s) ?? 0) + 1);
    }
    kept.sort((a, b) => b.adj - a.adj);
  }
  return kept.map((r) => r.c.i);
}

/** Session R@5: the share of the question's answer sessions with a turn among the first 5 rows. */
function sessionRecall5(q, got) {
  const ans = new Set(q.answerSessions);
  return (
    new Set(
      got
        .slice(0, 5)
        .filter((i) => ans.has(q.turns[i].session))
        .map((i) => q.turns[i].session),
    ).size / ans.size
  );
}

function score(v) {
  const agg = () => ({ n: 0, s5: 0, s1: 0, nt: 0, t5: 0, t1: 0, empty: 0 });
  const all = agg();
  const byType = {};
  let absN = 0;
  let absEmpty = 0;
  for (const q of data) {
    const got = rank(q, v);
    if (q.abs) {
      absN++;
      absEmpty += got.length === 0 ? 1 : 0;
      continue;
    }
    const s5 = sessionRecall5(q, got);
    const nAns = q.turns.filter((t) => t.answer).length;
    for (const a of [all, (byType[q.type] ??= agg())]) {
      a.n++;
      a.s5 += s5;
      a.s1 += got.length > 0 && q.answerSessions.includes(q.turns[got[0]].session) ? 1 : 0;
      a.empty += got.length === 0 ? 1 : 0;
      if (nAns) {
        a.nt++;
        a.t5 += got.slice(0, 5).filter((i) => q.turns[i].answer).length / nAns;
        a.t1 += (got.length > 0 && q.turns[got[0]].answer ? 1 : 0) / nAns;
      }
    }
  }
  const f = (a) => `${(a.s5 / a.n).toFixed(3)}/${(a.t5 / Math.max(1, a.nt)).toFixed(3)}`;
  const r1 = `${(all.s1 / all.n).toFixed(3)}/${(all.t1 / Math.max(1, all.nt)).toFixed(3)}`;
  return {
    all: f(all),
    r1,
    empty: `${all.empty}/${all.n}`,
    abs: `${absEmpty}/${absN}`,
    byType: Object.fromEntries(Object.entries(byType).map(([t, a]) => [t.replace('single-session-', 'ss-'), f(a)])),
  };
}

const variants = [{ name: 'service' }, { name: 'keyword' }, { name: 'lab default' }, ...JSON.parse(process.argv[2] || '[]')];
for (const v of variants) {
  const r = score(v);
  console.log(
    `${JSON.stringify(v).padEnd(50)} sess/turn R@5 ${r.all}  R@1 ${r.r1}  empty ${r.empty}  abs ${r.abs}  ${Object.entries(r.byType)
      .map(([t, x]) => `${t} ${x}`)
      .join('  ')}`,
  );
}
if (process.env.SHOW_PARTS)
  for (const q of data.filter((x) => x.parts))
    console.log(
      q.abs ? 'ABS' : '   ',
      q.id,
      q.question,
      JSON.stringify(q.parts.map((ws) => ws.map((w) => `${w}:${q.df.get(w)}`))),
      'default',
      rank(q, { name: 'x' }).length,
      'parts',
      rank(q, { name: 'x', parts: 'max' }).length,
    );
if (process.env.SHOW_ROWS) {
  const q = data.find((x) => x.id === process.env.SHOW_ROWS);
  const lines = haystack(byId.get(q.id))
    .jsonl.trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  for (const i of rank(q, { name: 'x', parts: 'max' }).slice(0, 5)) {
    const c = q.hybrid.find((r) => r.i === i);
    console.log(
      i,
      q.turns[i].answer,
      q.answerSessions.includes(q.turns[i].session),
      c.explain.keyword,
      c.explain.cosine,
      q.found[i],
      q.parts.map((ws) => kOver(q, i, ws).toFixed(3)),
      lines[i].content.slice(0, 300),
    );
  }
}
if (process.env.SHOW_MISSES) {
  const v = JSON.parse(process.env.SHOW_MISSES);
  for (const q of data.filter((x) => !x.abs)) {
    const got = rank(q, v);
    const s5 = sessionRecall5(q, got);
    if (s5 < 1)
      console.log(
        q.type.padEnd(26),
        q.id.padEnd(16),
        's5',
        s5.toFixed(2),
        'rows',
        got.length,
        'first answer at',
        got.findIndex((i) => q.answerSessions.includes(q.turns[i].session)),
        '|',
        q.question.slice(0, 100),
      );
  }
}
