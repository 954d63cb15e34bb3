/**
 * The search used on MongoDB-wire servers without text indexes (FerretDB 1.x and some
 * MongoDB-compatible services). It honours CONTRACT §3 as far as regular expressions can:
 * every word matched case- and accent-insensitively at the start of a word, with a light English
 * stemming (a word's stem matches its other forms), phrases matched as phrases, exclusions, and
 * a ranking by how many and how rare the matched words are, title and tags weighing more than
 * content. User text never reaches a pattern unescaped: words come from the query parser
 * (letters and digits only) and are escaped all the same.
 */
import type { ParsedSearch } from '../../../libs/search-query';
import { foldAccents, lightStem } from '../../../libs/search-query/term-match';

/** Letters whose accented forms a search should also find (CONTRACT §3: accents are ignored). */
const ACCENTS: Record<string, string> = {
  a: 'aàáâãäåāăą',
  c: 'cçćĉċč',
  e: 'eèéêëēĕėęě',
  i: 'iìíîïĩīĭįı',
  n: 'nñńņňŉ',
  o: 'oòóôõöøōŏő',
  u: 'uùúûüũūŭůűų',
  y: 'yýÿŷ',
  s: 'sśŝşš',
  z: 'zźżž',
  g: 'gĝğġģ',
  l: 'lĺļľŀł',
  r: 'rŕŗř',
  d: 'dďđ',
  t: 'tţťŧ',
};

/** Escapes every regex syntax character (the same set is literal when escaped in PCRE, RE2 and JavaScript's u mode). */
export function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

export { foldAccents, lightStem } from '../../../libs/search-query/term-match';

/** The pattern of one literal, accent-insensitive (to be used case-insensitively). */
function literal(s: string): string {
  let out = '';
  for (const ch of foldAccents(s.toLowerCase())) {
    const variants = ACCENTS[ch];
    out += variants ? `[${variants}]` : escapeRegex(ch);
  }
  return out;
}

/** Start of a word: the start of the text or a character that is not a letter or digit. */
const WORD_START = '(?:^|[^\\p{L}\\p{N}])';
const SEPARATOR = '[^\\p{L}\\p{N}]+';

/** Pattern of a search word: its stem at the start of a word. */
export function wordPattern(word: string): string {
  return `${WORD_START}${literal(lightStem(word))}`;
}

/** Pattern of a phrase: its words in order, separated by anything that is not a letter or digit. */
export function phrasePattern(words: string[]): string {
  return `${WORD_START}${words.map(literal).join(SEPARATOR)}(?:$|[^\\p{L}\\p{N}])`;
}

/** Pattern of an excluded term (one word stems like a search word; a phrase matches as a phrase). */
export function excludedPattern(term: string[]): string {
  return term.length === 1 ? wordPattern(term[0]) : phrasePattern(term);
}

const FIELDS = ['title', 'tags', 'content'] as const;

function anyField(pattern: string): Record<string, unknown> {
  return { $or: FIELDS.map((f) => ({ [f]: { $regex: pattern, $options: 'i' } })) };
}

/** The MongoDB filter selecting the hits of a parsed query, or null when nothing positive is left. */
export function regexSearchFilter(q: ParsedSearch): Record<string, unknown> | null {
  if (q.words.length === 0 && q.phrases.length === 0) return null;
  const and: Record<string, unknown>[] = [];
  if (q.phrases.length > 0) for (const p of q.phrases) and.push(anyField(phrasePattern(p)));
  else and.push({ $or: q.words.flatMap((w) => FIELDS.map((f) => ({ [f]: { $regex: wordPattern(w), $options: 'i' } }))) });
  if (q.excluded.length > 0) and.push({ $nor: q.excluded.map((t) => anyField(excludedPattern(t))) });
  return and.length === 1 ? and[0] : { $and: and };
}

/**
 * The hard parts of a query only (phrases required, exclusions out), for the vector list of a
 * hybrid or semantic search; null when the query has none.
 */
export function hardRegexFilter(q: ParsedSearch): Record<string, unknown> | null {
  const and: Record<string, unknown>[] = q.phrases.map((p) => anyField(phrasePattern(p)));
  if (q.excluded.length > 0) and.push({ $nor: q.excluded.map((t) => anyField(excludedPattern(t))) });
  if (and.length === 0) return null;
  return and.length === 1 ? and[0] : { $and: and };
}

export interface ScoredText {
  title: string | null;
  tags: string[];
  content: string;
}

/** A term found in the title (or a tag) counts this much more than one found in the content only. */
const TITLE_BONUS = 0.5;
const TAG_BONUS = 0.4;
/** Each repeated occurrence in the content adds this share of the term's weight, up to MAX_CONTENT_HITS. */
const REPEAT_BONUS = 0.05;
const MAX_CONTENT_HITS = 5;

function count(re: RegExp, text: string, cap: number): number {
  re.lastIndex = 0;
  let n = 0;
  while (n < cap && re.exec(text) !== null) n++;
  return n;
}

/**
 * Ranks candidate documents (CONTRACT §3: more and rarer matched words first; title and tags
 * weigh more). Each matched term (word or phrase) adds its rarity ln(1 + N / df), where df is
 * the number of candidates containing it, times 1 + TITLE_BONUS when it is in the title (TAG_BONUS:
 * in a tag), plus REPEAT_BONUS per further occurrence in the content. The field bonus is below one
 * whole term, so a memory matching more of the words (of equal rarity) always ranks first: one
 * title word no longer outranks every query word found in the content.
 */
export function rankByMatches<T extends ScoredText>(docs: T[], q: ParsedSearch, totalDocs: number): Array<{ doc: T; score: number }> {
  const terms = [...q.phrases.map(phrasePattern), ...q.words.map(wordPattern)].map((p) => new RegExp(p, 'giu'));
  const hits = docs.map((d) => terms.map((re) => termWeight(re, d)));
  const df = terms.map((_, i) => hits.filter((h) => h[i] > 0).length);
  const n = Math.max(totalDocs, docs.length, 1);
  return docs.map((doc, j) => {
    let score = 0;
    terms.forEach((_, i) => {
      if (hits[j][i] > 0) score += hits[j][i] * Math.log(1 + n / df[i]);
    });
    return { doc, score: Math.round(score * 1000) / 1000 };
  });
}

/** 0 when the term is absent; else 1, plus the title/tag bonus, plus the repeat bonus. */
function termWeight(re: RegExp, d: ScoredText): number {
  const inTitle = d.title ? count(re, d.title, 1) > 0 : false;
  const inTags = d.tags.some((t) => count(re, t, 1) > 0);
  const content = count(re, d.content, MAX_CONTENT_HITS);
  if (!inTitle && !inTags && content === 0) return 0;
  return 1 + (inTitle ? TITLE_BONUS : inTags ? TAG_BONUS : 0) + REPEAT_BONUS * Math.max(0, content - 1);
}

/** The terms of a query as JavaScript regular expressions, to find the best passage for a snippet. */
export function snippetPatterns(q: ParsedSearch): RegExp[] {
  return [...q.phrases.map(phrasePattern), ...q.words.map(wordPattern)].map((p) => new RegExp(p, 'iu'));
}
