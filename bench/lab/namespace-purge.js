#!/usr/bin/env node
/**
 * Issue 43 "purge of a namespace of 10,000 memories leaves nothing behind" (decision 0106). On the
 * embedded default (SQLite + filesystem objects) it seeds `tenant/a` (10,000 memories by JSONL
 * import, some with 2 and 3 versions by PATCH, some created by POST with an Idempotency-Key, with
 * vectors and embedding jobs when embeddings are on), `tenant/b` (1,000, the same kinds) and the
 * child namespace `tenant/a/sub` (200: its objects live under ns/tenant/a/ too), purges tenant/a
 * over HTTP, stops the service and then looks directly, read-only, into memstore.db and the
 * object directory. With embeddings on (the default) it purges once tenant/b has all its vectors
 * and tenant/a at least a tenth of its own (or after --wait seconds): tenant/a then has vectors
 * and embedding jobs still waiting, and both must go. The checks:
 * - no row of tenant/a in memories, memory_tags, memory_versions, memory_vectors,
 *   embedding_queue, write_intents, idempotency_keys or memory_counts, nor in the full-text
 *   indexes (fts5vocab over memories_fts / memories_tt); any other table holding a tenant/a id
 *   or the name is listed (the audit log is expected there, the receipt being the point);
 * - no object of tenant/a (ns/tenant/a/memories/…, .tmp), none of its vectors in the vector
 *   index checkpoint (memstore.db.vectors*);
 * - every memory, version, tag, vector and object of tenant/b and tenant/a/sub as before;
 * - the namespace.purge receipt in audit_log with the count.
 * It also counts, for information only, the bytes of tenant/a's marker word still in the raw
 * database files (SQLite free pages; not rows). Prints a report; exits 1 on any leftover or loss.
 * Needs `npm run build` (dist/).
 *
 *   node bench/lab/namespace-purge.js [--size 10000] [--embeddings local|none] [--wait 240] [--keep]
 */
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Database = require('better-sqlite3');
const { Corpus } = require('../lib/corpus');
const { request, sleep, startService } = require('../lib/service');

const A = 'tenant/a';
const B = 'tenant/b';
const SUB = 'tenant/a/sub';
/** A word only tenant/a's memories contain (with their number), to find its bytes anywhere. */
const CANARY = 'zqxpurgecanary';

function args() {
  const o = { size: 10_000, embeddings: 'local', wait: 240, keep: false };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    if (a[i] === '--size') o.size = Number(a[++i]);
    else if (a[i] === '--embeddings') o.embeddings = a[++i];
    else if (a[i] === '--wait') o.wait = Number(a[++i]);
    else if (a[i] === '--keep') o.keep = true;
    else throw new Error(`unknown argument ${a[i]} (see the header of ${path.basename(__filename)})`);
  }
  if (!Number.isInteger(o.size) || o.size < 100) throw new Error('--size must be an integer of at least 100');
  if (!['local', 'none'].includes(o.embeddings)) throw new Error('--embeddings is local or none');
  return o;
}

const log = (...m) => console.log(new Date().toISOString().slice(11, 19), ...m);
const sha = (s) => crypto.createHash('sha256').update(s).digest('hex').slice(0, 16);

