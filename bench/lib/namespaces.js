/**
 * A small namespace in a big store (issue 43; decisions 0106, 0153), shared by `npm run bench`
 * (its ns-* classes) and bench/lab/namespace-scale.js: namespaces of NS_SIZE corpus memories each,
 * seeded by one JSONL import per namespace, the target being the middle one; and keyword queries
 * of the corpus's kinds whose every word occurs in the target namespace.
 */
'use strict';
const { STOP_WORDS } = require('./words');

const NS_SIZE = 1000;

const nsName = (k) => `bench/t${String(k).padStart(4, '0')}`;

/** The JSONL body importing corpus memories [from, from + NS_SIZE). */
function namespaceJsonl(corpus, from) {
  const lines = [];
  for (let i = from; i < from + NS_SIZE; i++) lines.push(JSON.stringify(corpus.memory(i)));
  return Buffer.from(lines.join('\n') + '\n');
}

/** POST /api/import's query string for namespace `ns`. */
const importPath = (ns) => `/api/import?${new URLSearchParams({ format: 'jsonl', filename: `${ns.replace('/', '-')}.jsonl` })}`;

/** The lower-case words of the target namespace's memories (what FTS5's tokenizer would see, near enough). */
function vocabularyOf(corpus, from) {
  const words = new Set();
  for (let i = from; i < from + NS_SIZE; i++) {
    const m = corpus.memory(i);
    for (const w of `${m.title ?? ''} ${m.tags.join(' ')} ${m.content}`.toLowerCase().split(/[^a-z0-9]+/)) if (w) words.add(w);
  }
  return words;
}

/** Query classes: the corpus's kinds, each query kept only when all its words occur in the namespace. */
function queryClasses(corpus, vocab, perClass = 64) {
  const stop = new Set(STOP_WORDS);
  const all = corpus.queries(2000);
  const keep = (q) =>
    q
      .replace(/"/g, '')
      .split(/\s+/)
      .filter((w) => !stop.has(w))
      .every((w) => vocab.has(w));
  const out = {};
  for (const kind of ['one', 'three', 'phrase', 'question']) out[kind] = [...new Set(all[kind].filter(keep))].slice(0, perClass);
  return out;
}

/** The layout for a store of `n` memories: how many namespaces, which is the target, where its corpus lines start. */
function layout(n) {
  const spaces = Math.max(2, Math.floor(n / NS_SIZE));
  const target = Math.floor(spaces / 2);
  return { spaces, target, targetNs: nsName(target), from: target * NS_SIZE };
}

module.exports = { NS_SIZE, nsName, namespaceJsonl, importPath, vocabularyOf, queryClasses, layout };
