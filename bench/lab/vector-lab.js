#!/usr/bin/env node
/**
 * The vector index alone (src/backends/vector/vector-index.ts, usearch HNSW): recall@k against an
 * exact scan, per-query latency, build/save/load time, file size and RSS, for several parameter
 * sets in one run (ratios on a shared machine). Decision record 0150. Needs `npm run build` and
 * the fixture of bench/lab/real-vectors.js.
 *
 *   node bench/lab/vector-lab.js --n 100000 [--fixture real|noisy|store --data-dir DIR] [--m 16,32] [--ef-add 128]
 *        [--ef 64,128,256] [--queries 512] [--k 10] [--out bench/results/vector-lab-<n>.json]
 *        [--exact-max 20000,0] [--filter 10 [--filter-kind mod|block]] [--scalar f16,i8,f32] [--tie 0.001,0.01]
 *
 * Fixtures: `real` = windows of real sentence embeddings (real-vectors.js expand()); `noisy` =
 * what the bench's fill-vectors.js makes (300 real vectors, each other vector one of them plus
 * Gaussian noise at cosine ~0.85), to compare the two on the same queries; `store` = the stored
 * vectors of a bench data dir (`--data-dir`, at most `--n`) with the bench's own search texts as
 * queries (`--queries` of each kind; what bench/vector-recall.js measures, decision record 0168).
 * Queries otherwise: real questions embedded as queries (never in the data). Exact truth: usearch's
 * exactSearch (SIMD, all cores). Each graph is built once per (m, ef-add) as the service builds
 * one (BUILD_CHUNK at a time, every core), saved, and loaded back with each search expansion (the
 * library fixes it at construction).
 * `--exact-max`: loaded with each of these exact-scan limits too (decision record 0159; 0 = the
 * graph always; default the library's EXACT_MAX). `--filter G`: also the recall of a filtered
 * search (query i keeps the labels of group i mod G: `mod` = every G-th label, a filter spread
 * over the store; `block` = the G-th part of the store in order, whole conversations, as a
 * namespace holds), against an exact scan of that group. `--scalar f16,i8,f32`: the graph's vectors
 * (decision record 0167; default the library's). `--tie E,…`: recall counting a hit whose
 * exact score is within E of the exact k-th best (dense fixtures have many near-ties at rank k).
 */
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');

const ROOT = path.resolve(__dirname, '..', '..');
const { VectorIndex, BUILD_CHUNK, EXACT_MAX, GRAPH_SCALAR, dot } = require(path.join(ROOT, 'dist/src/backends/vector/vector-index.js'));
const { exactSearch, MetricKind } = require('usearch');
const fixture = require('./real-vectors');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const list = (s) => String(s).split(',').map(Number);
const kind = opt('--fixture', 'real');
let n = Number(opt('--n', kind === 'store' ? Infinity : 100000));
const ms = list(opt('--m', '16'));
const efAdds = list(opt('--ef-add', '128'));
const efs = list(opt('--ef', '64,128,256'));
const k = Number(opt('--k', 10));
const exactMaxes = list(opt('--exact-max', String(EXACT_MAX)));
const groups = Number(opt('--filter', 0));
const filterKind = opt('--filter-kind', 'mod');
const scalars = String(opt('--scalar', GRAPH_SCALAR)).split(',');
const ties = list(opt('--tie', '0.001,0.01'));

function noisy(real, count) {
  const anchors = real.slice(0, 300);
  const dims = anchors[0].length;
  let s = 12345;
  const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const res = [];
  for (let i = 0; i < count; i++) {
    if (i < anchors.length) {
      res.push(anchors[i]);
      continue;
    }
    const a = anchors[((i * 2654435761) % anchors.length) >>> 0];
    const noise = new Float32Array(dims);
    let nn = 0;
    for (let j = 0; j < dims; j++) nn += (noise[j] = gauss()) ** 2;
    const v = new Float32Array(dims);
    let norm = 0;
    for (let j = 0; j < dims; j++) norm += (v[j] = a[j] + (0.62 / Math.sqrt(nn)) * noise[j]) ** 2;
    norm = Math.sqrt(norm);
    for (let j = 0; j < dims; j++) v[j] /= norm;
    res.push(v);
  }
  return res;
}

