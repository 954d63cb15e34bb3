#!/usr/bin/env node
/**
 * Recall@10 of the vector cache's IVF lists on REAL bge-small vectors (bench/vector-recall.js runs
 * on a bench data dir whose 100,000 vectors are mostly synthetic: bench/fill-vectors.js).
 *
 *   node bench/ivf-real-recall.js --dir /tmp/ivf-real [--n 20000] [--queries 128] [--seed 42]
 *
 * Embeds the contents of the first n memories of the bench corpus (lib/corpus.js) with the local
 * model as documents, once, into DIR/vectors.db (a memory_vectors table; reused by later runs), then
 * searches them with held-out query vectors — the bench's search-3 and search-question texts, and
 * the titles of memories n.. (not indexed), embedded as queries — and prints, for several probe
 * shares, recall@10 against the exact scan and the time per query. Needs `npm run build`.
 */
'use strict';
const path = require('node:path');
const fs = require('node:fs');

const ROOT = path.resolve(__dirname, '..');
const dist = (p) => require(path.join(ROOT, 'dist/src', p));

function args(argv) {
  const o = { dir: null, n: 20000, queries: 128, seed: 42 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === '--dir') o.dir = path.resolve(v());
    else if (a === '--n') o.n = Number(v());
    else if (a === '--queries') o.queries = Number(v());
    else if (a === '--seed') o.seed = Number(v());
    else throw new Error(`unknown option ${a}`);
  }
  if (!o.dir) throw new Error('--dir is required');
  return o;
}

async function main() {
  const opts = args(process.argv.slice(2));
  const Database = require('better-sqlite3');
  const { VectorCache, IVF_MIN, EXACT_BELOW } = dist('backends/sqlite/sqlite-vector-cache.js');
  const { StatementCache } = dist('backends/sqlite/sqlite-memory-rows.js');
  const { createMemorySchema } = dist('backends/sqlite/sqlite-memory-schema.js');
  const { toBlob } = dist('backends/sqlite/sqlite-vectors.js');
  const { LocalEmbeddingProvider } = dist('embeddings/local-embedding.provider.js');
  const { Corpus } = require('./lib/corpus');
  const KEY = 'local:bge-small-en-v1.5';

  fs.mkdirSync(opts.dir, { recursive: true });
  const db = new Database(path.join(opts.dir, 'vectors.db'));
  createMemorySchema(db);
  const provider = new LocalEmbeddingProvider(process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q'));
  const corpus = new Corpus(opts.seed);
  const have = db.prepare('SELECT count(*) FROM memory_vectors').pluck().get();
  if (have < opts.n) {
    const ins = db.prepare('INSERT OR REPLACE INTO memory_vectors (seq, model, stamp, vec) VALUES (?, ?, ?, ?)');
    const t = Date.now();
    for (let i = have; i < opts.n; i++) {
      const v = await provider.embed(corpus.memory(i).content, 'document', false);
      ins.run(i + 1, KEY, i + 1, toBlob(v));
      if ((i + 1) % 1000 === 0) process.stderr.write(`embedded ${i + 1}/${opts.n} (${((i + 1 - have) / ((Date.now() - t) / 1000)).toFixed(0)}/s)\n`);
    }
  }
  const q = corpus.queries(opts.queries / 2);
  const texts = [...q.three, ...q.question];
  for (let i = 0; texts.length < opts.queries * 2; i++) texts.push(corpus.memory(opts.n + 1000 + i).title ?? corpus.memory(opts.n + 1000 + i).content.slice(0, 120));
  const queries = [];
  for (const text of texts) queries.push(await provider.embed(text, 'query'));
  await provider.close();

  const statements = new StatementCache(db);
  const stmt = (sql) => statements.get(sql);
  db.prepare("INSERT OR REPLACE INTO embedding_meta (key, value) VALUES ('vector_version', '1')").run();
  const exact = new VectorCache({ exactBelow: Infinity, train: 'off' });
  exact.refresh(stmt, KEY);
  const n = exact.size;
  const truths = queries.map((v) => new Set(exact.top(v, 10, null, null).map((h) => h.seq)));
  const time = (cache) => {
    let found = 0;
    let ns = 0n;
    for (let round = 0; round < 2; round++) {
      found = 0;
      ns = 0n;
      queries.forEach((v, i) => {
        const t = process.hrtime.bigint();
        const hits = cache.top(v, 10, null, null);
        ns += process.hrtime.bigint() - t;
        found += hits.filter((h) => truths[i].has(h.seq)).length;
      });
    }
    return { recall: found / (queries.length * 10), ms: Number(ns) / 1e6 / queries.length };
  };
  const flat = new VectorCache({ train: 'off', exactBelow: 0 });
  flat.refresh(stmt, KEY);
  const f = time(flat);
  console.log(`${n} real bge-small vectors (corpus seed ${opts.seed}), ${queries.length} held-out queries (${opts.queries} bench query texts, ${opts.queries} titles of memories not indexed), recall@10 vs exact scan:`);
  console.log(`  no IVF (quantised pass over all + re-rank): recall ${f.recall.toFixed(3)}, ${f.ms.toFixed(2)} ms/query`);
  for (const share of [0.05, 0.1, 0.15, 0.2, 0.3]) {
    // exactBelow 0: the quantised pass and the re-rank also run on the probed candidates, as at 100,000.
    const ivf = new VectorCache({ train: 'inline', exactBelow: 0, probe: (m) => Math.ceil(m * share) });
    ivf.refresh(stmt, KEY);
    const r = time(ivf);
    console.log(`  IVF ${ivf.index.lists} lists, probe ${share * 100} %: recall ${r.recall.toFixed(3)}, ${r.ms.toFixed(2)} ms/query`);
  }
  const prod = new VectorCache({ train: 'inline' });
  prod.refresh(stmt, KEY);
  const p = time(prod);
  console.log(`  service defaults (exact below ${EXACT_BELOW}, probe ≥ ${IVF_MIN}): recall ${p.recall.toFixed(3)}, ${p.ms.toFixed(2)} ms/query, ${prod.index ? `${prod.index.lists} lists` : 'no IVF'}`);
  db.close();
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
