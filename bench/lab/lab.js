'use strict';
/** Offline fusion lab, step 2: ranks the collected lists with fusion variants (options below) and scores them like bench/eval.js. */
const LAB = process.env.LAB_DIR || '/tmp/memstore-lab';
const fs = require('node:fs');
const { turns, questions } = JSON.parse(fs.readFileSync(LAB + '/base.json', 'utf8'));
const kw = JSON.parse(fs.readFileSync(LAB + '/keyword.json', 'utf8'));
const D = 384;
const load = (f) => {
  const b = fs.readFileSync(f);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};
const docs = { titleContent: load(LAB + '/doc-titleContent.bin'), content: load(LAB + '/doc-content.bin') };
const qv = { prefix: load(LAB + '/qPrefix.bin'), plain: load(LAB + '/qPlain.bin') };
{
  const a = qv.prefix,
    b = qv.plain,
    m = new Float32Array(a.length);
  for (let i = 0; i < a.length; i += D) {
    let n = 0;
    for (let j = 0; j < D; j++) {
      m[i + j] = a[i + j] + b[i + j];
      n += m[i + j] ** 2;
    }
    n = Math.sqrt(n);
    for (let j = 0; j < D; j++) m[i + j] /= n;
  }
  qv.avg = m;
}
for (const extra of ['contentTitle', 'ctxAfter']) if (fs.existsSync(`${LAB}/doc-${extra}.bin`)) docs[extra] = load(`${LAB}/doc-${extra}.bin`);
// global index of each turn
const gidx = {};
let g = 0;
const samples = Object.keys(turns);
for (const s of samples) {
  gidx[s] = new Map();
  turns[s].forEach((t, i) => gidx[s].set(t.dia_id, { g: g++, i }));
}
const dot = (a, ao, b, bo) => {
  let x = 0;
  for (let j = 0; j < D; j++) x += a[ao + j] * b[bo + j];
  return x;
};
// precompute cosines per question per variant
const cos = {};
for (const dv of Object.keys(docs))
  for (const qk of Object.keys(qv)) {
    const key = dv + '/' + qk;
    cos[key] = questions.map((q, qi) => {
      const m = new Map();
      for (const t of turns[q.sample]) {
        const x = gidx[q.sample].get(t.dia_id);
        m.set(t.dia_id, dot(docs[dv], x.g * D, qv[qk], qi * D));
      }
      return m;
    });
  }