const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
const mb = (b) => Math.round(b / 1e6);

async function main() {
  const t0 = Date.now();
  let queries;
  let vectors;
  if (kind === 'store') {
    const { storedVectors, benchQueries } = require('../vector-recall');
    const dataDir = opt('--data-dir', null);
    if (!dataDir) throw new Error('--fixture store needs --data-dir (a bench data dir with vectors)');
    vectors = storedVectors(path.resolve(dataDir)).vectors.slice(0, n);
    n = vectors.length;
    queries = await benchQueries(42, Number(opt('--queries', 128)));
  } else {
    const fx = fixture.load();
    queries = fx.queries.slice(0, Number(opt('--queries', fx.queries.length)));
    vectors = kind === 'noisy' ? noisy(fixture.expand(fx, 300), n) : fixture.expand(fx, n);
  }
  const dims = vectors[0].length;
  const labels = vectors.map((_, i) => i + 1);
  console.error(`${n} ${kind} vectors ready in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

  // Exact truth, in batches of queries.
  const flat = new Float32Array(n * dims);
  vectors.forEach((v, i) => flat.set(v, i * dims));
  const truth = [];
  const qFlat = new Float32Array(queries.length * dims);
  queries.forEach((q, i) => qFlat.set(q, i * dims));
  let t = Date.now();
  const ex = exactSearch(flat, qFlat, dims, k, MetricKind.IP, 0);
  for (let i = 0; i < queries.length; i++) truth.push(new Set(Array.from(ex.keys.slice(i * k, (i + 1) * k), (key) => Number(key) + 1)));
  const kth = queries.map((_, i) => 1 - ex.distances[(i + 1) * k - 1]);
  const exactMs = (Date.now() - t) / queries.length;
  // The k-th best cosine and the gap to the 11th tell how separable the top k is.
  console.error(`exact truth: ${exactMs.toFixed(1)} ms per query`);
  // The filtered truth: each group's vectors scanned exactly with the queries of that group.
  const groupOf = (label) => (filterKind === 'block' ? Math.floor(((label - 1) * groups) / n) : label % groups);
  const ftruth = new Array(queries.length);
  for (let g = 0; g < groups; g++) {
    const members = labels.filter((l) => groupOf(l) === g);
    const qs = queries.map((_, i) => i).filter((i) => i % groups === g);
    if (qs.length === 0) continue;
    const sub = new Float32Array(members.length * dims);
    members.forEach((l, j) => sub.set(vectors[l - 1], j * dims));
    const qf = new Float32Array(qs.length * dims);
    qs.forEach((i, j) => qf.set(queries[i], j * dims));
    const fx = exactSearch(sub, qf, dims, k, MetricKind.IP, 0);
    const keysOf = (j) => Array.from(fx.keys.slice(j * k, (j + 1) * k), (key) => members[Number(key)]);
    qs.forEach((i, j) => (ftruth[i] = new Set(keysOf(j))));
  }

  const rows = [];
  for (const [m, efAdd, scalar] of ms.flatMap((m) => efAdds.flatMap((e) => scalars.map((x) => [m, e, x])))) {
    const rss0 = process.memoryUsage().rss;
    const index = new VectorIndex({ connectivity: m, expansionAdd: efAdd, scalar });
    t = Date.now();
    for (let i = 0; i < n; i += BUILD_CHUNK) index.addMany(labels.slice(i, i + BUILD_CHUNK), vectors.slice(i, i + BUILD_CHUNK), 0);
    const buildS = (Date.now() - t) / 1000;
    const rssBuilt = process.memoryUsage().rss;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-vlab-'));
    const file = path.join(dir, 'vectors');
    index.save(file, 'lab', 0);
    const fileMB = mb(fs.statSync(file).size);
    index.clear();
    console.error(`m ${m} ef-add ${efAdd} ${scalar}: built in ${buildS.toFixed(0)} s, +${mb(rssBuilt - rss0)} MB RSS, ${fileMB} MB file`);
    for (const [ef, exactMax] of efs.flatMap((e) => exactMaxes.map((x) => [e, x]))) {
      const loaded = new VectorIndex({ connectivity: m, expansionAdd: efAdd, expansionSearch: ef, exactMax, scalar });
      t = Date.now();
      if (!loaded.load(file, 'lab')) throw new Error('did not load');
      const loadMs = Date.now() - t;
      let found = 0;
      let found50 = 0;
      const foundTie = ties.map(() => 0);
      let foundF = 0;
      let short = 0;
      const lat = [];
      for (let i = 0; i < queries.length; i++) {
        const s = process.hrtime.bigint();
        const got = await loaded.search(queries[i], k);
        lat.push(Number(process.hrtime.bigint() - s) / 1e6);
        found += got.filter((h) => truth[i].has(h.label)).length;
        const exact = got.map((h) => (truth[i].has(h.label) ? Infinity : dot(queries[i], vectors[h.label - 1])));
        ties.forEach((e, j) => (foundTie[j] += exact.filter((score) => score >= kth[i] - e).length));
        const as = (await loaded.search(queries[i], 50)).slice(0, k);
        found50 += as.filter((h) => truth[i].has(h.label)).length;
        if (groups > 0) {
          const g = i % groups;
          const hits = await loaded.search(queries[i], k, (ls) => new Set(ls.filter((l) => groupOf(l) === g)));
          foundF += hits.filter((h) => ftruth[i].has(h.label)).length;
          if (hits.length < Math.min(k, ftruth[i].size)) short++;
        }
      }
      const row = {
        fixture: kind,
        n,
        m,
        efAdd,
        ef,
        scalar,
        exactMax,
        exact: loaded.exact,
        recall: found / (queries.length * k),
        recallTies: Object.fromEntries(ties.map((e, j) => [e, foundTie[j] / (queries.length * k)])),
        ...(groups > 0 ? { filter: `${filterKind} 1/${groups}`, filteredRecall: foundF / (queries.length * k), filteredShort: short } : {}),
        recallTop50: found50 / (queries.length * k),
        p50: pct(lat, 0.5),
        p99: pct(lat, 0.99),
        buildS,
        loadMs,
        fileMB,
        rssMB: mb(rssBuilt - rss0),
      };
      rows.push(row);
      console.log(
        `${kind} n=${n} M=${m} efAdd=${efAdd} ef=${ef} ${loaded.exact ? 'exact scan' : `graph ${scalar}`}: recall@${k} ${row.recall.toFixed(3)} (within ε of the k-th: ${ties.map((e) => `${e} ${row.recallTies[e].toFixed(3)}`).join(', ')}; asked 50: ${row.recallTop50.toFixed(3)})${groups > 0 ? ` filtered ${row.filter} ${row.filteredRecall.toFixed(3)} (short ${short})` : ''} p50 ${row.p50.toFixed(2)} ms p99 ${row.p99.toFixed(2)} ms; build ${buildS.toFixed(0)} s, load ${loadMs} ms, ${fileMB} MB, +${row.rssMB} MB RSS`,
      );
      loaded.clear();
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const out = opt('--out', path.join(ROOT, 'bench', 'results', `vector-lab-${kind}-${n}.json`));
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify({ at: new Date().toISOString(), queries: queries.length, k, exactMsPerQuery: exactMs, cores: os.cpus().length, loadavg: os.loadavg(), rows }, null, 1));
  console.log(`-> ${out}`);
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
