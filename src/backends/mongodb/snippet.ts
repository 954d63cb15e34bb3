/** Length of a row's preview, in characters. */
export const SNIPPET_CHARS = 200;

function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/**
 * A preview of the content: its beginning in list mode, or the passage around the first match of
 * the most important term in search mode (patterns in order of importance).
 */
export function makeSnippet(content: string, patterns: RegExp[] = [], max = SNIPPET_CHARS): string {
  const text = collapse(content);
  if (text.length <= max) return text;
  let at = -1;
  for (const re of patterns) {
    const m = re.exec(text);
    if (m) {
      // The pattern may start with the separator before the word.
      at = m.index + (m[0].length > 0 && /[^\p{L}\p{N}]/u.test(m[0][0]) ? 1 : 0);
      break;
    }
  }
  if (at < 0) return `${text.slice(0, max - 1).trimEnd()}…`;
  let start = Math.max(0, at - Math.floor(max / 3));
  if (start > 0) {
    const space = text.indexOf(' ', start);
    if (space > 0 && space < at) start = space + 1;
  }
  const end = Math.min(text.length, start + max);
  return `${start > 0 ? '…' : ''}${text.slice(start, end).trim()}${end < text.length ? '…' : ''}`;
}
