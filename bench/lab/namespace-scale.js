#!/usr/bin/env node
/**
 * Issue 43 "small namespace in a big store" (decision 0106): keyword search in a namespace of
 * 1,000 memories inside a store of N memories spread over N/1,000 namespaces, against the same
 * 1,000 memories alone in a store of 1,000. Two services run side by side on the embedded default
 * (SQLite + filesystem), keyword-only (MEMSTORE_EMBEDDING_PROVIDER=none: no vector to compute for
 * N memories), each seeded by one JSONL import per namespace. The target namespace is the middle
 * one of the big store; its memories are the same corpus lines in both stores. Queries are the
 * bench corpus's query kinds (bench/lib/corpus.js), kept only when every word occurs in the
 * target namespace. Requests go one at a time; the two stores take turns in rounds (order swapped
 * every round) so a busy moment on the shared machine hits both. Every answer must hold only
 * memories of the target namespace (else exit 1). Needs `npm run build` (dist/).
 *
 *   node bench/lab/namespace-scale.js [--n 100000] [--rounds 6] [--per-round 80] [--json out.json]
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { Corpus, CORPUS_VERSION } = require('../lib/corpus');
const { request, startService } = require('../lib/service');
const { NS_SIZE, nsName, namespaceJsonl, importPath, vocabularyOf, queryClasses } = require('../lib/namespaces');

function args() {
  const o = { n: 100_000, rounds: 6, perRound: 80, json: null };
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i++) {
    const v = a[i + 1];
    if (a[i] === '--n') o.n = Number(v);
    else if (a[i] === '--rounds') o.rounds = Number(v);
    else if (a[i] === '--per-round') o.perRound = Number(v);
    else if (a[i] === '--json') o.json = v;
    else throw new Error(`unknown argument ${a[i]} (see the header of ${path.basename(__filename)})`);
    i++;
  }
  if (!Number.isInteger(o.n) || o.n < 2 * NS_SIZE || o.n % NS_SIZE !== 0) throw new Error(`--n must be a multiple of ${NS_SIZE}, at least ${2 * NS_SIZE}`);
  return o;
}

const log = (...m) => console.log(new Date().toISOString().slice(11, 19), ...m);

/** Imports corpus memories [from, from + NS_SIZE) into namespace `ns` (one JSONL request). */
async function seedNamespace(svc, corpus, ns, from) {
  const headers = { authorization: `Bearer ${svc.token}`, 'x-memory-namespace': ns, 'content-type': 'application/x-ndjson' };
  const res = await request(svc.base, 'POST', importPath(ns), { headers, rawBody: namespaceJsonl(corpus, from) });
  if (res.status !== 200 || res.body?.created !== NS_SIZE) throw new Error(`import into ${ns}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
}

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

async function search(svc, ns, q) {
  const t0 = process.hrtime.bigint();
  const res = await request(svc.base, 'GET', `/api/memories?${new URLSearchParams({ q, mode: 'keyword' })}`, {
    headers: { authorization: `Bearer ${svc.token}`, 'x-memory-namespace': ns },
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.status !== 200) throw new Error(`search ${q}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
  return { ms, rows: res.body.rows, total: res.body.total };
}

async function main() {
  const o = args();
  const corpus = new Corpus(42);
  const spaces = o.n / NS_SIZE;
  const target = Math.floor(spaces / 2);
  const targetNs = nsName(target);
  const from = target * NS_SIZE;
  log(`corpus v${CORPUS_VERSION}: big store ${o.n} memories in ${spaces} namespaces, small store ${NS_SIZE}; target ${targetNs} (corpus lines ${from}..${from + NS_SIZE - 1})`);

  const opts = { embeddings: 'none', namespaces: ['*'] };
  const small = await startService(opts);
  const big = await startService(opts);
  try {
    let t0 = Date.now();
    await seedNamespace(small, corpus, targetNs, from);
    log(`small store seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    t0 = Date.now();
    for (let k = 0; k < spaces; k++) {
      await seedNamespace(big, corpus, nsName(k), k * NS_SIZE);
      if ((k + 1) % 10 === 0 || k === spaces - 1) log(`big store: ${(k + 1) * NS_SIZE} memories, ${(((k + 1) * NS_SIZE) / ((Date.now() - t0) / 1000)).toFixed(0)}/s`);
    }
    const seedSeconds = (Date.now() - t0) / 1000;

    const classes = queryClasses(corpus, vocabularyOf(corpus, from));
    const stores = { small, big };
    const lat = {};
    const hits = {};
    let foreign = 0;
    let sameCount = 0;
    let compared = 0;
    for (const kind of Object.keys(classes)) {
      if (classes[kind].length === 0) throw new Error(`no ${kind} query has all its words in ${targetNs}`);
      // Warm-up (statement caches, page cache), and the check that both stores count the same matches.
      for (const q of classes[kind]) {
        const a = await search(small, targetNs, q);
        const b = await search(big, targetNs, q);
        compared++;
        if (a.total === b.total) sameCount++;
      }
      lat[kind] = { small: [], big: [] };
      hits[kind] = { small: 0, big: 0 };
    }
    log(
      `queries: ${Object.entries(classes)
        .map(([k, v]) => `${k} ${v.length}`)
        .join(', ')}; same total in both stores for ${sameCount}/${compared}`,
    );

    for (let r = 0; r < o.rounds; r++) {
      const order = r % 2 === 0 ? ['small', 'big'] : ['big', 'small'];
      for (const which of order)
        for (const [kind, qs] of Object.entries(classes))
          for (let i = 0; i < o.perRound; i++) {
            const q = qs[(r * o.perRound + i) % qs.length];
            const { ms, rows } = await search(stores[which], targetNs, q);
            lat[kind][which].push(ms);
            hits[kind][which] += rows.length;
            foreign += rows.filter((m) => m.namespace !== targetNs).length; // a row without its namespace counts as foreign too
          }
      log(`round ${r + 1}/${o.rounds} done`);
    }

    const report = { n: o.n, namespaces: spaces, nsSize: NS_SIZE, target: targetNs, seedSeconds, rounds: o.rounds, perRound: o.perRound, foreign, classes: {} };
    const all = { small: [], big: [] };
    console.log(`\nkeyword search in a ${NS_SIZE}-memory namespace: store of ${NS_SIZE} vs store of ${o.n} (${spaces} namespaces), ms`);
    console.log(
      `${'class'.padEnd(10)} ${'queries'.padStart(7)} ${'n'.padStart(5)}  ${'small p50'.padStart(9)} ${'p99'.padStart(7)}  ${'big p50'.padStart(9)} ${'p99'.padStart(7)}  ${'x p50'.padStart(6)} ${'x p99'.padStart(6)}  hits/q`,
    );
    const row = (name, count, s, b, h) => {
      s.sort((x, y) => x - y);
      b.sort((x, y) => x - y);
      const r = { queries: count, samples: s.length, small: { p50: pct(s, 50), p99: pct(s, 99) }, big: { p50: pct(b, 50), p99: pct(b, 99) } };
      r.ratioP50 = r.big.p50 / r.small.p50;
      r.ratioP99 = r.big.p99 / r.small.p99;
      const f = (v) => v.toFixed(2);
      console.log(
        `${name.padEnd(10)} ${String(count).padStart(7)} ${String(s.length).padStart(5)}  ${f(r.small.p50).padStart(9)} ${f(r.small.p99).padStart(7)}  ${f(r.big.p50).padStart(9)} ${f(r.big.p99).padStart(7)}  ${f(r.ratioP50).padStart(6)} ${f(r.ratioP99).padStart(6)}  ${h ?? ''}`,
      );
      return r;
    };
    for (const [kind, qs] of Object.entries(classes)) {
      const h = `${(hits[kind].small / lat[kind].small.length).toFixed(1)} / ${(hits[kind].big / lat[kind].big.length).toFixed(1)}`;
      all.small.push(...lat[kind].small);
      all.big.push(...lat[kind].big);
      report.classes[kind] = row(kind, qs.length, lat[kind].small, lat[kind].big, h);
    }
    report.classes.all = row(
      'all',
      Object.values(classes).reduce((a, q) => a + q.length, 0),
      all.small,
      all.big,
      null,
    );
    console.log(`answers holding a memory of another namespace: ${foreign}`);
    console.log(`big store seeding: ${seedSeconds.toFixed(0)} s (${(o.n / seedSeconds).toFixed(0)} memories/s, JSONL import per namespace)`);
    if (o.json) fs.writeFileSync(o.json, JSON.stringify(report, null, 2) + '\n');
    if (foreign > 0) process.exitCode = 1;
  } finally {
    await Promise.allSettled([small.stop(), big.stop()]);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