/** Imports `count` corpus memories from line `from` into `ns` (JSONL, 1,000 lines a request); returns their ids. */
async function seed(svc, corpus, ns, from, count, marker) {
  const ids = [];
  for (let start = from; start < from + count; start += 1000) {
    const lines = [];
    for (let i = start; i < Math.min(from + count, start + 1000); i++) {
      const m = corpus.memory(i);
      lines.push(JSON.stringify({ ...m, content: `${m.content}\n\n${marker}${i}` }));
    }
    const qs = new URLSearchParams({ format: 'jsonl', filename: `${ns.replace(/\//g, '-')}-${start}.jsonl`, progress: 'true' });
    const res = await request(svc.base, 'POST', `/api/import?${qs}`, { headers: hdr(svc, ns, { 'content-type': 'application/x-ndjson' }), rawBody: Buffer.from(lines.join('\n') + '\n') });
    if (res.status !== 200) throw new Error(`import into ${ns}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
    for (const l of res.text.split('\n')) {
      if (!l.trim()) continue;
      const item = JSON.parse(l);
      if (item.type === 'error' || (item.type === 'item' && item.status !== 'created')) throw new Error(`import into ${ns}: ${l.slice(0, 300)}`);
      if (item.type === 'item') ids.push(item.id);
    }
  }
  if (ids.length !== count) throw new Error(`import into ${ns}: ${ids.length} ids for ${count} lines`);
  return ids;
}

function hdr(svc, ns, extra = {}) {
  return { authorization: `Bearer ${svc.token}`, 'x-memory-namespace': ns, ...extra };
}

/** Runs `fn` over `items`, `width` at a time. */
async function pool(items, width, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/** Every 10th memory gets a second version, every 50th a third (PATCH of content). */
async function addVersions(svc, ns, ids) {
  const patches = [];
  ids.forEach((id, i) => {
    if (i % 10 === 0) patches.push({ id, text: `second version ${i}` });
    if (i % 50 === 0) patches.push({ id, text: `third version ${i}` });
  });
  // Two versions of one memory are sent in order (the second after the first).
  const byId = new Map();
  for (const p of patches) byId.set(p.id, [...(byId.get(p.id) ?? []), p.text]);
  await pool([...byId.entries()], 4, async ([id, texts]) => {
    for (const text of texts) {
      const r = await request(svc.base, 'PATCH', `/api/memories/${id}`, { headers: hdr(svc, ns), body: { content: `${text}: edited by the purge lab.` } });
      if (r.status !== 200) throw new Error(`PATCH ${ns} ${id}: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    }
  });
  return patches.length;
}

/** `count` memories created by POST with an Idempotency-Key (their answer is kept by the service for a day). */
async function createIdempotent(svc, ns, count, marker) {
  const ids = [];
  for (let i = 0; i < count; i++) {
    const r = await request(svc.base, 'POST', '/api/memories', {
      headers: hdr(svc, ns, { 'idempotency-key': `lab-${ns.replace(/\//g, '-')}-${i}` }),
      body: { title: `Idempotent ${i}`, content: `Created once with a key. ${marker}idem${i}`, type: 'note' },
    });
    if (r.status !== 201) throw new Error(`POST ${ns}: HTTP ${r.status}: ${r.text.slice(0, 200)}`);
    ids.push(r.body.memory.id);
  }
  return ids;
}

/** Files under `dir`, as paths relative to `root` with '/' separators. */
function walk(root, dir = root, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(root, p, out);
    else out.push(path.relative(root, p).split(path.sep).join('/'));
  }
  return out;
}

/** The namespace an object key belongs to ('default' without the ns/ prefix): the longest name before `/memories/<file>`. */
function nsOfKey(key) {
  const m = /^ns\/(.+)\/memories\/[^/]+$/.exec(key);
  return m ? m[1] : key.startsWith('memories/') ? 'default' : null;
}

const IN = (n) => `(${Array(n).fill('?').join(',')})`;
/** Rows of `sql` with `… IN (?)` over `values`, in chunks (SQLite's variable limit). */
function allIn(db, sql, values) {
  const out = [];
  for (let i = 0; i < values.length; i += 500) {
    const chunk = values.slice(i, i + 500);
    out.push(...db.prepare(sql.replace('(?)', IN(chunk.length))).all(...chunk));
  }
  return out;
}

