'use strict';
/**
 * Lab: the recency prior for near-duplicates (decision 0131) on the LongMemEval-S dev
 * knowledge-update questions (../shared/eval/README.md). Per question, every turn of its haystack
 * is a memory dated by its session; a BM25 keyword ranking (k1 1.2, b 0.75, no stemming, our stop
 * words) gives the top 10; the prior then puts near-duplicates newest first (Jaccard of content
 * words of title + a snippet around the first query word, as src/memories/recency-prior.ts does).
 * Reports the "newest statement first" rate (questions whose newest has_answer turn ranks above
 * the older ones, among those with one in the top 10) and turn R@5, without the prior and at
 * several overlaps. Keyword only: the hybrid path would need ~4,500 long turns embedded.
 *   nice -n 10 node bench/lab/recency-prior.js [--data file.jsonl.gz]
 */
const fs = require('node:fs');
const zlib = require('node:zlib');
const path = require('node:path');
const { evalDir } = require('../lib/eval-dir');

const ROOT = path.resolve(__dirname, '..', '..');
const at = process.argv.indexOf('--data');
const data = at > 0 ? process.argv[at + 1] : path.join(evalDir(), 'longmemeval-s-dev.jsonl.gz');
const stopSrc = fs.readFileSync(path.join(ROOT, 'libs', 'search-query', 'stop-words.ts'), 'utf8');
const STOP = new Set(/`([^`]*)`/.exec(stopSrc)[1].split(/\s+/).filter(Boolean));
const words = (t) => (t.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []).filter((w) => !STOP.has(w));
const contentWords = (t) => new Set((t.toLowerCase().match(/\p{L}{3,}/gu) ?? []).filter((w) => !STOP.has(w)));
const jaccard = (a, b) => {
  if (!a.size || !b.size) return 0;
  let n = 0;
  for (const w of a) if (b.has(w)) n++;
  return n / (a.size + b.size - n);
};
const SNIPPET = 300;
function snippet(text, q) {
  const lower = text.toLowerCase();
  let pos = -1;
  for (const w of q) {
    const p = lower.indexOf(w);
    if (p >= 0 && (pos < 0 || p < pos)) pos = p;
  }
  const start = Math.max(0, pos - SNIPPET / 3);
  return text.slice(start, start + SNIPPET);
}

function preferNewer(rows, near) {
  const n = rows.length;
  const parent = rows.map((_, i) => i);
  const root = (i) => (parent[i] === i ? i : (parent[i] = root(parent[i])));
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) if (root(i) !== root(j) && near(rows[i], rows[j])) parent[root(j)] = root(i);
  const groups = new Map();
  rows.forEach((_, i) => groups.set(root(i), [...(groups.get(root(i)) ?? []), i]));
  const out = [...rows];
  for (const places of groups.values()) {
    if (places.length < 2) continue;
    const members = places.map((i) => rows[i]).sort((a, b) => b.createdAt - a.createdAt);
    places.forEach((p, k) => (out[p] = members[k]));
  }
  return out;
}

const questions = zlib
  .gunzipSync(fs.readFileSync(data))
  .toString('utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .filter((q) => q.question_type === 'knowledge-update' && !q.question_id.endsWith('_abs'));

const ranked = questions.map((q) => {
  const turns = [];
  q.haystack_sessions.forEach((session, s) => {
    const date = q.haystack_dates[s];
    const createdAt = Date.parse(date.replace(/^(\d+)\/(\d+)\/(\d+) \(\w+\) /, '$1-$2-$3T') + ':00Z') + turns.length; // turn order within a session
    for (const t of session) turns.push({ title: `${date} — ${t.role}`, content: t.content, createdAt: createdAt + turns.length, answer: !!t.has_answer });
  });
  const qw = [...new Set(words(q.question))];
  const docs = turns.map((t) => words(`${t.title} ${t.content}`));
  const avg = docs.reduce((s, d) => s + d.length, 0) / docs.length;
  const df = new Map();
  for (const d of docs) for (const w of new Set(d)) df.set(w, (df.get(w) ?? 0) + 1);
  const scored = turns.map((t, i) => {
    const tf = new Map();
    for (const w of docs[i]) tf.set(w, (tf.get(w) ?? 0) + 1);
    let s = 0;
    for (const w of qw) {
      const f = tf.get(w);
      if (!f) continue;
      const idf = Math.log(1 + (turns.length - df.get(w) + 0.5) / (df.get(w) + 0.5));
      s += (idf * f * 2.2) / (f + 1.2 * (0.25 + (0.75 * docs[i].length) / avg));
    }
    return { ...t, score: s, words: contentWords(`${t.title} ${snippet(t.content, qw)}`), hits: qw.filter((w) => tf.has(w)).join(' ') };
  });
  const top = scored
    .filter((r) => r.score > 0)
    .sort((a, b) => b.score - a.score || b.createdAt - a.createdAt)
    .slice(0, 10);
  const answers = turns.filter((t) => t.answer);
  return { q, top, newest: Math.max(...answers.map((t) => t.createdAt)), evidence: answers.length };
});

function measure(reorder) {
  let judged = 0;
  let newestFirst = 0;
  let r5 = 0;
  let moved = 0;
  for (const { top, newest, evidence } of ranked) {
    const rows = reorder(top);
    moved += rows.filter((r, i) => r !== top[i]).length;
    r5 += rows.slice(0, 5).filter((r) => r.answer).length / Math.max(1, evidence);
    const first = rows.find((r) => r.answer);
    if (!first) continue;
    judged++;
    if (first.createdAt === newest) newestFirst++;
  }
  return { judged, newestFirst, rate: judged ? newestFirst / judged : 0, r5: r5 / ranked.length, moved };
}

console.log(`LongMemEval-S dev knowledge-update questions: ${ranked.length} (abstention left out); keyword BM25 top 10`);
const base = measure((rows) => rows);
console.log(`no prior           newest first ${base.newestFirst}/${base.judged} (${base.rate.toFixed(2)})  turn R@5 ${base.r5.toFixed(3)}`);
for (const t of [0.2, 0.3, 0.4, 0.5, 0.6]) {
  const m = measure((rows) => preferNewer(rows, (a, b) => jaccard(a.words, b.words) >= t));
  console.log(`prior overlap ${t.toFixed(1)}  newest first ${m.newestFirst}/${m.judged} (${m.rate.toFixed(2)})  turn R@5 ${m.r5.toFixed(3)}  rows moved ${m.moved}`);
}
// Query-conditioned variants: the same query words matched (and a word overlap), or close scores.
for (const t of [0.1, 0.2]) {
  const m = measure((rows) => preferNewer(rows, (a, b) => a.hits === b.hits && jaccard(a.words, b.words) >= t));
  console.log(`same query words + overlap ${t.toFixed(1)}  newest first ${m.newestFirst}/${m.judged} (${m.rate.toFixed(2)})  turn R@5 ${m.r5.toFixed(3)}  rows moved ${m.moved}`);
}
for (const t of [0.2, 0.3]) {
  const m = measure((rows) => preferNewer(rows, (a, b) => Math.min(a.score, b.score) / Math.max(a.score, b.score) >= 0.8 && jaccard(a.words, b.words) >= t));
  console.log(`scores within 20% + overlap ${t.toFixed(1)}  newest first ${m.newestFirst}/${m.judged} (${m.rate.toFixed(2)})  turn R@5 ${m.r5.toFixed(3)}  rows moved ${m.moved}`);
}
