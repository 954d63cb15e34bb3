import type { ParsedSearch } from './search-query';
import { wordStartIndex } from './term-match';

/** Lower-case and strip accents one character at a time, so indexes map 1:1 onto the original. */
export function foldForMatch(text: string): string {
  // Fast path: ASCII text only needs lower-casing; other characters lose their accents in place.
  // eslint-disable-next-line no-control-regex
  const quick = (/^[\x00-\x7f]*$/.test(text) ? text : text.replace(/[^\x00-\x7f]/g, (ch) => ch.normalize('NFD')[0] ?? ch)).toLowerCase();
  if (quick.length === text.length) return quick;
  let out = '';
  for (const ch of text) {
    const base = ch.normalize('NFD')[0] ?? ch;
    const lower = base.toLowerCase();
    // Keep the length of the original code unit sequence so positions still line up.
    out += lower.length === ch.length ? lower : ch.length === 1 ? lower[0] : ch;
  }
  return out;
}

/** The part of a word that survives English suffixes well enough to find it in text ("deployments" → "deploy"). */
function stemPrefix(word: string): string {
  if (word.length <= 4) return word;
  return word.slice(0, Math.max(4, word.length - 3));
}

/** Only this much of the content is looked at for a snippet. */
const SNIPPET_SCAN_CHARS = 64 * 1024;

/**
 * Compiles a query once into a function giving a short passage of a content around the first
 * place a query phrase (else word) occurs: case and accents ignored, English suffixes tolerated;
 * null when none is found. Whitespace is collapsed; a cut is marked with "…".
 */
export function snippetMaker(q: ParsedSearch, maxChars = 200): (content: string) => string | null {
  const phrases = q.phrases.map((p) => foldForMatch(p.length > 1 ? `${p.slice(0, -1).join(' ')} ${stemPrefix(p[p.length - 1])}` : stemPrefix(p[0])));
  const words = q.words.map((w) => foldForMatch(stemPrefix(w)));
  return (content) => {
    const folded = foldForMatch(content.length > SNIPPET_SCAN_CHARS ? content.slice(0, SNIPPET_SCAN_CHARS) : content);
    let best = -1;
    for (const group of [phrases, words]) {
      for (const needle of group) {
        const at = wordStartIndex(folded, needle);
        if (at >= 0 && (best < 0 || at < best)) best = at;
      }
      if (best >= 0) break;
    }
    return best < 0 ? null : cut(content, best, maxChars);
  };
}

/** snippetMaker for one content. */
export function snippetAround(content: string, q: ParsedSearch, maxChars = 200): string | null {
  return snippetMaker(q, maxChars)(content);
}

function cut(content: string, best: number, maxChars: number): string {
  const before = Math.floor(maxChars / 3);
  let start = Math.max(0, best - before);
  let end = Math.min(content.length, start + maxChars);
  if (start > 0) {
    const space = content.lastIndexOf(' ', best);
    const wordStart = content.indexOf(' ', start);
    if (wordStart >= 0 && wordStart < best) start = wordStart + 1;
    else if (space >= 0 && space >= start) start = space + 1;
  }
  if (end < content.length) {
    const space = content.lastIndexOf(' ', end);
    if (space > best) end = space;
  }
  // Never split a surrogate pair.
  if (start > 0 && /[\udc00-\udfff]/.test(content[start] ?? '')) start -= 1;
  if (end < content.length && /[\ud800-\udbff]/.test(content[end - 1] ?? '')) end -= 1;
  const body = content.slice(start, end).replace(/\s+/g, ' ').trim();
  return `${start > 0 ? '…' : ''}${body}${end < content.length ? '…' : ''}`;
}
