#!/usr/bin/env node
/**
 * `npm run eval`: retrieval quality on the two dev sets of ../shared/eval/ (its README.md has the
 * method): LoCoMo conversations and LongMemEval-S questions. The data is read from outside the
 * repo and never shipped.
 *
 * LoCoMo: starts the built service (dist/src/main.js) on 127.0.0.1 with a fresh temp data dir (or
 * uses --url with --token), stores every dialogue turn as one memory through the API (content
 * "<speaker>: <text>" [+ " [image: <caption>]"], title "<session date> — <speaker>", tags
 * [dia_id], type conversation, project = sample_id; one turn at a time, in order), waits until
 * /api/status says embeddings.pending = 0, then asks every question of categories 1–4 verbatim as
 * `q` with project = its sample_id and limit=10 (--concurrency questions at a time, default 4), in
 * each mode (keyword, semantic, hybrid), and reports R@1/5/10 (share of a question's evidence turns
 * in the top k, averaged), Hit@1/5/10 and MRR@10, overall and per category. Then it asks our own
 * questions about things no conversation mentions (bench/locomo-absent.json; each entry's
 * `absent` words are checked against the conversation first) and reports the share answered with
 * no row.
 *
 * Notes (bench/notes-paraphrase.json and notes-paraphrase-2.json, lib/notes.js; each set in a
 * service of its own): independent notes written in a row, asked about in other words (hit@1/3
 * of the target with the default floor and with min_score=0) and about absent things (share
 * answered with no row).
 *
 * LongMemEval-S: lib/lme.js (one service per question, its haystack imported as JSONL with the
 * session dates; session and turn R@1/5/10 by question type, the empty-answer rate on abstention
 * questions, the newest-first rate on knowledge updates). The vectors of a haystack are computed
 * once and kept as a `memstore backup` under bench/results/lme-cache/ (git-ignored).
 *
 *   npm run eval                                 # build, then LoCoMo + a LongMemEval sample (2 per type + every abstention question)
 *   node bench/eval.js --lme all                 # all 60 LongMemEval questions
 *   node bench/eval.js --sets lme --lme all --modes keyword      # keyword only: no vectors, a few minutes
 *   node bench/eval.js --sets lme --lme-ids e493bb7c,852ce960    # chosen questions
 *   node bench/eval.js --query-date              # pass question_date as query_date (when the build declares it)
 *   node bench/eval.js --sets locomo --dated --query-date   # LoCoMo turns imported with their session times, each
 *                                   # question asked with query_date = its conversation's last session
 *   node bench/eval.js --sets lme --lme-score bench/results/lme-progress-….jsonl   # score the questions a cut-short run finished
 *   node bench/eval.js --eval-dir /path/to/eval  # the two dev files from another directory (default ../shared/eval)
 *   node bench/eval.js --data other.json         # another LoCoMo file of the same format
 *   node bench/eval.js --sets notes --notes a.json,b.json   # other notes sets of the same format
 *   node bench/eval.js --url http://127.0.0.1:PORT --token TOKEN   # LoCoMo on a running service
 *   node bench/eval.js --modes hybrid --json out.json
 * Every run also writes bench/results/eval-<date>-<seq>.json and .md, and latest-eval.md (lib/results.js).
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { evalDir } = require('./lib/eval-dir');
const { expectStatus: expect } = require('./lib/http');
const { evalMarkdown, gitDescribe, writeResults, RESULTS } = require('./lib/results');
const { request, startService, waitForEmbeddings, search } = require('./lib/service');
const { runLme, importLines } = require('./lib/lme');
const { turnsOf, normaliseEvidence } = require('./lib/locomo');
const { runNotes } = require('./lib/notes');

const ROOT = path.resolve(__dirname, '..');
const SETS = ['locomo', 'lme', 'notes'];

function args(argv) {
  const o = {
    sets: SETS,
    data: path.join(evalDir(), 'locomo-dev.json'),
    lmeData: path.join(evalDir(), 'longmemeval-s-dev.jsonl.gz'),
    lme: 'sample',
    lmeIds: null,
    scoreFrom: null,
    cache: path.join(RESULTS, 'lme-cache'),
    absent: path.join(__dirname, 'locomo-absent.json'),
    notes: ['notes-paraphrase.json', 'notes-paraphrase-2.json'].map((f) => path.join(__dirname, f)),
    queryDate: false,
    modes: ['keyword', 'semantic', 'hybrid'],
    concurrency: 4,
    url: null,
    token: null,
    json: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = () => argv[++i];
    if (a === '--eval-dir') {
      const dir = path.resolve(v());
      o.data = path.join(dir, 'locomo-dev.json');
      o.lmeData = path.join(dir, 'longmemeval-s-dev.jsonl.gz');
    } else if (a === '--data') o.data = path.resolve(v());
    else if (a === '--sets') o.sets = v().split(',');
    else if (a === '--notes')
      o.notes = v()
        .split(',')
        .map((f) => path.resolve(f));
    else if (a === '--lme-data') o.lmeData = path.resolve(v());
    else if (a === '--lme') o.lme = v();
    else if (a === '--lme-ids') o.lmeIds = v().split(',');
    else if (a === '--lme-cache') o.cache = path.resolve(v());
    else if (a === '--no-cache') o.cache = null;
    else if (a === '--lme-score')
      o.scoreFrom = v()
        .split(',')
        .map((f) => path.resolve(f));
    else if (a === '--absent') o.absent = path.resolve(v());
    else if (a === '--query-date') o.queryDate = true;
    else if (a === '--dated') o.dated = true;
    else if (a === '--modes') o.modes = v().split(',');
    else if (a === '--concurrency') o.concurrency = Number(v());
    else if (a === '--url') o.url = v().replace(/\/+$/, '');
    else if (a === '--token') o.token = v();
    else if (a === '--json') o.json = v();
    else throw new Error(`unknown option ${a}`);
  }
  for (const s of o.sets) if (!SETS.includes(s)) throw new Error(`--sets takes ${SETS.join(',')}, not ${s}`);
  return o;
}

/** Evidence ids as the README says: split "a; b", fix "D:11:26" and "D30:05", drop unknown ids. */
/** A sample's turns with the memory stored for each (tagged with its turn id, in the conversation's project). */
function memoriesOf(sample) {
  return turnsOf(sample).map((t) => ({ dia_id: t.dia_id, at: t.at, body: { title: t.title, content: t.content, tags: [t.dia_id], type: 'conversation', project: sample.sample_id } }));
}

