import { ParsedSearch, parseSearchQuery, splitWords } from './search-query';

/**
 * Which of a query's words and phrases a memory contains, the same way on every backend (the
 * relevance step, src/memories/search/, turns them into a keyword signal): a word matches when
 * its light stem starts a word of the title, a tag or the content ("deploy" finds "deploying"
 * and "Deployments"), accents and case ignored; a phrase matches as its words in a row.
 */

const NON_ASCII = /[\u0080-\uffff]/;

/** Removes accents: "café" → "cafe". */
export function foldAccents(s: string): string {
  // Plain ASCII has nothing to fold (most memories): skip the two normalisations.
  if (!NON_ASCII.test(s)) return s;
  return s
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFC');
}

/** A light English stemmer: "deploying", "deployed", "deploys" → "deploy"; "memories", "memory" → "memor". */
export function lightStem(word: string): string {
  let w = foldAccents(word.toLowerCase());
  if (w.length <= 4 || /\d/.test(w)) return w;
  for (const suffix of ['ational', 'ations', 'ation', 'ments', 'ment', 'ings', 'ing', 'edly', 'ies', 'ied', 'ers', 'er', 'ed', 'es', 'ly', 's']) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 3) {
      w = w.slice(0, -suffix.length);
      break;
    }
  }
  if (w.length > 3 && /[ey]$/.test(w)) w = w.slice(0, -1);
  return w;
}

/**
 * A natural-language question's quoted phrases as plain words (a `-"phrase"` exclusion stays):
 * in semantic and hybrid searches a phrase weighs (relevance step) but never filters, so a
 * question quoting a title does not come back empty for want of the exact phrase.
 */
export function softenPhrases(text: string): string {
  return text.replace(/(-?)"([^"]*)"?/g, (all, neg: string, inner: string) => (neg === '-' ? all : ` ${inner} `)).trim();
}

/** The words a memory's match is counted over: the query's words, phrase words included (each once). */
export function matchWords(q: ParsedSearch): string[] {
  const out = new Set(q.words);
  for (const p of q.phrases) for (const w of p) out.add(w);
  return [...out];
}

export interface TermMatch {
  /** The query words (matchWords) found. */
  words: string[];
  /** Indexes of the query's phrases found as phrases. */
  phrases: number[];
}

/** A letter, digit or combining mark: a character that continues a word. */
const WORD_CHAR = /[\p{L}\p{N}\p{M}]/u;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/**
 * Where `needle` first occurs at the start of a word of `text`: preceded by no letter, digit or
 * mark; -1 when nowhere. A plain substring search with a look at the one character before each
 * hit: a regular expression with a look-behind tries it at every position of the text, about ten
 * times slower over the candidates of a search.
 */
export function wordStartIndex(text: string, needle: string): number {
  if (needle === '') return -1;
  for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
    if (i === 0) return i;
    // The whole code point before the hit: a surrogate pair when there is one.
    const pair = i >= 2 && isLowSurrogate(text.charCodeAt(i - 1)) && isHighSurrogate(text.charCodeAt(i - 2));
    const before = pair ? text.slice(i - 2, i) : text[i - 1];
    if (!WORD_CHAR.test(before)) return i;
  }
  return -1;
}

/** A matcher for one query: which of its words and phrases a memory's title, tags and content hold. */
export function termMatcher(text: string): (title: string | null, tags: readonly string[], content: string) => TermMatch {
  const parsed = parseSearchQuery(text);
  const words = matchWords(parsed);
  const stems = words.map((w) => lightStem(w));
  const phrases = parsed.phrases.filter((p) => p.length > 1).map((p) => p.map((w) => foldAccents(w)));
  return (title, tags, content) => {
    // What splitWords reads: normalised (foldAccents' NFC) and lower-cased.
    const folded = foldAccents(`${title ?? ''}\n${tags.join('\n')}\n${content}`).toLowerCase();
    const found = words.filter((_, i) => wordStartIndex(folded, stems[i]) >= 0);
    const inPhrase: number[] = [];
    if (phrases.length === 0) return { words: found, phrases: inPhrase };
    const tokens = splitWords(folded);
    phrases.forEach((p, i) => {
      for (let j = 0; j + p.length <= tokens.length; j++) {
        if (p.every((w, k) => tokens[j + k] === w)) {
          inPhrase.push(i);
          break;
        }
      }
    });
    return { words: found, phrases: inPhrase };
  };
}