/** What the database and object directory hold of namespace `ns` (ids given), comparable before/after. */
function snapshot(db, objectsDir, ns, ids) {
  const rows = allIn(db, 'SELECT seq, id, namespace, version, updated_at, title, content, tags, object_key FROM memories WHERE id IN (?)', ids);
  const seqs = rows.map((r) => r.seq);
  const objects = walk(objectsDir).filter((k) => nsOfKey(k) === ns);
  const table = (t) => db.prepare('SELECT count(*) FROM sqlite_master WHERE name = ?').pluck().get(t) === 1;
  return {
    memories: new Map(rows.map((r) => [r.id, sha(JSON.stringify(r))])),
    seqs,
    inNamespace: db.prepare('SELECT count(*) FROM memories WHERE namespace = ?').pluck().get(ns),
    versions: allIn(db, 'SELECT id, version, object_key, size FROM memory_versions WHERE id IN (?) ORDER BY id, version', ids).map((r) => JSON.stringify(r)),
    tags: allIn(db, 'SELECT tag, seq, namespace FROM memory_tags WHERE seq IN (?) ORDER BY seq, tag', seqs).map((r) => JSON.stringify(r)),
    vectors: table('memory_vectors') ? allIn(db, 'SELECT seq, vec FROM memory_vectors WHERE seq IN (?)', seqs) : [],
    jobs: table('embedding_queue') ? allIn(db, 'SELECT seq FROM embedding_queue WHERE seq IN (?)', seqs).length : 0,
    objects: new Map(objects.map((k) => [k, sha(fs.readFileSync(path.join(objectsDir, k)))])),
  };
}

/** Sequence numbers of documents in an FTS5 index (fts5vocab 'instance' in the temp schema of a read-only connection). */
function ftsDocs(db, table) {
  const v = `temp.lab_${table}_vocab`;
  db.exec(`CREATE VIRTUAL TABLE ${v} USING fts5vocab(main, ${table}, 'instance')`);
  return new Set(db.prepare(`SELECT DISTINCT doc FROM ${v}`).pluck().all());
}

/** Occurrences of `needle` in `file` (0 when the file is missing). */
function countBytes(file, needle) {
  if (!fs.existsSync(file)) return 0;
  const buf = fs.readFileSync(file);
  const n = Buffer.from(needle);
  let count = 0;
  for (let i = buf.indexOf(n); i >= 0; i = buf.indexOf(n, i + 1)) count++;
  return count;
}

/** How many of `vectors` (rows {vec}) appear byte for byte (their first 32 bytes, at a 4-byte boundary) in `file`. */
function vectorsIn(file, vectors) {
  if (!fs.existsSync(file) || vectors.length === 0) return 0;
  const want = new Set(vectors.map((v) => Buffer.from(v.vec).subarray(0, 32).toString('base64')));
  const buf = fs.readFileSync(file);
  let found = 0;
  for (let i = 0; i + 32 <= buf.length; i += 4) if (want.has(buf.subarray(i, i + 32).toString('base64')) && ++found >= want.size) break;
  return found;
}

