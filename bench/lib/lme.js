'use strict';
/**
 * LongMemEval-S (../shared/eval/README.md) for `npm run eval`: per question, its haystack of ~500
 * chat turns goes into a service of its own (a fresh data directory, so keyword statistics and the
 * vector index hold that haystack alone, as in the benchmark, whichever questions a run picks),
 * through the JSONL import (which keeps created_at), then the question is asked verbatim with
 * project lme-<question_id> and limit=10 in each mode.
 *
 * Memories: content = the turn's text, title "<session date> — <role>", tags [session id], type
 * conversation, project lme-<question_id>, created_at = the session's date plus the turn's index in
 * its session in seconds (the import writes up to 8 lines at once, so equal dates would leave the
 * turns' order, and with it each vector's session context, to chance). Empty turns are left out
 * (the API refuses empty content); the count is reported.
 *
 * Vectors cost most of a run (~500 turns a question), so a haystack whose vectors were computed
 * once is kept as a `memstore backup` of its data directory under bench/results/lme-cache/ and
 * restored with `memstore restore` next time: the product's own paths, and the service itself
 * decides whether the stored vectors belong to its vector space (a model or embedded-text change
 * makes it re-embed them). The cache key also holds the haystack's JSONL, the files of the
 * embedding code in dist/src/embeddings and the model files (see cacheKey).
 */
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { ROOT, request, startService, waitForEmbeddings, searchAccepts, search, cli } = require('./service');

/** Bump when the way a haystack is stored changes (invalidates the cache). */
const METHOD = 'lme-import-1';
const TYPES = ['single-session-user', 'single-session-assistant', 'single-session-preference', 'multi-session', 'temporal-reasoning', 'knowledge-update'];

function load(file) {
  const text = zlib.gunzipSync(fs.readFileSync(file)).toString('utf8');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

const isAbs = (q) => q.question_id.endsWith('_abs');
const hash = (s) => crypto.createHash('sha256').update(s).digest('hex');

/**
 * The questions a run asks: 'all'; 'sample' = 2 per type; a number N = N per type. A sample takes,
 * per type, the answerable questions with the smallest sha256(question_id) (deterministic, and
 * the same on every machine), plus every abstention question; `ids` picks questions by id instead.
 * They are returned round-robin over the strata (each type, then abstention: first the first of
 * each, then the second...), so a run cut short still covers every type.
 */
function pick(questions, spec, ids) {
  const strata = [...TYPES.map((t) => questions.filter((q) => q.question_type === t && !isAbs(q))), questions.filter(isAbs)].map((list) =>
    list.slice().sort((a, b) => hash(a.question_id).localeCompare(hash(b.question_id))),
  );
  let keep;
  if (ids) {
    const want = new Set(ids);
    const missing = ids.filter((id) => !questions.some((q) => q.question_id === id));
    if (missing.length) throw new Error(`no LongMemEval question ${missing.join(', ')}`);
    keep = (q) => want.has(q.question_id);
  } else if (spec === 'all') keep = () => true;
  else {
    const per = spec === 'sample' ? 2 : Number(spec);
    if (!Number.isInteger(per) || per < 0) throw new Error(`--lme takes sample, all or a number per type, not ${spec}`);
    const chosen = new Set(strata.flatMap((list, i) => (i < TYPES.length ? list.slice(0, per) : list)).map((q) => q.question_id));
    keep = (q) => chosen.has(q.question_id);
  }
  const kept = strata.map((list) => list.filter(keep));
  const out = [];
  for (let round = 0; out.length < kept.reduce((s, l) => s + l.length, 0); round++) for (const list of kept) if (list[round]) out.push(list[round]);
  return out;
}

/** "2023/05/20 (Sat) 02:21" → Date (UTC). */
function parseDate(s) {
  const m = /^(\d{4})\/(\d{2})\/(\d{2}) \(\w+\) (\d{2}):(\d{2})$/.exec(s);
  if (!m) throw new Error(`unexpected LongMemEval date ${JSON.stringify(s)}`);
  return new Date(Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]));
}