async function pool(items, n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

/** Our questions about things no LoCoMo conversation mentions; refuses an entry whose `absent` words the conversation holds. */
function absentQuestions(file, samples) {
  if (!fs.existsSync(file)) return [];
  const entries = JSON.parse(fs.readFileSync(file, 'utf8')).questions;
  const text = new Map(
    samples.map((s) => [
      s.sample_id,
      turnsOf(s)
        .map((t) => t.content.toLowerCase())
        .join('\n'),
    ]),
  );
  for (const e of entries) {
    const conv = text.get(e.sample_id);
    if (conv === undefined) throw new Error(`${path.basename(file)}: no conversation ${e.sample_id}`);
    for (const w of e.absent) {
      if (new RegExp(`\\b${w.toLowerCase().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`).test(conv))
        throw new Error(`${path.basename(file)}: "${w}" occurs in ${e.sample_id}, so "${e.question}" is not about an absent thing`);
    }
  }
  return entries;
}

async function runLocomo(o, log) {
  const started = new Date();
  if (!fs.existsSync(o.data)) throw new Error(`no evaluation data at ${o.data} (see ../shared/eval/README.md)`);
  const samples = JSON.parse(fs.readFileSync(o.data, 'utf8'));
  const absent = absentQuestions(o.absent, samples);
  // Keyword only: no vectors to compute or wait for.
  const svc = o.url ? { base: o.url, token: o.token, stop: async () => {} } : await startService({ embeddings: o.modes.every((m) => m === 'keyword') ? 'none' : null });
  const auth = { authorization: `Bearer ${svc.token}` };
  try {
    const status0 = expect(await request(svc.base, 'GET', '/api/status', { headers: auth }), 200, 'status').embeddings;
    log(`embeddings: ${status0 ? `${status0.provider} ${status0.model ?? ''} (${status0.state})` : 'not reported'}`);
    // 1. Store every turn.
    const idToDia = new Map();
    const questions = [];
    let stored = 0;
    const t0 = Date.now();
    // One turn after another, in order, as an agent in a conversation writes them: the embedded
    // text carries the previous memory of the session, and keyword ranking reads each term's newest
    // matches first, so writes in flight together would change vectors and ranks from run to run.
    for (const s of samples) {
      const turns = memoriesOf(s);
      if (o.dated) {
        // --dated: the turns imported with their session times, and each question asked on the conversation's last day.
        const lines = turns.map((t) => JSON.stringify({ ...t.body, ...(t.at ? { created_at: t.at.toISOString(), updated_at: t.at.toISOString() } : {}) })).join('\n');
        const ids = await importLines(svc.base, auth, `${s.sample_id}.jsonl`, `${lines}\n`, 'created');
        turns.forEach((t, i) => idToDia.set(ids[i], `${s.sample_id}/${t.dia_id}`));
        stored += turns.length;
      }
      for (const t of o.dated ? [] : turns) {
        const r = expect(await request(svc.base, 'POST', '/api/memories', { headers: auth, body: t.body }), 201, `store ${s.sample_id} ${t.dia_id}`);
        idToDia.set(r.memory.id, `${s.sample_id}/${t.dia_id}`);
        stored++;
      }
      /** @type {Date | null} */
      let lastSession = null;
      for (const t of turns) if (t.at && (!lastSession || t.at > lastSession)) lastSession = t.at;
      const known = new Set(turns.map((t) => t.dia_id));
      for (const q of s.qa) {
        if (![1, 2, 3, 4].includes(Number(q.category))) continue;
        const evidence = normaliseEvidence(q.evidence ?? [], known).map((d) => `${s.sample_id}/${d}`);
        if (evidence.length === 0) continue;
        questions.push({ sample: s.sample_id, q: q.question, category: Number(q.category), evidence, date: o.dated && o.queryDate && lastSession ? lastSession.toISOString() : undefined });
      }
    }
    log(`stored ${stored} turns in ${((Date.now() - t0) / 1000).toFixed(1)} s; ${questions.length} questions (categories 1-4 with evidence)`);
    // 2. Wait for the embeddings.
    const t1 = Date.now();
    await waitForEmbeddings(svc.base, auth, 30 * 60_000);
    log(`embeddings done ${((Date.now() - t1) / 1000).toFixed(1)} s after the last write (${((stored / Math.max(1, Date.now() - t0)) * 1000).toFixed(0)} memories/s stored and embedded)`);
    // 3. Ask.
    const report = {};
    const absentReport = {};
    for (const mode of o.modes) {
      const per = [];
      await pool(questions, o.concurrency, async (q, i) => {
        const { body } = await search(svc.base, auth, { q: q.q, project: q.sample, limit: '10', mode, ...(q.date ? { query_date: q.date } : {}) });
        const got = body.rows.map((r) => idToDia.get(r.id));
        per[i] = { q, got, ran: body.search_mode ?? 'keyword' };
      });
      report[mode] = score(per);
      report[mode].ran = [...new Set(per.map((p) => p.ran))].join(',');
      // Questions about absent things: a good search returns no row.
      const rows = [];
      await pool(absent, o.concurrency, async (a, i) => {
        rows[i] = (await search(svc.base, auth, { q: a.question, project: a.sample_id, limit: '10', mode })).body.rows.length;
      });
      if (absent.length)
        absentReport[mode] = {
          n: absent.length,
          emptyRate: Number((rows.filter((n) => n === 0).length / absent.length).toFixed(3)),
          meanRows: Number((rows.reduce((s, n) => s + n, 0) / absent.length).toFixed(2)),
        };
    }
    print(report);
    if (absent.length)
      log(
        `\nAbsent-thing questions (${absent.length}, ${path.relative(ROOT, o.absent)}), share answered with no row: ${Object.entries(absentReport)
          .map(([m, a]) => `${m} ${a.emptyRate.toFixed(3)}`)
          .join(', ')}`,
      );
    return {
      report,
      absent: absent.length ? absentReport : null,
      meta: {
        startedAt: started.toISOString(),
        data: path.relative(ROOT, o.data).startsWith('../..') ? o.data : path.relative(ROOT, o.data),
        questions: questions.length,
        embeddings: status0 ?? null,
        wallSeconds: Math.round((Date.now() - started.getTime()) / 1000),
      },
    };
  } finally {
    await svc.stop();
  }
}

async function main() {
  const o = args(process.argv.slice(2));
  const started = new Date();
  const loadAvgStart = os.loadavg();
  const log = (/** @type {string} */ m) => console.log(m);
  const locomo = o.sets.includes('locomo') ? await runLocomo(o, log) : null;
  let lme = null;
  if (o.sets.includes('lme')) {
    const progress = o.scoreFrom ? null : path.join(RESULTS, `lme-progress-${started.toISOString().replace(/[:.]/g, '-')}-${process.pid}.jsonl`);
    if (progress) fs.mkdirSync(RESULTS, { recursive: true });
    lme = await runLme({ file: o.lmeData, spec: o.lme, ids: o.lmeIds, modes: o.modes, cache: o.cache, queryDate: o.queryDate, progress, scoreFrom: o.scoreFrom }, log);
    printLme(lme);
  }
  const notes = [];
  if (o.sets.includes('notes')) for (const file of o.notes) notes.push(await runNotes({ file, modes: o.modes }, log));
  const meta = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    commit: o.url ? `a running service at ${o.url} (LoCoMo); ${gitDescribe()} (LongMemEval)` : gitDescribe(),
    loadAvgStart,
    loadAvgEnd: os.loadavg(),
    wallSeconds: Math.round((Date.now() - started.getTime()) / 1000),
    data: locomo?.meta.data ?? null,
    questions: locomo?.meta.questions ?? 0,
    embeddings: locomo?.meta.embeddings ?? null,
  };
  const out = { ...meta, modes: locomo?.report ?? {}, absent: locomo?.absent ?? null, locomoSeconds: locomo?.meta.wallSeconds ?? null, lme, notes: notes.length > 0 ? notes : null };
  if (o.json) fs.writeFileSync(o.json, JSON.stringify(out, null, 2));
  const written = writeResults('eval', started, out, evalMarkdown(out.modes, meta, { absent: out.absent, lme, notes: out.notes }));
  log(`\nResults: ${path.relative(ROOT, written.mdFile)} (also ${path.relative(ROOT, written.latest)}), ${path.relative(ROOT, written.jsonFile)}; wall time ${meta.wallSeconds} s`);
}

