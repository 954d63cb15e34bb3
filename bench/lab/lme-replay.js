#!/usr/bin/env node
/**
 * LongMemEval ranking replay: runs the service's own ranking step (dist relevance.js) over the
 * candidates lme-collect.js kept ($LAB_DIR/lme.json), with variants of its RELEVANCE constants,
 * and scores them like bench/eval.js (session and turn R@5, turn R@1, by type; answerable and
 * abstention questions answered with no row). Unlike lme-lab.js's re-implemented score it follows
 * every rule of the service; the word counts are the haystack's (termMatcher), close to the
 * adapter's. `sameTop10` counts questions whose top 10 is the service's own. Needs `npm run build`.
 *
 *   node bench/lab/lme-replay.js '[{}, {"LONG_MEMORY":1e9}]'
 */
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');
const { load, questionWords } = require('../lib/lme');
const rel = require('../../dist/src/memories/search/relevance.js');
const LAB = process.env.LAB_DIR || '/tmp/memstore-lme-lab';
const data = JSON.parse(fs.readFileSync(path.join(LAB, 'lme.json'), 'utf8'));
const byId = new Map(load(path.join(evalDir(), 'longmemeval-s-dev.jsonl.gz')).map((q) => [q.question_id, q]));

/** One question's candidates as an adapter hands them over (neighbours: the turns next to it in its session). */
function candidatesOf(q) {
  const { lines, df } = questionWords(byId.get(q.id));
  const kept = new Set(q.hybrid.map((r) => r.i));
  const first = new Map();
  q.turns.forEach((t, i) => first.has(t.session) || first.set(t.session, i));
  const list = q.hybrid.map(({ i, explain }) => {
    const t = q.turns[i];
    return {
      row: { id: String(i), type: 'conversation', namespace: 'default', project: 'p', agent: null, createdAt: new Date(t.date + (i - first.get(t.session)) * 1000) },
      cosine: explain.cosine ?? undefined,
      semantic: explain.cosine !== null,
      keyword: explain.keyword_score ?? undefined,
      words: explain.matched_words,
      phrases: [],
      length: lines[i].content.length,
      neighbours: [i - 1, i + 1].filter((n) => kept.has(n) && q.turns[n]?.session === t.session).map(String),
    };
  });
  return { list, docs: lines.length, df: [...df] };
}

async function score(sets, variant, defaults) {
  Object.assign(rel.RELEVANCE, defaults, variant);
  const agg = () => ({ n: 0, s5: 0, nt: 0, t5: 0, t1: 0, empty: 0 });
  const all = agg();
  const byType = {};
  let absN = 0;
  let absEmpty = 0;
  let same = 0;
  for (const [j, q] of data.entries()) {
    const got = (await rel.rankCandidates(sets[j], { mode: 'hybrid', text: q.question, floor: rel.RELEVANCE.FLOOR })).rows.map((r) => Number(r.row.id));
    const service = q.hybrid.filter((r) => r.score >= defaults.FLOOR).map((r) => r.i); // collected with min_score 0
    if (JSON.stringify(service.slice(0, 10)) === JSON.stringify(got.slice(0, 10))) same++;
    if (q.abs) {
      absN++;
      absEmpty += got.length === 0 ? 1 : 0;
      continue;
    }
    const answers = new Set(q.answerSessions);
    const s5 =
      new Set(
        got
          .slice(0, 5)
          .filter((i) => answers.has(q.turns[i].session))
          .map((i) => q.turns[i].session),
      ).size / answers.size;
    const nAns = q.turns.filter((t) => t.answer).length;
    for (const a of [all, (byType[q.type.replace('single-session-', 'ss-')] ??= agg())]) {
      a.n++;
      a.s5 += s5;
      a.empty += got.length === 0 ? 1 : 0;
      if (nAns) {
        a.nt++;
        a.t5 += got.slice(0, 5).filter((i) => q.turns[i].answer).length / nAns;
        a.t1 += (got.length > 0 && q.turns[got[0]].answer ? 1 : 0) / nAns;
      }
    }
  }
  const f = (a) => [a.s5 / a.n, a.t5 / Math.max(1, a.nt), a.t1 / Math.max(1, a.nt)].map((x) => x.toFixed(3)).join('/');
  const types = Object.entries(byType).map(([t, a]) => `${t} ${f(a)}`);
  console.log(`${JSON.stringify(variant).padEnd(40)} sR@5/tR@5/tR@1 ${f(all)}  empty ${all.empty}/${all.n}  abs ${absEmpty}/${absN}  sameTop10 ${same}/${data.length}  ${types.join('  ')}`);
}

async function main() {
  const sets = data.map(candidatesOf);
  const defaults = { ...rel.RELEVANCE };
  for (const v of JSON.parse(process.argv[2] || '[{}]')) await score(sets, v, defaults);
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
