#!/usr/bin/env node
/**
 * Semantic recall of the embedded index's vector search against an exact scan, on a seeded bench
 * data dir (real bge-small vectors of the bench corpus; `node bench/run.js --keep` makes one).
 *
 *   node bench/vector-recall.js --data-dir /tmp/memstore-bench-XXXX [--seed 42] [--queries 64] [--k 10]
 *
 * Queries: the bench's search-3 and search-question texts (lib/corpus.js), embedded with the local
 * model as the service embeds queries. For each: the top k of the service's vector index (usearch
 * HNSW; src/backends/vector/vector-index.ts) against the top k of an exact scan of
 * every vector; the same as a search asks (its best FUSION_CANDIDATES); and filtered (one memory in
 * ten). Prints recall@k, latency, the graph's build, save and load times, file size and RSS. Also run by bench/run.js at the end
 * (`--only` permitting). Needs `npm run build` (reads dist/).
 */
'use strict';
const path = require('node:path');
const fs = require('node:fs');

const ROOT = path.resolve(__dirname, '..');

function args(argv) {
  const o = { dataDir: null, seed: 42, queries: 64, k: 10, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === '--data-dir') o.dataDir = path.resolve(v());
    else if (a === '--seed') o.seed = Number(v());
    else if (a === '--queries') o.queries = Number(v());
    else if (a === '--k') o.k = Number(v());
    else if (a === '--json') o.json = true;
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.dataDir) throw new Error('--data-dir is required');
  return o;
}

/** The stored vectors of a data dir's current vector space, with their labels (memory seqs). */
function storedVectors(dataDir) {
  const Database = require('better-sqlite3');
  const db = new Database(path.join(dataDir, 'memstore.db'), { readonly: true, fileMustExist: true });
  const key = db.prepare("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get();
  if (!key) throw new Error(`${dataDir} has no vectors`);
  const labels = [];
  const vectors = [];
  for (const r of /** @type {IterableIterator<{ seq: number, vec: Buffer }>} */ (db.prepare('SELECT seq, vec FROM memory_vectors WHERE model = ?').iterate(key))) {
    const v = new Float32Array(r.vec.byteLength / 4);
    new Uint8Array(v.buffer).set(r.vec);
    labels.push(r.seq);
    vectors.push(v);
  }
  db.close();
  return { key: /** @type {string} */ (key), labels, vectors };
}

/** The bench's search-3 and search-question texts (`count` of each), embedded with the local model as the service embeds queries. */
async function benchQueries(seed, count) {
  const { LocalEmbeddingProvider } = require(path.join(ROOT, 'dist/src/embeddings/local-embedding.provider.js'));
  const { Corpus } = require('./lib/corpus');
  const modelDir = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q');
  const provider = new LocalEmbeddingProvider(modelDir);
  const q = new Corpus(seed).queries(count);
  const queries = [];
  for (const text of [...q.three, ...q.question]) queries.push(await provider.embed(text, 'query'));
  await provider.close();
  return queries;
}

async function measure(opts) {
  const Database = require('better-sqlite3');
  const os = require('node:os');
  const { VectorIndex, BUILD_CHUNK, dot } = require(path.join(ROOT, 'dist/src/backends/vector/vector-index.js'));
  const { FUSION_CANDIDATES } = require(path.join(ROOT, 'dist/libs/search-query/index.js'));
  const { key, labels, vectors } = storedVectors(opts.dataDir);
  // The service's saved graph when the data dir has one (a restart loads it), else built as the
  // service rebuilds it (BUILD_CHUNK at a time, every core), saved and loaded back.
  const store = new Database(path.join(opts.dataDir, 'memstore.db'), { readonly: true }).prepare("SELECT value FROM embedding_meta WHERE key = 'store_id'").pluck().get();
  const saved = path.join(opts.dataDir, 'memstore.db.vectors');
  const rss0 = process.memoryUsage().rss;
  let loaded = new VectorIndex();
  let t = process.hrtime.bigint();
  let buildMs = null;
  let saveMs = null;
  let fileMB = fs.existsSync(saved) ? fs.statSync(saved).size / 1e6 : null;
  if (!store || !loaded.load(saved, `${store}:${key}`)) {
    const index = new VectorIndex();
    t = process.hrtime.bigint();
    for (let i = 0; i < labels.length; i += BUILD_CHUNK) index.addMany(labels.slice(i, i + BUILD_CHUNK), vectors.slice(i, i + BUILD_CHUNK), 0);
    buildMs = Number(process.hrtime.bigint() - t) / 1e6;
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-recall-')), 'vectors');
    t = process.hrtime.bigint();
    index.save(file, key, 0);
    saveMs = Number(process.hrtime.bigint() - t) / 1e6;
    loaded = new VectorIndex();
    t = process.hrtime.bigint();
    if (!loaded.load(file, key)) throw new Error('the saved index did not load');
    fileMB = fs.statSync(file).size / 1e6;
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
  const loadMs = Number(process.hrtime.bigint() - t) / 1e6;
  const rssBuilt = process.memoryUsage().rss;

  const queries = await benchQueries(opts.seed, opts.queries);

  const exactTop = (v, k, only) => {
    const best = [];
    for (let i = 0; i < vectors.length; i++) {
      if (only && !only(labels[i])) continue;
      const s = dot(v, vectors[i]);
      if (best.length === k && s <= best[k - 1].score) continue;
      best.push({ label: labels[i], score: s });
      best.sort((a, b) => b.score - a.score);
      if (best.length > k) best.pop();
    }
    return best;
  };
  // A filter letting one memory in ten through (a project, a type): asked per batch of candidates, as the adapters ask.
  const inFilter = (l) => l % 10 === 3;
  const accept = (ls) => new Set(ls.filter(inFilter));
  let found = 0;
  let foundService = 0;
  let foundFiltered = 0;
  let filteredShort = 0;
  const lat = [];
  const latFiltered = [];
  let exactMs = 0;
  for (const v of queries) {
    t = process.hrtime.bigint();
    const truth = exactTop(v, opts.k);
    exactMs += Number(process.hrtime.bigint() - t) / 1e6;
    const want = new Set(truth.map((h) => h.label));
    t = process.hrtime.bigint();
    const got = await loaded.search(v, opts.k);
    lat.push(Number(process.hrtime.bigint() - t) / 1e6);
    found += got.filter((h) => want.has(h.label)).length;
    // What a search asks (FUSION_CANDIDATES), its best k.
    const service = (await loaded.search(v, Math.max(FUSION_CANDIDATES, opts.k))).slice(0, opts.k);
    foundService += service.filter((h) => want.has(h.label)).length;
    const truthF = new Set(exactTop(v, opts.k, inFilter).map((h) => h.label));
    t = process.hrtime.bigint();
    const gotF = await loaded.search(v, opts.k, accept);
    latFiltered.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (gotF.length < Math.min(opts.k, truthF.size)) filteredShort++;
    foundFiltered += gotF.filter((h) => truthF.has(h.label)).length;
  }
  const pct = (a, p) => [...a].sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor(a.length * p))];
  const n = queries.length * opts.k;
  return {
    model: key,
    vectors: loaded.size,
    queries: queries.length,
    k: opts.k,
    recall: found / n,
    recallAsSearched: foundService / n,
    recallFiltered: foundFiltered / n,
    filteredShort,
    p50: pct(lat, 0.5),
    p99: pct(lat, 0.99),
    filteredP99: pct(latFiltered, 0.99),
    exactMsPerQuery: exactMs / queries.length,
    buildMs,
    saveMs,
    loadMs,
    fileMB,
    graphRssMB: (rssBuilt - rss0) / 1e6,
    cores: os.cpus().length,
  };
}

