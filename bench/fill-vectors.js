#!/usr/bin/env node
/**
 * Gives every memory of a seeded bench data dir that has no vector yet a synthetic one shaped like
 * the real vectors already there, and empties their embedding jobs — for measuring vector search
 * speed at 100,000 memories on a machine where embedding 100,000 texts with the local model would
 * take too long (on a shared 2-core VM under load: over half an hour). Stop the service first.
 *
 *   node bench/fill-vectors.js --data-dir /tmp/memstore-bench-XXXX [--min-real 50] [--fixture noisy|real] [--save-index]
 *
 * --fixture noisy (default): each synthetic vector = a real vector of the store (picked by seq) +
 * Gaussian noise, normalised to cosine ≈ 0.85 with it. Clouds of noisy copies: HNSW cannot
 * separate them (recall@10 ~0.5 at 100,000, decision 0150); use it for speed only.
 * --fixture real: the vectors of bench/lab/real-vectors.js (windows of real sentence embeddings,
 * a realistic neighbourhood structure; that script must have cached its fixture first).
 * --save-index: also builds the service's vector graph from the table and saves it where the
 * service loads it (memstore.db.vectors), so the next start is ready at once instead of
 * rebuilding in the background (minutes at 100,000). Needs `npm run build`.
 * Reported figures say which vectors were synthetic (bench/README.md).
 */
'use strict';
const path = require('node:path');
const Database = require('better-sqlite3');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
};
const dataDir = opt('--data-dir', null);
if (!dataDir) throw new Error('--data-dir is required');
const minReal = Number(opt('--min-real', 50));
const fixture = opt('--fixture', 'noisy');
if (fixture !== 'noisy' && fixture !== 'real') throw new Error('--fixture is noisy or real');

const db = new Database(path.join(path.resolve(dataDir), 'memstore.db'));
db.pragma('busy_timeout = 5000');
const key = db.prepare("SELECT value FROM embedding_meta WHERE key = 'vector_space'").pluck().get();
if (!key) throw new Error('no vector space yet: start the service once with a model');
// Anchors: the vectors stored so far (on a fresh seed, the real ones the service computed).
const real = db
  .prepare('SELECT vec FROM memory_vectors WHERE model = ?')
  .pluck()
  .all(key)
  .map((b) => {
    const v = new Float32Array(b.byteLength / 4);
    new Uint8Array(v.buffer).set(b);
    return v;
  });
if (fixture === 'noisy' && real.length < minReal) throw new Error(`only ${real.length} real vectors (need ${minReal})`);
const dims = real.length ? real[0].length : 384;
const missing = db.prepare('SELECT m.seq FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)').pluck().all(key);

let s = 12345;
const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const EPS = 0.62; // |noise| relative to the anchor: cosine 1/sqrt(1 + EPS^2) ≈ 0.85

const ins = db.prepare('INSERT INTO memory_vectors (seq, model, stamp, vec) VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET model = excluded.model, stamp = excluded.stamp, vec = excluded.vec');
const unqueue = db.prepare('DELETE FROM embedding_queue WHERE seq = ?');
const realWindows =
  fixture === 'real'
    ? (() => {
        const fx = require('./lab/real-vectors');
        const loaded = fx.load();
        if (loaded.sentences[0].length !== dims) throw new Error(`the fixture has ${loaded.sentences[0].length} dims, the store ${dims}`);
        return fx.expand(loaded, missing.length);
      })()
    : null;
let stamp = db.prepare('SELECT coalesce(max(stamp), 0) FROM memory_vectors').pluck().get();
const t0 = Date.now();
for (let from = 0; from < missing.length; from += 5000) {
  db.transaction(() => {
    for (const [i, seq] of missing.slice(from, from + 5000).entries()) {
      if (realWindows) {
        ins.run(seq, key, ++stamp, Buffer.from(realWindows[from + i].buffer));
        unqueue.run(seq);
        continue;
      }
      const anchor = real[((seq * 2654435761) % real.length) >>> 0];
      const noise = new Float32Array(dims);
      let nn = 0;
      for (let j = 0; j < dims; j++) nn += (noise[j] = gauss()) ** 2;
      const scale = EPS / Math.sqrt(nn);
      const v = new Float32Array(dims);
      let n = 0;
      for (let j = 0; j < dims; j++) n += (v[j] = anchor[j] + scale * noise[j]) ** 2;
      n = Math.sqrt(n);
      for (let j = 0; j < dims; j++) v[j] /= n;
      ins.run(seq, key, ++stamp, Buffer.from(v.buffer));
      unqueue.run(seq);
    }
  })();
}
console.log(`${missing.length} synthetic vectors (${key}, ${dims} dims, fixture ${fixture}) beside the ${real.length} vectors already stored, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

if (argv.includes('--save-index')) {
  // What the service's SqliteVectorIndex does when it finds no saved graph, done here with every core.
  const { VectorIndex } = require(path.resolve(__dirname, '..', 'dist/src/backends/vector/vector-index.js'));
  let store = db.prepare("SELECT value FROM embedding_meta WHERE key = 'store_id'").pluck().get();
  if (!store) {
    store = require('node:crypto').randomBytes(8).toString('hex');
    db.prepare("INSERT INTO embedding_meta (key, value) VALUES ('store_id', ?)").run(store);
  }
  const upTo = db.prepare('SELECT coalesce(max(stamp), 0) FROM memory_vectors').pluck().get();
  const index = new VectorIndex();
  const t1 = Date.now();
  let after = 0;
  for (;;) {
    const rows = db.prepare('SELECT seq, vec FROM memory_vectors WHERE model = ? AND seq > ? AND stamp <= ? ORDER BY seq LIMIT 1000').all(key, after, upTo);
    if (rows.length === 0) break;
    index.addMany(
      rows.map((r) => r.seq),
      rows.map((r) => {
        const v = new Float32Array(r.vec.byteLength / 4);
        new Uint8Array(v.buffer).set(r.vec);
        return v;
      }),
      0,
    );
    after = rows[rows.length - 1].seq;
  }
  index.save(path.join(path.resolve(dataDir), 'memstore.db.vectors'), `${store}:${key}`, upTo);
  console.log(`vector graph of ${index.size} built and saved in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
}
db.close();