async function main() {
  const o = args();
  const corpus = new Corpus(7);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-purge-lab-'));
  const dbFile = path.join(dataDir, 'memstore.db');
  const objectsDir = path.join(dataDir, 'objects');
  const problems = [];
  const notes = [];
  const bad = (m) => problems.push(m);
  let svc = await startService({ dataDir, embeddings: o.embeddings === 'none' ? 'none' : null, namespaces: ['*'] });
  try {
    let t0 = Date.now();
    const ids = {};
    // The bystanders first: their embedding jobs are done first, so they have vectors when tenant/a is purged.
    ids[B] = await seed(svc, corpus, B, o.size, 980, 'zqxkeepb');
    ids[SUB] = await seed(svc, corpus, SUB, o.size + 1000, 200, 'zqxkeepsub');
    ids[A] = await seed(svc, corpus, A, 0, o.size - 20, CANARY);
    log(`imported ${ids[A].length} + ${ids[B].length} + ${ids[SUB].length} memories in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    t0 = Date.now();
    ids[A].push(...(await createIdempotent(svc, A, 20, CANARY)));
    ids[B].push(...(await createIdempotent(svc, B, 20, 'zqxkeepb')));
    const patchesA = await addVersions(svc, A, ids[A]);
    const patchesB = await addVersions(svc, B, ids[B]);
    const patchesSub = await addVersions(svc, SUB, ids[SUB]);
    log(`${patchesA} + ${patchesB} + ${patchesSub} new versions by PATCH, 20 + 20 memories by POST with an Idempotency-Key, in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

    // Embeddings on: purge while some vectors are written and other jobs still wait (both must go).
    const ro = () => new Database(dbFile, { readonly: true, fileMustExist: true });
    if (o.embeddings !== 'none') {
      const deadline = Date.now() + o.wait * 1000;
      for (;;) {
        const db = ro();
        const nv = db.prepare('SELECT count(*) FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE m.namespace = ?').pluck().get(A);
        const nb = db.prepare('SELECT count(*) FROM memory_vectors v JOIN memories m ON m.seq = v.seq WHERE m.namespace = ?').pluck().get(B);
        db.close();
        if ((nv >= Math.min(1000, ids[A].length / 10) && nb >= ids[B].length) || Date.now() > deadline) {
          log(`vectors so far: ${A} ${nv}, ${B} ${nb}`);
          break;
        }
        await sleep(2000);
      }
    }

    let db = ro();
    const before = { [A]: snapshot(db, objectsDir, A, ids[A]), [B]: snapshot(db, objectsDir, B, ids[B]), [SUB]: snapshot(db, objectsDir, SUB, ids[SUB]) };
    const idemBefore = db.prepare("SELECT count(*) FROM idempotency_keys WHERE key LIKE '%ns:' || ? || '|%'").pluck().get(A);
    db.close();
    const a0 = before[A];
    log(
      `before: ${A} ${a0.inNamespace} memories, ${a0.versions.length} version rows, ${a0.tags.length} tag rows, ${a0.vectors.length} vectors, ${a0.jobs} embedding jobs, ${a0.objects.size} objects, ${idemBefore} idempotency records`,
    );

    t0 = Date.now();
    const res = await request(svc.base, 'POST', '/api/namespaces/purge', { headers: hdr(svc, A), body: {} });
    const purgeMs = Date.now() - t0;
    if (res.status !== 200) throw new Error(`purge: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
    log(`purge: ${JSON.stringify(res.body)} in ${(purgeMs / 1000).toFixed(1)} s`);
    if (res.body.deleted !== ids[A].length) bad(`the purge answer says ${res.body.deleted} deleted, ${ids[A].length} expected`);
    const again = await request(svc.base, 'POST', '/api/namespaces/purge', { headers: hdr(svc, A), body: {} });
    if (again.status !== 200 || again.body.deleted !== 0) bad(`a second purge answered ${again.status} ${again.text.slice(0, 200)} (0 deleted expected)`);
    const listed = await request(svc.base, 'GET', '/api/memories?limit=1', { headers: hdr(svc, A) });
    if (listed.body?.total !== 0) bad(`GET /api/memories in ${A} after the purge: total ${listed.body?.total}`);
    await svc.stop();
    svc = null;

    // Directly in the database and the object directory, the service stopped.
    db = ro();
    const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all());
    const aIds = ids[A];
    const aSeqs = a0.seqs;
    const left = (what, n) => {
      if (n > 0) bad(`${what}: ${n} left`);
      return n;
    };
    const found = {};
    found.memories = left(
      `memories of ${A} (by namespace or id)`,
      db.prepare('SELECT count(*) FROM memories WHERE namespace = ?').pluck().get(A) + allIn(db, 'SELECT id FROM memories WHERE id IN (?)', aIds).length,
    );
    found.tags = left(
      `memory_tags rows of ${A}`,
      db.prepare('SELECT count(*) FROM memory_tags WHERE namespace = ?').pluck().get(A) + allIn(db, 'SELECT seq FROM memory_tags WHERE seq IN (?)', aSeqs).length,
    );
    found.versions = left(`memory_versions rows of ${A}`, allIn(db, 'SELECT id FROM memory_versions WHERE id IN (?)', aIds).length);
    found.vectors = left(`memory_vectors rows of ${A}`, tables.has('memory_vectors') ? allIn(db, 'SELECT seq FROM memory_vectors WHERE seq IN (?)', aSeqs).length : 0);
    found.jobs = left(`embedding_queue jobs of ${A}`, tables.has('embedding_queue') ? allIn(db, 'SELECT seq FROM embedding_queue WHERE seq IN (?)', aSeqs).length : 0);
    found.intents = left(
      `write_intents of ${A}`,
      db.prepare("SELECT count(*) FROM write_intents WHERE object_key LIKE 'ns/' || ? || '/memories/%'").pluck().get(A) +
        allIn(db, 'SELECT memory_id FROM write_intents WHERE memory_id IN (?)', aIds).length,
    );
    found.idempotency = left(
      `idempotency_keys records of ${A} (their stored answers hold the memories' content)`,
      db.prepare("SELECT count(*) FROM idempotency_keys WHERE key LIKE '%ns:' || ? || '|%' OR instr(body, ?) > 0").pluck().get(A, CANARY),
    );
    const counts = db.prepare('SELECT dim, key, n FROM memory_counts WHERE namespace = ?').all(A);
    found.counts = left(`memory_counts rows of ${A} (${counts.filter((c) => c.n !== 0).length} non-zero; the rest keep its project/agent names at 0)`, counts.length);
    for (const t of ['memories_fts', 'memories_tt']) {
      const docs = ftsDocs(db, t);
      found[t] = left(`${t} index entries of ${A}'s rows`, aSeqs.filter((s) => docs.has(s)).length);
    }
    // Any other table naming a tenant/a id, the namespace or the marker word.
    const checked = new Set(['memories', 'memory_tags', 'memory_versions', 'memory_vectors', 'embedding_queue', 'write_intents', 'idempotency_keys', 'memory_counts']);
    const aIdSet = new Set(aIds);
    const elsewhere = {};
    for (const t of tables) {
      if (checked.has(t) || /^memories_(fts|tt)_/.test(t) || t.startsWith('sqlite_')) continue;
      for (const row of db.prepare(`SELECT * FROM "${t}"`).all()) {
        const text = Object.values(row)
          .filter((v) => typeof v === 'string')
          .join('\n');
        const hit = text.includes(CANARY) || Object.values(row).includes(A) || text.includes(`"${A}"`) || text.split(/[^0-9a-f]+/).some((w) => w.length === 24 && aIdSet.has(w));
        if (hit) elsewhere[t] = [...(elsewhere[t] ?? []), row];
      }
    }
    const receipts = db.prepare("SELECT * FROM audit_log WHERE action = 'namespace.purge' AND target = ? ORDER BY at").all(A);
    const first = receipts.find((r) => JSON.parse(r.detail).deleted === ids[A].length && r.outcome === 'success');
    if (!first) bad(`no namespace.purge receipt for ${A} with deleted = ${ids[A].length} in audit_log`);
    for (const [t, rows] of Object.entries(elsewhere)) {
      if (t === 'audit_log') {
        const kinds = [...new Set(rows.map((r) => r.action))].join(', ');
        notes.push(`audit_log: ${rows.length} entries name ${A} or one of its ids (${kinds}); kept by design (the record of who did what)`);
        if (rows.some((r) => `${r.detail}`.includes(CANARY))) bad(`audit_log holds ${A}'s content`);
      } else bad(`table ${t}: ${rows.length} rows naming ${A}, one of its ids or its content`);
    }

    // The object directory.
    const files = walk(objectsDir);
    const aFiles = files.filter((k) => nsOfKey(k) === A);
    found.objects = left(`objects of ${A} under objects/ns/${A}/memories/`, aFiles.length);
    const strays = files.filter((k) => k.startsWith(`ns/${A}/`) && nsOfKey(k) !== SUB && nsOfKey(k) !== A);
    left(`other files under objects/ns/${A}/ (not of ${SUB})`, strays.length);
    const tmp = files.filter((k) => k.startsWith('.tmp/') && aIds.some((id) => k.includes(id)));
    left(`temporary files of ${A} in objects/.tmp`, tmp.length);

    // The vector index checkpoint beside the database.
    const vfile = `${dbFile}.vectors`;
    if (fs.existsSync(`${vfile}.labels`)) {
      const b = fs.readFileSync(`${vfile}.labels`);
      // Labels are memory seqs. The bytes are looked for too: a removed label may leave its vector in the file.
      const labels = new Set(new Float64Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength)));
      found.indexLabels = left(`vector index checkpoint (${path.basename(vfile)}.labels) labels of ${A}`, aSeqs.filter((s) => labels.has(s)).length);
      const bystanders = [...before[B].vectors, ...before[SUB].vectors];
      const labelled = bystanders.filter((v) => labels.has(v.seq));
      const control = vectorsIn(vfile, labelled);
      const stale = vectorsIn(vfile, a0.vectors);
      found.indexVectors = left(`vectors of ${A} stored byte for byte in ${path.basename(vfile)}`, stale);
      notes.push(
        `vector checkpoint: ${labels.size} labels (${labelled.length} of ${B} + ${SUB}, ${found.indexLabels} of ${A}); bytes found: ${control}/${labelled.length} bystander vectors (control), ${stale}/${a0.vectors.length} of ${A}`,
      );
      if (labelled.length > 0 && control === 0) notes.push('the byte control found nothing: the byte check proves nothing on this run');
    } else notes.push('no vector index checkpoint file (embeddings off or none written)');

    // Bystanders intact: every memory, version, tag row, vector and object as before.
    for (const ns of [B, SUB]) {
      const now = snapshot(db, objectsDir, ns, ids[ns]);
      const was = before[ns];
      const diff = (what, x, y) => {
        if (x !== y) bad(`${ns}: ${what} changed (${y} before, ${x} after)`);
      };
      diff('memory count', now.inNamespace, was.inNamespace);
      diff('memories (rows as before)', [...now.memories].filter(([id, h]) => was.memories.get(id) === h).length, was.memories.size);
      diff('version rows', now.versions.join('\n'), was.versions.join('\n'));
      diff('tag rows', now.tags.join('\n'), was.tags.join('\n'));
      diff('vectors (at least as many)', Math.min(now.vectors.length, was.vectors.length), was.vectors.length);
      diff('objects (files as before)', [...now.objects].filter(([k, h]) => was.objects.get(k) === h).length, was.objects.size);
      notes.push(`${ns} intact: ${now.inNamespace} memories, ${now.versions.length} version rows, ${now.tags.length} tag rows, ${now.vectors.length} vectors, ${now.objects.size} objects`);
    }
    db.close();

    // For information: tenant/a's marker word in the raw files (deleted rows stay in free pages until reused or VACUUM).
    const raw = ['', '-wal', '.vectors'].map((s) => [path.basename(dbFile) + s, countBytes(dbFile + s, CANARY)]).filter(([, n]) => n > 0);
    notes.push(`raw bytes (information, not rows): ${raw.length ? raw.map(([f, n]) => `${f} ${n}x`).join(', ') : 'none'} of the marker word of ${A}'s content`);

    console.log(
      `\nPurge of ${A}: ${ids[A].length} memories (${a0.versions.length} version rows, ${a0.vectors.length} vectors, ${a0.jobs} embedding jobs, ${a0.objects.size} objects) in ${(purgeMs / 1000).toFixed(1)} s`,
    );
    console.log(
      `left after the purge: ${Object.entries(found)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ')}`,
    );
    if (first) console.log(`receipt: audit_log ${first.action} target=${first.target} actor=${first.actor_kind}:${first.actor_name} at=${new Date(first.at).toISOString()} detail=${first.detail}`);
    for (const n of notes) console.log(`note: ${n}`);
    for (const p of problems) console.log(`LEFTOVER/LOSS: ${p}`);
    console.log(problems.length ? `FAIL: ${problems.length} problem(s)` : 'PASS: nothing of tenant/a left, tenant/b and tenant/a/sub intact');
    if (problems.length) process.exitCode = 1;
  } finally {
    if (svc) await svc.stop();
    if (o.keep) console.log(`data directory kept: ${dataDir}`);
    else fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
