#!/usr/bin/env node
'use strict';
/**
 * What one create costs the main thread in the embedded index, outside HTTP: seeds N memories
 * (batches of 1,000) into a fresh SQLite file through the built SqliteDocumentDatabase, then
 * times single-memory inserts (one transaction each, as creates are, yielding between them),
 * with the WAL checkpointed on the worker thread (the service's way) and, with
 * --no-checkpointer, by SQLite on the writing connection every 1,000 pages.
 *
 *   node bench/insert-cost.js [--n 100000] [--inserts 3000] [--no-checkpointer] [--batch 8] [--wal-pages]
 *
 * Reports wall time and the main thread's CPU (process.threadCpuUsage) per insert. --batch N
 * sends N inserts at once (the index commits them together: group commit). --wal-pages counts
 * the WAL pages one insert writes instead (300 inserts, automatic checkpoints off). Build first
 * (`npm run build`). See bench/README.md, "Create and the WAL checkpoint" and "Create: group commit".
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { SqliteDocumentDatabase } = require('../dist/src/backends/sqlite/sqlite-database');
const { Corpus } = require('./lib/corpus');

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? dflt : process.argv[i + 1];
};
const N = Number(arg('--n', 100000));
const INSERTS = Number(arg('--inserts', 3000));
const checkpointer = !process.argv.includes('--no-checkpointer');
const BATCH = Number(arg('--batch', 1));

// The bench's memories (bench/lib/corpus.js: seed data, then the create scenario's bodies), with
// time-ordered ids like the service's.
const corpus = new Corpus(42);
let t = Date.UTC(2026, 0, 1);
const doc = (i, stream) => {
  const m = corpus.memory(i, stream);
  t += 1000;
  const id =
    Math.floor(t / 1000)
      .toString(16)
      .padStart(8, '0') + (i * 2 + stream).toString(16).padStart(16, '0');
  return {
    id,
    title: m.title ?? null,
    type: m.type,
    scope: m.scope,
    tags: m.tags,
    agent: m.agent ?? null,
    project: m.project ?? null,
    content: m.content,
    createdAt: new Date(t),
    updatedAt: new Date(t),
    version: 1,
    objectKey: `memories/${id}.v1-a.md`,
    author: null,
  };
};

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-insert-cost-'));
  const database = new SqliteDocumentDatabase(path.join(dir, 'memstore.db'), { checkpointer });
  await database.init();
  const idx = database.memories;
  for (let i = 0; i < N; i += 1000) await idx.insertMany(Array.from({ length: Math.min(1000, N - i) }, (_, j) => doc(i + j, 0)));
  const docs = Array.from({ length: INSERTS }, (_, i) => doc(i, 1));
  await new Promise((r) => setTimeout(r, 1000)); // the seeding's WAL folded in first
  if (process.argv.includes('--wal-pages')) {
    const db = database.db;
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('wal_checkpoint(TRUNCATE)');
    const K = 300;
    for (const d of docs.slice(0, K)) await idx.insert(d);
    const pages = db.pragma('wal_checkpoint(PASSIVE)')[0].log;
    console.log(`${K} inserts after ${N} memories: ${(pages / K).toFixed(1)} WAL pages per insert`);
  } else {
    const cpu0 = process.threadCpuUsage ? process.threadCpuUsage() : process.cpuUsage();
    const t0 = performance.now();
    for (let i = 0; i < docs.length; i += BATCH) {
      await Promise.all(docs.slice(i, i + BATCH).map((d) => idx.insert(d)));
      await new Promise((r) => setImmediate(r));
    }
    const wall = (performance.now() - t0) / INSERTS;
    const c = process.threadCpuUsage ? process.threadCpuUsage(cpu0) : process.cpuUsage(cpu0);
    console.log(
      `${INSERTS} inserts after ${N} memories${BATCH > 1 ? ` in batches of ${BATCH}` : ''}, WAL checkpoint ${checkpointer ? 'on the worker thread' : 'on the writing connection'}: ` +
        `${wall.toFixed(3)} ms wall, ${((c.user + c.system) / 1000 / INSERTS).toFixed(3)} ms main-thread CPU ` +
        `(user ${(c.user / 1000 / INSERTS).toFixed(3)}, system ${(c.system / 1000 / INSERTS).toFixed(3)}) per insert`,
    );
  }
  await database.close();
  fs.rmSync(dir, { recursive: true, force: true });
})();