function rank(qi, o) {
  const q = questions[qi];
  const K = o.K ?? 50;
  const c = cos[o.emb ?? 'titleContent/prefix'][qi];
  const kwl = kw[qi].slice(0, K);
  const kwScore = new Map(kwl);
  const kwRank = new Map(kwl.map(([d], r) => [d, r]));
  const sem = [...c.entries()].sort((a, b) => b[1] - a[1]).slice(0, o.Ks ?? K);
  const semRank = new Map(sem.map(([d], r) => [d, r]));
  const cand = new Set([...kwl.map((x) => x[0]), ...sem.map((x) => x[0])]);
  const arr = [...cand];
  const kv = arr.filter((d) => kwScore.has(d)).map((d) => kwScore.get(d));
  const cv = arr.map((d) => c.get(d));
  const mm = (v, xs) => {
    const lo = Math.min(...xs),
      hi = Math.max(...xs);
    return hi - lo > 1e-9 ? (v - lo) / (hi - lo) : 1;
  };
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = (xs) => {
    const m = mean(xs);
    return Math.sqrt(mean(xs.map((x) => (x - m) ** 2))) || 1;
  };
  const kMean = kv.length ? mean(kv) : 0,
    kSd = kv.length ? sd(kv) : 1,
    cMean = mean(cv),
    cSd = sd(cv);
  const kMax = kv.length ? Math.max(...kv) : 0;
  const base = new Map();
  for (const d of arr) {
    let s;
    const wk = o.wk ?? 0.4,
      ws = 1 - wk;
    if (o.norm === 'z') {
      const kz = kwScore.has(d) ? (kwScore.get(d) - kMean) / kSd : (o.zMiss ?? (kv.length ? (Math.min(...kv) - kMean) / kSd : 0));
      s = wk * kz + (ws * (c.get(d) - cMean)) / cSd;
    } else if (o.norm === 'rrf') {
      const k = o.k ?? 60;
      s = wk * (kwRank.has(d) ? 1 / (k + kwRank.get(d)) : 0) + ws * (semRank.has(d) ? 1 / (k + semRank.get(d)) : 0);
    } else if (o.norm === 'mix') {
      // convex mix of min-max and rank (RRF scaled to [0,1])
      const k = o.k ?? 60;
      const mmS = wk * (kwScore.has(d) ? mm(kwScore.get(d), kv) : 0) + ws * mm(c.get(d), cv);
      const rr = (r) => (r === undefined ? 0 : (k + 1) / (k + 1 + r)); // 1 at top
      const rS = wk * rr(kwRank.get(d)) + ws * rr(semRank.get(d));
      s = (1 - o.mix) * mmS + o.mix * rS;
    } else if (o.norm === 'maxnorm') {
      // keyword / best keyword, cosine raw min-max
      s = wk * (kwScore.has(d) ? kwScore.get(d) / kMax : 0) + ws * mm(c.get(d), cv);
    } else {
      s = wk * (kwScore.has(d) ? mm(kwScore.get(d), kv) : 0) + ws * mm(c.get(d), cv);
    }
    if (o.mnz) s *= 1 + o.mnz * ((kwScore.has(d) ? 1 : 0) + (semRank.has(d) ? 1 : 0) - 1);
    if (o.pow) s = (kwScore.has(d) ? mm(kwScore.get(d), kv) : 0) ** wk * Math.max(1e-3, mm(c.get(d), cv)) ** ws + 1e-3 * s;
    base.set(d, s);
  }
  const ts = turns[q.sample];
  const out = [];
  for (const d of arr) {
    let s = base.get(d);
    const nw = o.nw ?? 0.25;
    if (nw) {
      const i = gidx[q.sample].get(d).i;
      let best = 0;
      let sum = 0;
      let n = 0;
      if (o.nwPrev !== undefined) {
        const side = (j) => (j >= 0 && j < ts.length ? (base.get(ts[j].dia_id) ?? 0) : 0);
        s += o.nwPrev * side(i - 1) + o.nwNext * side(i + 1);
        out.push([d, s, i]);
        continue;
      }
      for (const j of o.sameSession ? [i - 1, i + 1].filter((j) => j >= 0 && j < ts.length && ts[j].session === ts[i].session) : [i - 1, i + 1].filter((j) => j >= 0 && j < ts.length)) {
        let b = base.get(ts[j].dia_id);
        if (b === undefined && o.nbAll) b = (1 - (o.wk ?? 0.4)) * Math.max(0, mm(c.get(ts[j].dia_id), cv));
        if (b !== undefined) {
          best = o.nbSum ? best + b / 2 : Math.max(best, b);
        }
      }
      if (o.norm === 'z') best = best; // (z can be negative; keep max over present)
      s += nw * best;
    }
    out.push([d, s, gidx[q.sample].get(d).i]);
  }
  out.sort((a, b) => b[1] - a[1] || b[2] - a[2]);
  return out.slice(0, 10).map((x) => x[0]);
}
function score(o, filter = () => true) {
  const a = { n: 0, r1: 0, r5: 0, r10: 0, h5: 0, mrr: 0 };
  questions.forEach((q, qi) => {
    if (!filter(q)) return;
    const got =
      o.mode === 'keyword'
        ? kw[qi].slice(0, 10).map((x) => x[0])
        : o.mode === 'semantic'
          ? [...cos[o.emb ?? 'titleContent/prefix'][qi].entries()]
              .sort((x, y) => y[1] - x[1])
              .slice(0, 10)
              .map((x) => x[0])
          : rank(qi, o);
    const ev = new Set(q.evidence);
    const rec = (k) => got.slice(0, k).filter((x) => ev.has(x)).length / ev.size;
    const first = got.findIndex((x) => ev.has(x));
    a.n++;
    a.r1 += rec(1);
    a.r5 += rec(5);
    a.r10 += rec(10);
    a.h5 += got.slice(0, 5).some((x) => ev.has(x)) ? 1 : 0;
    a.mrr += first >= 0 ? 1 / (first + 1) : 0;
  });
  for (const k of Object.keys(a)) if (k !== 'n') a[k] = +(a[k] / a.n).toFixed(3);
  return a;
}
module.exports = { score, samples, questions };
if (require.main === module) {
  const f = (o) => {
    const r = score(o);
    return `R@1 ${r.r1} R@5 ${r.r5} R@10 ${r.r10} Hit@5 ${r.h5} MRR ${r.mrr}`;
  };
  const exps = JSON.parse(process.argv[2]);
  for (const e of exps) console.log(JSON.stringify(e).padEnd(70), f(e));
}