function score(per) {
  const agg = () => ({ n: 0, r1: 0, r5: 0, r10: 0, h1: 0, h5: 0, h10: 0, mrr: 0 });
  const all = agg();
  const byCat = {};
  for (const { q, got } of per) {
    const ev = new Set(q.evidence);
    const rec = (k) => got.slice(0, k).filter((g) => ev.has(g)).length / ev.size;
    const hit = (k) => (got.slice(0, k).some((g) => ev.has(g)) ? 1 : 0);
    const first = got.findIndex((g) => ev.has(g));
    for (const a of [all, (byCat[q.category] ??= agg())]) {
      a.n++;
      a.r1 += rec(1);
      a.r5 += rec(5);
      a.r10 += rec(10);
      a.h1 += hit(1);
      a.h5 += hit(5);
      a.h10 += hit(10);
      a.mrr += first >= 0 && first < 10 ? 1 / (first + 1) : 0;
    }
  }
  const fin = (a) => Object.fromEntries(Object.entries(a).map(([k, v]) => [k, k === 'n' ? v : Number((v / Math.max(1, a.n)).toFixed(3))]));
  return { ...fin(all), byCategory: Object.fromEntries(Object.entries(byCat).map(([k, v]) => [k, fin(v)])) };
}

function print(report) {
  console.log('\nmode      ran       n    R@1    R@5    R@10   Hit@1  Hit@5  Hit@10 MRR@10');
  for (const [mode, r] of Object.entries(report)) {
    const f = (v) => v.toFixed(3).padStart(6);
    console.log(`${mode.padEnd(9)} ${String(r.ran).padEnd(9)} ${String(r.n).padStart(3)} ${f(r.r1)} ${f(r.r5)} ${f(r.r10)} ${f(r.h1)} ${f(r.h5)} ${f(r.h10)} ${f(r.mrr)}`);
  }
  console.log('\nR@5 by category (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop):');
  for (const [mode, r] of Object.entries(report)) {
    console.log(
      `${mode.padEnd(9)} ${Object.entries(r.byCategory)
        .map(([c, v]) => `${c}: ${v.r5.toFixed(3)} (n=${v.n})`)
        .join('  ')}`,
    );
  }
}