function line(r) {
  return (
    `Semantic recall@${r.k} vs exact scan: ${r.recall.toFixed(3)} ${r.recall >= 0.98 ? 'PASS' : 'FAIL'} (target >= 0.98; ${r.queries} queries, ${r.vectors} vectors of ${r.model}); ` +
    `as a search asks (top 50): ${r.recallAsSearched.toFixed(3)}; filtered 1 in 10: ${r.recallFiltered.toFixed(3)} (${r.filteredShort} short of k); ` +
    `HNSW p50 ${r.p50.toFixed(2)} ms p99 ${r.p99.toFixed(2)} ms (filtered p99 ${r.filteredP99.toFixed(2)} ms) vs ${r.exactMsPerQuery.toFixed(1)} ms exact in JS; ` +
    (r.buildMs === null ? `the service's saved graph` : `built in ${(r.buildMs / 1000).toFixed(1)} s on ${r.cores} cores, saved in ${r.saveMs.toFixed(0)} ms,`) +
    ` loaded in ${r.loadMs.toFixed(0)} ms (${r.fileMB.toFixed(0)} MB file, +${r.graphRssMB.toFixed(0)} MB RSS)`
  );
}

module.exports = { measure, line, storedVectors, benchQueries };

if (require.main === module) {
  const opts = args(process.argv.slice(2));
  if (!fs.existsSync(path.join(ROOT, 'dist/src/backends/vector/vector-index.js'))) throw new Error('run `npm run build` first');
  measure(opts).then(
    (r) => console.log(opts.json ? JSON.stringify(r) : line(r)),
    (e) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
