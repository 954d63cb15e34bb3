'use strict';
/**
 * Deterministic, realistic-looking memories for the benchmark.
 *
 * Text is drawn from a Zipf-like distribution (frequency of the word of rank r ∝ 1/r) over
 * English function words, a few hundred domain words and a synthetic long tail of rare words,
 * mixed with per-memory "topics" (a handful of words and two-word collocations that co-occur),
 * so that one-word, multi-word and phrase searches have realistic hit counts. Everything comes
 * from a seeded PRNG: the same seed gives the same corpus and queries on every machine.
 */
const { STOP_WORDS, CONTENT_WORDS, TAGS, AGENTS, PROJECTS } = require('./words');

const MEMORY_TYPES = ['note', 'fact', 'decision', 'task', 'preference', 'reference', 'code', 'conversation'];
const TYPE_WEIGHTS = [30, 20, 10, 10, 8, 10, 7, 5];
const MEMORY_SCOPES = ['global', 'project', 'agent', 'user'];
const SCOPE_WEIGHTS = [40, 35, 15, 10];

/** mulberry32: small, fast, good enough for test data. */
function prng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    chance: (p) => next() < p,
    /** Normal(0,1) by Box-Muller. */
    gauss: () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()),
  };
}

/** Samples indexes 0..n-1 with P(i) ∝ 1/(i+1)^s (binary search over the CDF). */
function zipf(n, s = 1.0) {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) cdf[i] = sum += 1 / Math.pow(i + 1, s);
  for (let i = 0; i < n; i++) cdf[i] /= sum;
  return (rng) => {
    const u = rng.next();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

function weighted(weights) {
  const total = weights.reduce((a, b) => a + b, 0);
  return (rng) => {
    let u = rng.next() * total;
    for (let i = 0; i < weights.length; i++) if ((u -= weights[i]) < 0) return i;
    return weights.length - 1;
  };
}

function shuffle(arr, rng) {
  const a = arr.slice();
  for (let i = a.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

const ONSETS = ['b', 'br', 'c', 'cl', 'd', 'dr', 'f', 'fl', 'g', 'gr', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'pl', 'qu', 'r', 's', 'st', 't', 'tr', 'v', 'w', 'z'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'io', 'ou'];
const CODAS = ['', '', 'n', 'r', 'l', 'x', 'th', 'nd', 'st', 'm'];

/** A deterministic long tail of pronounceable rare words ("quorandel", "flistax"). */
function syntheticWords(count, rng, taken) {
  const out = [];
  while (out.length < count) {
    const syllables = 2 + rng.int(2);
    let w = '';
    for (let i = 0; i < syllables; i++) w += rng.pick(ONSETS) + rng.pick(VOWELS) + (i === syllables - 1 ? rng.pick(CODAS) : '');
    if (!taken.has(w)) {
      taken.add(w);
      out.push(w);
    }
  }
  return out;
}

class Corpus {
  constructor(seed = 42) {
    this.seed = seed;
    const rng = prng(seed);
    const content = shuffle(CONTENT_WORDS, rng);
    const taken = new Set([...STOP_WORDS, ...content]);
    this.tail = syntheticWords(3000, rng, taken);
    /** Rank order: function words first, then domain words, then the rare tail. */
    this.vocab = [...STOP_WORDS, ...content, ...this.tail];
    this.contentWords = [...content, ...this.tail];
    this.wordZipf = zipf(this.vocab.length, 1.0);
    this.contentZipf = zipf(content.length, 0.9);
    this.tagZipf = zipf(TAGS.length, 1.1);
    this.projectZipf = zipf(PROJECTS.length, 1.0);
    this.typeOf = weighted(TYPE_WEIGHTS);
    this.scopeOf = weighted(SCOPE_WEIGHTS);
    // Topics: sets of co-occurring words with two-word collocations (the phrases people search).
    this.topics = [];
    for (let t = 0; t < 200; t++) {
      // Topic words are spread over the whole domain vocabulary: drawing them by frequency too
      // would put the top few domain words into half of all memories, which real notes do not do.
      const words = [];
      while (words.length < 8) {
        const w = rng.pick(content);
        if (!words.includes(w)) words.push(w);
      }
      if (rng.chance(0.5)) words.push(rng.pick(this.tail));
      const phrases = [];
      for (let p = 0; p < 3; p++) phrases.push(`${words[2 * p]} ${words[2 * p + 1]}`);
      this.topics.push({ words, phrases });
    }
    this.topicZipf = zipf(this.topics.length, 0.8);
    this.domain = content;
  }

  /** The i-th memory of stream `stream` (0 = seed data, 1 = bodies for the create benchmark). */
  memory(i, stream = 0) {
    const rng = prng(this.seed * 1_000_003 + stream * 7_919_993 + i * 2_654_435_761);
    const topic = this.topics[this.topicZipf(rng)];
    const word = () => (rng.chance(0.22) ? rng.pick(topic.words) : this.vocab[this.wordZipf(rng)]);
    const nWords = Math.max(8, Math.min(1500, Math.round(Math.exp(Math.log(90) + 0.6 * rng.gauss()))));
    const parts = [];
    let written = 0;
    const list = rng.chance(0.2);
    while (written < nWords) {
      const len = 6 + rng.int(13);
      const s = [];
      for (let k = 0; k < len; k++) s.push(word());
      if (rng.chance(0.35)) s.splice(rng.int(s.length), 0, rng.pick(topic.phrases));
      if (rng.chance(0.08)) s.splice(rng.int(s.length), 0, '`' + rng.pick(topic.words) + '()`');
      written += s.length;
      s[0] = s[0][0].toUpperCase() + s[0].slice(1);
      parts.push((list ? '- ' : '') + s.join(' ') + (rng.chance(0.1) ? '?' : '.'));
    }
    let content = list ? parts.join('\n') : parts.join(' ');
    if (rng.chance(0.15)) content = `## ${rng.pick(topic.phrases)}\n\n${content}`;
    const titleLen = 2 + rng.int(5);
    const title = [];
    for (let k = 0; k < titleLen; k++) title.push(rng.chance(0.5) ? rng.pick(topic.words) : this.domain[this.contentZipf(rng)]);
    title[0] = title[0][0].toUpperCase() + title[0].slice(1);
    const tags = [];
    const nTags = rng.int(5);
    for (let k = 0; k < nTags; k++) tags.push(TAGS[this.tagZipf(rng)]);
    return {
      title: rng.chance(0.9) ? title.join(' ') : undefined,
      type: MEMORY_TYPES[this.typeOf(rng)],
      scope: MEMORY_SCOPES[this.scopeOf(rng)],
      tags: [...new Set(tags)],
      agent: rng.chance(0.8) ? rng.pick(AGENTS) : undefined,
      project: rng.chance(0.75) ? PROJECTS[this.projectZipf(rng)] : undefined,
      content,
    };
  }

  /** Deterministic query sets for the search scenarios. */
  queries(count = 64) {
    const rng = prng(this.seed + 99);
    // Query words: any domain word, uniformly (people search for what they are looking for,
    // not for the most frequent words); the hit counts are reported with the results.
    const domainWord = () => rng.pick(this.domain);
    const one = [];
    const three = [];
    const phrase = [];
    const question = [];
    for (let i = 0; i < count; i++) {
      one.push(domainWord());
      const topic = this.topics[this.topicZipf(rng)];
      const words = new Set();
      while (words.size < 2) words.add(rng.pick(topic.words));
      while (words.size < 3) words.add(domainWord());
      three.push([...words].join(' '));
      phrase.push(`"${rng.pick(this.topics[this.topicZipf(rng)].phrases)}"`);
      const t2 = this.topics[this.topicZipf(rng)];
      const templates = [
        () => `what does the user prefer for ${rng.pick(t2.words)}`,
        () => `how do we ${rng.pick(['deploy', 'configure', 'test', 'build', 'restart', 'migrate'])} the ${rng.pick(t2.words)}`,
        () => `why did we choose ${rng.pick(t2.words)} over ${domainWord()}`,
        () => `what was decided about the ${rng.pick(t2.phrases)}`,
        () => `is there a note on ${rng.pick(t2.words)} and ${domainWord()}`,
      ];
      question.push(rng.pick(templates)());
    }
    return { one, three, phrase, question };
  }
}

/** Bump when the generated text changes, so a kept --data-dir seeded by another version is not reused. */
const CORPUS_VERSION = 2;

module.exports = { CORPUS_VERSION, Corpus, prng, zipf, MEMORY_TYPES, MEMORY_SCOPES };
