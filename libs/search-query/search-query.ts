import { ENGLISH_STOP_WORDS } from './stop-words';

/**
 * A user's search string, parsed into plain parts (CONTRACT §3):
 * - words: any of them matches (OR); ranked by how many and how rare;
 * - phrases: `"a phrase"`, each must match as a phrase;
 * - excluded: `-word` or `-"a phrase"`, a memory containing one is not a hit.
 *
 * Words are lower-cased and split the way a Unicode word tokenizer splits them (letters and
 * digits; everything else separates), so no character of the user's input survives as query
 * syntax: adapters quote each word themselves. English stop words are dropped from `words`
 * (never from phrases). When only stop words were given, they are kept (`stopWordsOnly`): a
 * search for "the who" still searches rather than silently matching nothing.
 */
export interface ParsedSearch {
  /** Distinct words, stop words removed (unless the query had nothing else). */
  words: string[];
  /** Each phrase as its words, in order (at least one word each). */
  phrases: string[][];
  /** Excluded terms; each is a word list (one word, or a phrase). */
  excluded: string[][];
  /** Stop words that were dropped from `words`. */
  droppedStopWords: string[];
  /** True when `words` consists of stop words only (nothing else was searchable). */
  stopWordsOnly: boolean;
}

/** Longest query we look at; the rest is ignored (a DTO limit refuses longer input first). */
export const MAX_QUERY_CHARS = 1000;
/** At most this many words/phrases/exclusions are used, to keep one query cheap. */
export const MAX_QUERY_TERMS = 32;

const WORD = /[\p{L}\p{N}\p{M}]+/gu;

/** Split free text into lower-cased words (letters, digits and combining marks). */
export function splitWords(text: string): string[] {
  return (text.normalize('NFC').toLowerCase().match(WORD) ?? []).filter((w) => /[\p{L}\p{N}]/u.test(w));
}

export function isStopWord(word: string): boolean {
  return ENGLISH_STOP_WORDS.has(word);
}

export function parseSearchQuery(input: string): ParsedSearch {
  const text = input.slice(0, MAX_QUERY_CHARS);
  const words: string[] = [];
  const stop: string[] = [];
  const phrases: string[][] = [];
  const excluded: string[][] = [];
  const seenWords = new Set<string>();
  const seenPhrases = new Set<string>();
  const seenExcluded = new Set<string>();

  const addExcluded = (parts: string[]) => {
    const key = parts.join(' ');
    if (parts.length > 0 && !seenExcluded.has(key)) {
      seenExcluded.add(key);
      excluded.push(parts);
    }
  };

  // Tokens: an optional leading '-', then either a "quoted phrase" (closing quote optional) or a run of non-space.
  const TOKEN = /(-?)(?:"([^"]*)"?|([^\s"]+))/g;
  let m: RegExpExecArray | null;
  while ((m = TOKEN.exec(text)) !== null) {
    const negated = m[1] === '-';
    if (m[2] !== undefined) {
      const parts = splitWords(m[2]);
      if (parts.length === 0) continue;
      if (negated) addExcluded(parts);
      else {
        // A quoted single word is a one-word phrase: required, and kept even if it is a stop word.
        const key = parts.join(' ');
        if (!seenPhrases.has(key)) {
          seenPhrases.add(key);
          phrases.push(parts);
        }
      }
      continue;
    }
    const parts = splitWords(m[3]);
    if (negated) {
      // "-word" excludes the word; "-foo-bar" excludes the phrase "foo bar" (how a tokenizer reads it).
      addExcluded(parts);
    } else {
      // "foo-bar", "node.js": each part is a word (a tokenizer splits them the same way).
      for (const p of parts) addWord(p);
    }
  }

  function addWord(w: string): void {
    if (seenWords.has(w)) return;
    seenWords.add(w);
    if (isStopWord(w)) stop.push(w);
    else words.push(w);
  }

  const onlyStop = words.length === 0 && phrases.length === 0 && stop.length > 0;
  return {
    words: (onlyStop ? stop : words).slice(0, MAX_QUERY_TERMS),
    phrases: phrases.slice(0, MAX_QUERY_TERMS),
    excluded: excluded.slice(0, MAX_QUERY_TERMS),
    droppedStopWords: onlyStop ? [] : stop,
    stopWordsOnly: onlyStop,
  };
}

/** True when the parsed query can select anything (it has a word or a phrase). */
export function hasPositiveTerms(q: ParsedSearch): boolean {
  return q.words.length > 0 || q.phrases.length > 0;
}

/**
 * Spellings that the Porter stemmer would otherwise split into two stems. Porter turns a final
 * "y" after a vowel into "i" ("deploy" → "deploi") but strips derived suffixes later ("deployment",
 * "deployer" → "deploy"), so "deploy" would not find "Deployments". Each word of that shape is
 * searched together with its counterpart: "deploy" with "deployment", "deployments" with "deploy".
 */
export function porterVariants(word: string): string[] {
  const m = /^(.*[aeiou]y)(ment|ments|er|ers)?$/.exec(word);
  if (!m || m[1].length < 4) return [word];
  const base = m[1];
  return m[2] ? [word, base] : [word, `${base}ment`];
}

/** FTS5 string literal: the tokenizer reads inside the quotes; `"` is doubled. */
function ftsString(parts: string[]): string {
  return `"${parts.join(' ').replace(/"/g, '""')}"`;
}

function wordExpr(w: string): string {
  const v = porterVariants(w);
  return v.length === 1 ? ftsString(v) : `(${v.map((x) => ftsString([x])).join(' OR ')})`;
}

/**
 * The FTS5 MATCH expression for a parsed query, built only from quoted strings and the
 * operators OR / AND / NOT, or null when nothing positive is left to match.
 * - words only: `"a" OR "b"` (bm25 sums over the words a row contains: more and rarer rank higher);
 * - phrases: every phrase is required; the words still rank: `"p q" AND ("p q" OR "a" OR "b")`;
 * - exclusions: `(...) NOT ("x" OR "y z")`.
 */
export function toFts5Match(q: ParsedSearch): string | null {
  if (!hasPositiveTerms(q)) return null;
  const words = q.words.map(wordExpr);
  const phrases = q.phrases.map(ftsString);
  let expr: string;
  if (phrases.length === 0) expr = words.join(' OR ');
  else if (words.length === 0) expr = phrases.join(' AND ');
  else expr = `${phrases.join(' AND ')} AND (${[phrases[0], ...words].join(' OR ')})`;
  if (q.excluded.length > 0) expr = `(${expr}) NOT (${q.excluded.map((e) => (e.length === 1 ? wordExpr(e[0]) : ftsString(e))).join(' OR ')})`;
  return expr;
}

/** One searchable unit of a query as an FTS5 expression: a word (with its Porter variants) or a phrase. */
export interface Fts5Term {
  expr: string;
  /** Phrases must match; words only add to the score. */
  required: boolean;
  /** The words of the term as typed (lower-cased). */
  words: string[];
}

/** The parts of toFts5Match separately, for adapters that rank term by term. */
export function toFts5Terms(q: ParsedSearch): { terms: Fts5Term[]; exclusion: string | null } {
  const terms: Fts5Term[] = [...q.phrases.map((p) => ({ expr: ftsString(p), required: true, words: p })), ...q.words.map((w) => ({ expr: wordExpr(w), required: false, words: [w] }))];
  const exclusion = q.excluded.length > 0 ? q.excluded.map((e) => (e.length === 1 ? wordExpr(e[0]) : ftsString(e))).join(' OR ') : null;
  return { terms, exclusion };
}