/** The haystack as JSONL lines and, per line, the turn it holds. */
function haystack(q) {
  const lines = [];
  const turns = [];
  let empty = 0;
  q.haystack_sessions.forEach((session, si) => {
    const sid = q.haystack_session_ids[si];
    const dateText = q.haystack_dates[si];
    const date = parseDate(dateText);
    session.forEach((t, ti) => {
      if (typeof t.content !== 'string' || t.content.trim() === '') {
        empty++;
        return;
      }
      const created = new Date(date.getTime() + ti * 1000).toISOString();
      lines.push(
        JSON.stringify({ title: `${dateText} — ${t.role}`, content: t.content, tags: [sid], type: 'conversation', project: `lme-${q.question_id}`, created_at: created, updated_at: created }),
      );
      turns.push({ session: sid, sessionIndex: si, date: date.getTime(), answer: t.has_answer === true });
    });
  });
  return { jsonl: lines.join('\n') + '\n', turns, empty };
}

/**
 * For the labs: a question's haystack as the memories it imports (one object per line), the query
 * words each holds (the built service's termMatcher) and each query word's count over them (the
 * adapter's document counts).
 */
function questionWords(q) {
  const sq = require(path.join(ROOT, 'dist/libs/search-query/index.js'));
  const lines = haystack(q)
    .jsonl.trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const match = sq.termMatcher(q.question);
  const found = lines.map((l) => match(l.title, l.tags, l.content).words);
  const df = new Map(sq.matchWords(sq.parseSearchQuery(q.question)).map((w) => [w, 0]));
  for (const words of found) for (const w of words) if (df.has(w)) df.set(w, df.get(w) + 1);
  return { lines, found, df };
}

/** What the vectors of a haystack depend on, besides its text: the embedding code and model files of the build. */
function embeddingFingerprint() {
  const h = crypto.createHash('sha256');
  const dir = path.join(ROOT, 'dist', 'src', 'embeddings');
  for (const f of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.js'))
    .sort())
    h.update(f).update(fs.readFileSync(path.join(dir, f)));
  const modelDir = process.env.MEMSTORE_EMBEDDING_MODEL_DIR || path.join(ROOT, 'models', 'bge-small-en-v1.5-q');
  for (const f of ['model.json', 'tokenizer.json', 'model.onnx']) {
    const p = path.join(modelDir, f);
    if (fs.existsSync(p))
      h.update(f)
        .update(String(fs.statSync(p).size))
        .update(f === 'model.onnx' ? '' : fs.readFileSync(p));
  }
  return h.digest('hex').slice(0, 16);
}

