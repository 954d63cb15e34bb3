#!/usr/bin/env node
/**
 * LongMemEval fusion lab, step 1: for every dev question whose vectors are cached by `npm run eval`
 * (bench/results/lme-cache/), restores the haystack, asks the question in hybrid mode with
 * explain=true, min_score=0, limit=FUSION_CANDIDATES (the candidates a search of limit 10 ranks:
 * a larger limit widens the candidate lists and ranks other ones) and in keyword mode (limit 200,
 * the adapter's BM25 order), and writes them with each turn's session, answer mark,
 * role and length to $LAB_DIR/lme.json (default /tmp/memstore-lme-lab). Needs `npm run build`.
 * Step 2: `node bench/lab/lme-lab.js '[{...}]'`.
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const { load, haystack, importLines } = require('../lib/lme');
const { startService, waitForEmbeddings, search, cli } = require('../lib/service');
const { FUSION_CANDIDATES } = require('../../dist/libs/search-query/index.js');
const ROOT = path.resolve(__dirname, '..', '..');
const LAB = process.env.LAB_DIR || '/tmp/memstore-lme-lab';
const CACHE = path.join(ROOT, 'bench', 'results', 'lme-cache');

async function main() {
  fs.mkdirSync(LAB, { recursive: true });
  const questions = load(path.join(evalDir(), 'longmemeval-s-dev.jsonl.gz'));
  const cached = fs.readdirSync(CACHE);
  const out = [];
  for (const q of questions) {
    const dir = cached.find((d) => d.startsWith(`${q.question_id}-`) && !d.includes('.tmp-'));
    if (!dir) {
      console.log(`  ${q.question_id}: not cached, left out`);
      continue;
    }
    const { jsonl, turns } = haystack(q);
    const lines = jsonl
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-lme-lab-'));
    await cli(dataDir, ['restore', path.join(CACHE, dir), '--data-dir', dataDir]);
    const svc = await startService({ dataDir, removeDir: true });
    try {
      const auth = { authorization: `Bearer ${svc.token}` };
      const ids = await importLines(svc.base, auth, `lme-${q.question_id}.jsonl`, jsonl, 'skipped');
      await waitForEmbeddings(svc.base, auth);
      const byId = new Map(ids.map((id, i) => [id, i]));
      const common = { q: q.question, project: `lme-${q.question_id}` };
      const hybrid = (await search(svc.base, auth, { ...common, limit: String(FUSION_CANDIDATES), mode: 'hybrid', min_score: '0', explain: 'true' })).body;
      const keyword = (await search(svc.base, auth, { ...common, limit: '200', mode: 'keyword' })).body;
      out.push({
        id: q.question_id,
        type: q.question_type,
        abs: q.question_id.endsWith('_abs'),
        question: q.question,
        questionDate: q.question_date,
        answerSessions: q.answer_session_ids,
        turns: turns.map((t, i) => ({ ...t, role: lines[i].title.split(' — ').pop(), len: lines[i].content.length })),
        hybrid: hybrid.rows.map((r) => ({ i: byId.get(r.id), score: r.score, explain: r.explain })),
        keyword: keyword.rows.map((r) => ({ i: byId.get(r.id), score: r.score })),
      });
      console.log(`  ${q.question_id} (${q.question_type}): ${hybrid.rows.length} hybrid candidates, ${keyword.rows.length} keyword rows`);
    } finally {
      await svc.stop();
    }
  }
  fs.writeFileSync(path.join(LAB, 'lme.json'), JSON.stringify(out));
  console.log(`${out.length} questions -> ${path.join(LAB, 'lme.json')}`);
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
