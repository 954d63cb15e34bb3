#!/usr/bin/env node
/**
 * Gives every memory of a seeded bench data dir that has no vector yet a synthetic one shaped like
 * the real vectors already there, and empties their embedding jobs — for measuring vector search
 * speed at 100,000 memories on a machine where embedding 100,000 texts with the local model would
 * take too long (on a shared 2-core VM under load: over half an hour). Stop the service first.
 *
 *   node bench/fill-vectors.js --data-dir /tmp/memstore-bench-XXXX [--min-real 50]
 *
 * Each synthetic vector = a real vector of the store (picked by seq) + Gaussian noise, normalised
 * to cosine ≈ 0.85 with it: it keeps bge's anisotropy (the common direction every text shares)
 * and forms clusters around real texts, so a quantised scan meets a realistic distribution.
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
if (real.length < minReal) throw new Error(`only ${real.length} real vectors (need ${minReal})`);
const dims = real[0].length;
const missing = db.prepare('SELECT m.seq FROM memories m WHERE NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq AND v.model = ?)').pluck().all(key);

let s = 12345;
const rnd = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 4294967296;
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
const EPS = 0.62; // |noise| relative to the anchor: cosine 1/sqrt(1 + EPS^2) ≈ 0.85

const ins = db.prepare('INSERT INTO memory_vectors (seq, model, stamp, vec) VALUES (?, ?, ?, ?) ON CONFLICT (seq) DO UPDATE SET model = excluded.model, stamp = excluded.stamp, vec = excluded.vec');
const unqueue = db.prepare('DELETE FROM embedding_queue WHERE seq = ?');
let stamp = db.prepare('SELECT coalesce(max(stamp), 0) FROM memory_vectors').pluck().get();
const t0 = Date.now();
for (let from = 0; from < missing.length; from += 5000) {
  db.transaction(() => {
    for (const seq of missing.slice(from, from + 5000)) {
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
console.log(`${missing.length} synthetic vectors (${key}, ${dims} dims) around the ${real.length} vectors already stored, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
db.close();