function printLme(lme) {
  const f = (v) => v.toFixed(3).padStart(6);
  console.log(`\nLongMemEval-S: ${lme.meta.questions} questions (${lme.meta.spec}), ${lme.meta.turns} turns, ${lme.meta.fromCache} from the vector cache, ${lme.meta.wallSeconds} s`);
  console.log('mode      type                        n   sR@1   sR@5  sR@10   tR@1   tR@5  tR@10  empty');
  for (const [mode, r] of Object.entries(lme.modes)) {
    for (const [type, a] of [['all answerable', r.answerable], ...Object.entries(r.byType)]) {
      console.log(
        `${mode.padEnd(9)} ${type.padEnd(26)} ${String(a.n).padStart(3)} ${f(a.session.r1)} ${f(a.session.r5)} ${f(a.session.r10)} ${f(a.turn.r1)} ${f(a.turn.r5)} ${f(a.turn.r10)} ${f(a.emptyRate)}`,
      );
    }
    console.log(
      `${mode.padEnd(9)} abstention: ${r.abstention.emptyRate.toFixed(3)} answered with no row (n=${r.abstention.n}); knowledge update newest first: ${r.knowledgeUpdate.newestFirstRate.toFixed(3)} (n=${r.knowledgeUpdate.n}), when newest and older both in the top 10: ${r.knowledgeUpdate.newestAboveOlderRate.toFixed(3)} (n=${r.knowledgeUpdate.nBoth})`,
    );
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