/** Imports `jsonl` (one request); returns the memory id of each line, in order. */
async function importLines(base, auth, name, jsonl, expected) {
  const qs = new URLSearchParams({ format: 'jsonl', filename: name, progress: 'true', on_conflict: 'skip' });
  const res = await request(base, 'POST', `/api/import?${qs}`, { headers: { ...auth, 'content-type': 'application/x-ndjson' }, rawBody: Buffer.from(jsonl) });
  if (res.status !== 200) throw new Error(`import ${name}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
  const ids = [];
  for (const l of res.text.split('\n')) {
    if (!l.trim()) continue;
    const m = JSON.parse(l);
    if (m.type === 'error') throw new Error(`import ${name}: ${JSON.stringify(m)}`);
    if (m.type !== 'item') continue;
    const line = Number(/:(\d+)$/.exec(m.file)?.[1]);
    if (m.status !== expected) throw new Error(`import ${name}: line ${line} ${m.status} (${m.reason}), ${expected} expected`);
    ids[line - 1] = m.id;
  }
  return ids;
}

/**
 * One question: its haystack in a service of its own, the question asked in each mode.
 * Returns { q, perMode: { mode: { got: turn indexes, ran } }, source }.
 */
async function runQuestion(q, o, log) {
  const { jsonl, turns, empty } = haystack(q);
  const needVectors = o.modes.some((m) => m !== 'keyword');
  const name = `lme-${q.question_id}.jsonl`;
  let svc;
  let source;
  let ids;
  const t0 = Date.now();
  const cacheDir = needVectors && o.cache ? path.join(o.cache, `${q.question_id}-${hash(`${METHOD}\n${o.fingerprint}\n${jsonl}`).slice(0, 16)}`) : null;
  try {
    if (cacheDir && fs.existsSync(path.join(cacheDir, 'backup.json'))) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-eval-lme-'));
      await cli(dataDir, ['restore', cacheDir, '--data-dir', dataDir]);
      svc = await startService({ dataDir, removeDir: true });
      // The same lines again: every one must be found unchanged (checks the restored store, gives each line's id).
      ids = await importLines(svc.base, { authorization: `Bearer ${svc.token}` }, name, jsonl, 'skipped');
      source = 'cache';
    } else {
      svc = await startService({ embeddings: needVectors ? null : 'none' });
      ids = await importLines(svc.base, { authorization: `Bearer ${svc.token}` }, name, jsonl, 'created');
      source = 'import';
    }
    const auth = { authorization: `Bearer ${svc.token}` };
    const tImported = Date.now();
    const e = await waitForEmbeddings(svc.base, auth);
    const tEmbedded = Date.now();
    if (needVectors && e?.state === 'keyword-only') throw new Error(`the service is keyword-only (${e.reason}): ${o.modes.join(',')} needs vectors`);
    if (cacheDir && (source === 'import' || tEmbedded - tImported > 2000)) {
      // New vectors (or the restored ones were re-embedded): keep them for the next run.
      const tmp = `${cacheDir}.tmp-${process.pid}`;
      fs.rmSync(tmp, { recursive: true, force: true });
      fs.mkdirSync(path.dirname(tmp), { recursive: true });
      await cli(svc.dataDir, ['backup', tmp]);
      fs.rmSync(cacheDir, { recursive: true, force: true });
      fs.renameSync(tmp, cacheDir);
    }
    const byId = new Map(ids.map((id, i) => [id, i]));
    const useDate = o.queryDate && (await searchAccepts(svc.base, 'query_date'));
    const perMode = {};
    for (const mode of o.modes) {
      const params = { q: q.question, project: `lme-${q.question_id}`, limit: '10', mode };
      if (useDate) params.query_date = parseDate(q.question_date).toISOString();
      const { body, tries } = await search(svc.base, auth, params);
      perMode[mode] = { got: body.rows.map((r) => byId.get(r.id) ?? -1), ran: body.search_mode ?? 'keyword', tries };
    }
    log(
      `  ${q.question_id} (${q.question_type}): ${turns.length} turns${empty ? ` (+${empty} empty left out)` : ''} from ${source} in ${((tImported - t0) / 1000).toFixed(1)} s, embeddings ${((tEmbedded - tImported) / 1000).toFixed(1)} s` +
        `${o.queryDate ? (useDate ? ', query_date passed' : ', query_date not accepted by this build') : ''}; ` +
        o.modes.map((m) => `${m}: ${perMode[m].got.length} rows${perMode[m].ran !== m ? ` (ran ${perMode[m].ran})` : ''}${perMode[m].tries > 1 ? ` (${perMode[m].tries} tries)` : ''}`).join(', '),
    );
    return { q, turns, perMode, source, empty, queryDate: Boolean(useDate), seconds: { load: (tImported - t0) / 1000, embed: (tEmbedded - tImported) / 1000 } };
  } finally {
    await svc?.stop();
  }
}

/**
 * Scores of one mode. Answerable questions: session R@k (share of answer sessions with a turn in
 * the top k), turn R@k (share of has_answer turns in the top k; questions that mark them), and
 * the share answered with no row. Abstention questions (_abs): the share answered with no row.
 * Knowledge updates: newest-first (see newestFirst).
 */
function score(results, mode) {
  const agg = () => ({ n: 0, s1: 0, s5: 0, s10: 0, nTurn: 0, t1: 0, t5: 0, t10: 0, empty: 0 });
  const all = agg();
  const byType = {};
  const abs = { n: 0, empty: 0, byType: {} };
  const ku = { n: 0, newestFirst: 0, both: 0, newestAboveOlder: 0 };
  for (const r of results) {
    const { q, turns } = r;
    const got = r.perMode[mode].got;
    if (isAbs(q)) {
      abs.n++;
      const e = got.length === 0 ? 1 : 0;
      abs.empty += e;
      const t = (abs.byType[q.question_type] ??= { n: 0, empty: 0 });
      t.n++;
      t.empty += e;
      continue;
    }
    const answerSessions = new Set(q.answer_session_ids);
    const sessRec = (k) =>
      new Set(
        got
          .slice(0, k)
          .filter((i) => i >= 0 && answerSessions.has(turns[i].session))
          .map((i) => turns[i].session),
      ).size / answerSessions.size;
    const answerTurns = turns.filter((t) => t.answer).length;
    const turnRec = (k) => got.slice(0, k).filter((i) => i >= 0 && turns[i].answer).length / answerTurns;
    for (const a of [all, (byType[q.question_type] ??= agg())]) {
      a.n++;
      a.s1 += sessRec(1);
      a.s5 += sessRec(5);
      a.s10 += sessRec(10);
      a.empty += got.length === 0 ? 1 : 0;
      if (answerTurns > 0) {
        a.nTurn++;
        a.t1 += turnRec(1);
        a.t5 += turnRec(5);
        a.t10 += turnRec(10);
      }
    }
    if (q.question_type === 'knowledge-update') {
      const nf = newestFirst(q, turns, got);
      if (nf === null) continue;
      ku.n++;
      ku.newestFirst += nf.newestFirst ? 1 : 0;
      if (nf.both) {
        ku.both++;
        ku.newestAboveOlder += nf.newestFirst ? 1 : 0;
      }
    }
  }
  const r3 = (v) => Number(v.toFixed(3));
  const fin = (a) => ({
    n: a.n,
    session: { r1: r3(a.s1 / Math.max(1, a.n)), r5: r3(a.s5 / Math.max(1, a.n)), r10: r3(a.s10 / Math.max(1, a.n)) },
    nTurn: a.nTurn,
    turn: { r1: r3(a.t1 / Math.max(1, a.nTurn)), r5: r3(a.t5 / Math.max(1, a.nTurn)), r10: r3(a.t10 / Math.max(1, a.nTurn)) },
    emptyRate: r3(a.empty / Math.max(1, a.n)),
  });
  const ran = [...new Set(results.map((r) => r.perMode[mode].ran))].join(',');
  const retried = results.filter((r) => r.perMode[mode].tries > 1).length;
  return {
    ran,
    retried,
    answerable: fin(all),
    byType: Object.fromEntries(TYPES.filter((t) => byType[t]).map((t) => [t, fin(byType[t])])),
    abstention: { n: abs.n, emptyRate: r3(abs.empty / Math.max(1, abs.n)), byType: Object.fromEntries(Object.entries(abs.byType).map(([t, v]) => [t, { n: v.n, emptyRate: r3(v.empty / v.n) }])) },
    knowledgeUpdate: {
      n: ku.n,
      newestFirstRate: r3(ku.newestFirst / Math.max(1, ku.n)),
      nBoth: ku.both,
      newestAboveOlderRate: r3(ku.newestAboveOlder / Math.max(1, ku.both)),
    },
  };
}

/**
 * "Newest statement first" on a knowledge-update question whose answer sessions have at least two
 * different dates (else null). A session's rank is the best position in the top 10 of its
 * has_answer turns (of any of its turns when it marks none); absent = below the top 10.
 * newestFirst: the latest-dated answer session is in the top 10 and ranks above every older answer
 * session. both: the newest and at least one older answer session are both in the top 10.
 */
function newestFirst(q, turns, got) {
  const dates = new Map();
  for (const t of turns) if (q.answer_session_ids.includes(t.session)) dates.set(t.session, t.date);
  const distinct = [...new Set(dates.values())];
  if (distinct.length < 2) return null;
  const latest = Math.max(...distinct);
  const marks = new Set(turns.filter((t) => t.answer).map((t) => t.session));
  const rank = (sid) => {
    const i = got.findIndex((g) => g >= 0 && turns[g].session === sid && (turns[g].answer || !marks.has(sid)));
    return i < 0 ? Infinity : i;
  };
  const newest = Math.min(...[...dates].filter(([, d]) => d === latest).map(([s]) => rank(s)));
  const older = Math.min(...[...dates].filter(([, d]) => d < latest).map(([s]) => rank(s)));
  return { newestFirst: newest < Infinity && newest < older, both: newest < Infinity && older < Infinity };
}

/** Runs the picked questions one after another (each its own service); returns { meta, modes }. */
/**
 * Runs the picked questions one after another (each its own service); returns { meta, modes,
 * perQuestion }. Each question's rows are also appended to `o.progress` (JSONL) as soon as it is
 * done, so a long run cut short can still be scored (`o.scoreFrom`: score such files instead of
 * running anything).
 */
async function runLme(o, log) {
  if (!fs.existsSync(o.file)) throw new Error(`no LongMemEval data at ${o.file} (see ../shared/eval/README.md)`);
  const all = load(o.file);
  const t0 = Date.now();
  const results = [];
  let picked;
  const fingerprint = embeddingFingerprint();
  if (o.scoreFrom) {
    const byId = new Map(all.map((q) => [q.question_id, q]));
    for (const file of o.scoreFrom) {
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const r = JSON.parse(line);
        const q = byId.get(r.id);
        if (!q) throw new Error(`${file}: no LongMemEval question ${r.id}`);
        if (results.some((x) => x.q.question_id === r.id)) continue;
        const h = haystack(q);
        results.push({ q, turns: h.turns, empty: h.empty, perMode: r.perMode, source: r.source, queryDate: r.queryDate, seconds: r.seconds });
      }
    }
    const modes = new Set(results.map((r) => Object.keys(r.perMode).join(',')));
    if (modes.size !== 1) throw new Error(`the progress files hold different modes: ${[...modes].join(' / ')}`);
    o = { ...o, modes: [...modes][0].split(',') };
    picked = results.map((r) => r.q);
    log(`LongMemEval-S: scoring ${results.length} questions from ${o.scoreFrom.join(', ')}`);
  } else {
    picked = pick(all, o.spec, o.ids);
    log(
      `LongMemEval-S: ${picked.length} of ${all.length} questions (${o.ids ? 'by id' : o.spec}), modes ${o.modes.join(',')}${o.modes.some((m) => m !== 'keyword') ? `, vector cache ${o.cache ?? 'off'}` : ', keyword-only service (no vectors)'}${o.progress ? `; each question's rows go to ${path.relative(ROOT, o.progress)}` : ''}`,
    );
    for (const q of picked) {
      const r = await runQuestion(q, { ...o, fingerprint }, log);
      results.push(r);
      if (o.progress) fs.appendFileSync(o.progress, JSON.stringify({ id: q.question_id, perMode: r.perMode, source: r.source, queryDate: r.queryDate, seconds: r.seconds }) + '\n');
    }
  }
  const modes = Object.fromEntries(o.modes.map((m) => [m, score(results, m)]));
  const meta = {
    questions: picked.length,
    spec: o.scoreFrom ? `scored from ${o.scoreFrom.map((f) => path.basename(f)).join(', ')}` : o.ids ? `ids ${o.ids.join(',')}` : o.spec,
    ids: picked.map((q) => q.question_id),
    turns: results.reduce((s, r) => s + r.turns.length, 0),
    emptyTurnsLeftOut: results.reduce((s, r) => s + r.empty, 0),
    fromCache: results.filter((r) => r.source === 'cache').length,
    queryDate: o.queryDate || o.scoreFrom ? `${results.filter((r) => r.queryDate).length} of ${results.length} searches` : 'off',
    wallSeconds: o.scoreFrom ? Math.round(results.reduce((s, r) => s + r.seconds.load + r.seconds.embed, 0)) : Math.round((Date.now() - t0) / 1000),
    loadSeconds: Math.round(results.reduce((s, r) => s + r.seconds.load, 0)),
    embedSeconds: Math.round(results.reduce((s, r) => s + r.seconds.embed, 0)),
    embeddingFingerprint: fingerprint,
  };
  return {
    meta,
    modes,
    perQuestion: results.map((r) => ({ id: r.q.question_id, type: r.q.question_type, source: r.source, rows: Object.fromEntries(Object.entries(r.perMode).map(([m, v]) => [m, v.got.length])) })),
  };
}

module.exports = { runLme, importLines, pick, load, haystack, questionWords, score, TYPES };
