#!/usr/bin/env node
/**
 * Semantic recall of the embedded index's vector search against an exact scan, on a seeded bench
 * data dir (real bge-small vectors of the bench corpus; `node bench/run.js --keep` makes one).
 *
 *   node bench/vector-recall.js --data-dir /tmp/memstore-bench-XXXX [--seed 42] [--queries 64] [--k 10]
 *
 * Queries: the bench's search-3 and search-question texts (lib/corpus.js), embedded with the local
 * model as the service embeds queries. For each: the top k of the service's VectorCache (IVF lists,
 * quantised pre-filter + exact re-rank; sqlite-vector-cache.ts) against the top k of an exact scan of
 * every vector, and the same without the IVF lists (the full quantised pass). Prints recall@k, the
 * time per query of each, and the bytes of vectors held. Also run by bench/run.js at the end
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

async function measure(opts) {
  const Database = require('better-sqlite3');
  const { VectorCache } = require(path.join(ROOT, 'dist/src/backends/sqlite/sqlite-vector-cache.js'));
  const { StatementCache } = require(path.join(ROOT, 'dist/src/backends/sqlite/sqlite-memory-rows.js'));
  const { LocalEmbeddingProvider } = require(path.join(ROOT, 'dist/src/embeddings/local-embedding.provider.js'));
  const { Corpus } = require('./lib/corpus');
  const db = new Database(path.join(opts.dataDir, 'memstore.db'), { readonly: true, fileMustExist: true });
  const statements = new StatementCache(db);
  const stmt = (sql) => statements.get(sql);
  const key = db.prepare("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get();
  if (!key) throw new Error(`${opts.dataDir} has no vectors`);
  const fast = new VectorCache();
  const flat = new VectorCache({ train: 'off' });
  const exact = new VectorCache({ exactBelow: Infinity, train: 'off' });
  // One read snapshot for both copies (a running service may be adding vectors meanwhile).
  db.exec('BEGIN');
  let t = process.hrtime.bigint();
  fast.refresh(stmt, key);
  const loadMs = Number(process.hrtime.bigint() - t) / 1e6;
  exact.refresh(stmt, key);
  flat.refresh(stmt, key);
  db.exec('COMMIT');
  db.close();
  // The IVF lists are trained in a worker thread after the load.
  t = process.hrtime.bigint();
  await fast.whenIndexed();
  const trainMs = Number(process.hrtime.bigint() - t) / 1e6;

  const modelDir = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q');
  const provider = new LocalEmbeddingProvider(modelDir);
  const q = new Corpus(opts.seed).queries(opts.queries);
  const texts = [...q.three, ...q.question];
  const vectors = [];
  for (const text of texts) vectors.push(await provider.embed(text, 'query'));
  await provider.close();

  let found = 0;
  let foundFlat = 0;
  let fastMs = 0;
  let flatMs = 0;
  let exactMs = 0;
  // Twice: the first round warms the JIT up, the second is timed.
  for (let round = 0; round < 2; round++) {
    found = foundFlat = fastMs = flatMs = exactMs = 0;
    for (const v of vectors) {
      t = process.hrtime.bigint();
      const truth = exact.top(v, opts.k, null, null);
      const t1 = process.hrtime.bigint();
      const got = fast.top(v, opts.k, null, null);
      const t2 = process.hrtime.bigint();
      const gotFlat = flat.top(v, opts.k, null, null);
      const t3 = process.hrtime.bigint();
      exactMs += Number(t1 - t) / 1e6;
      fastMs += Number(t2 - t1) / 1e6;
      flatMs += Number(t3 - t2) / 1e6;
      const want = new Set(truth.map((h) => h.seq));
      found += got.filter((h) => want.has(h.seq)).length;
      foundFlat += gotFlat.filter((h) => want.has(h.seq)).length;
    }
  }
  fast.close();
  return {
    model: key,
    vectors: fast.size,
    queries: vectors.length,
    k: opts.k,
    recall: found / (vectors.length * opts.k),
    recallWithoutIvf: foundFlat / (vectors.length * opts.k),
    ivf: fast.index,
    trainMs,
    fastMsPerQuery: fastMs / vectors.length,
    flatMsPerQuery: flatMs / vectors.length,
    exactMsPerQuery: exactMs / vectors.length,
    loadMs,
    vectorMB: fast.byteLength / 1e6,
  };
}

function line(r) {
  const ivf = r.ivf ? `IVF ${r.ivf.lists} lists trained in ${(r.trainMs / 1000).toFixed(1)} s after the load` : 'no IVF lists (store at most exactBelow)';
  return `Semantic recall@${r.k} vs exact scan: ${r.recall.toFixed(3)} ${r.recall >= 0.95 ? 'PASS' : 'FAIL'} (target >= 0.95; ${r.queries} queries, ${r.vectors} vectors of ${r.model}; ` +
    `${r.fastMsPerQuery.toFixed(2)} ms/query IVF + quantised + re-rank vs ${r.flatMsPerQuery.toFixed(2)} ms without IVF (recall ${r.recallWithoutIvf.toFixed(3)}) vs ${r.exactMsPerQuery.toFixed(1)} ms exact, in this process; ` +
    `${ivf}; vectors ${r.vectorMB.toFixed(0)} MB, loaded in ${r.loadMs.toFixed(0)} ms)`;
}

module.exports = { measure, line };

if (require.main === module) {
  const opts = args(process.argv.slice(2));
  if (!fs.existsSync(path.join(ROOT, 'dist/src/backends/sqlite/sqlite-vector-cache.js'))) throw new Error('run `npm run build` first');
  measure(opts).then(
    (r) => console.log(opts.json ? JSON.stringify(r) : line(r)),
    (e) => {
      console.error(e);
      process.exitCode = 1;
    },
  );
}
