import { isStopWord } from '../../libs/search-query';

/**
 * The recency prior for near-duplicates (issue 45 item 3, decision 0131): without an explicit
 * `supersedes` link, of two hits that say nearly the same thing the newer one ranks first. A pure
 * step over an already ranked list: the rows of each group of near-duplicates (linked pairwise by
 * `nearDuplicate`, transitively) keep the places the group held, newest first; every other row keeps
 * its place. Storage-neutral: it needs only each row's createdAt (an import's original date, when
 * imported) and the pairwise signal.
 */
export function preferNewerNearDuplicates<T extends { createdAt: Date }>(rows: readonly T[], nearDuplicate: (a: T, b: T) => boolean): T[] {
  const n = rows.length;
  const parent = Array.from({ length: n }, (_, i) => i);
  const root = (i: number): number => (parent[i] === i ? i : (parent[i] = root(parent[i])));
  let linked = false;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      if (root(i) !== root(j) && nearDuplicate(rows[i], rows[j])) {
        parent[root(j)] = root(i);
        linked = true;
      }
    }
  }
  if (!linked) return [...rows];
  const groups = new Map<number, number[]>();
  for (let i = 0; i < n; i++) {
    const r = root(i);
    const g = groups.get(r);
    if (g) g.push(i);
    else groups.set(r, [i]);
  }
  const out = [...rows];
  for (const places of groups.values()) {
    if (places.length < 2) continue;
    // Newest first; equal times keep their ranked order (sort is stable).
    const members = places.map((i) => rows[i]).sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
    places.forEach((p, k) => (out[p] = members[k]));
  }
  return out;
}

/** Content words of a text: lowercase letters-only words of 3+ characters that are not stop words (numbers left out: an update changes them). */
export function contentWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(/\p{L}{3,}/gu) ?? []) if (!isStopWord(w)) out.add(w);
  return out;
}

/** Jaccard similarity of two word sets (0 when both are empty). */
export function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 || b.size === 0) return 0;
  let both = 0;
  for (const w of a) if (b.has(w)) both++;
  return both / (a.size + b.size - both);
}

/** Word overlap (Jaccard of content words) from which two hits count as near-duplicates (measured on LongMemEval-S knowledge updates: decision 0131). */
export const NEAR_DUPLICATE_OVERLAP = 0.5;

/**
 * The search path's prior (decision 0131): near-duplicates by the content words of title and
 * snippet (the text a row carries; no vectors needed). Rows are compared within the page.
 */
export function recencyPrior<T extends { createdAt: Date; title: string | null; snippet: string }>(rows: readonly T[], overlap = NEAR_DUPLICATE_OVERLAP): T[] {
  if (rows.length < 2) return [...rows];
  const words = new Map(rows.map((r) => [r, contentWords(`${r.title ?? ''} ${r.snippet}`)]));
  return preferNewerNearDuplicates(rows, (a, b) => jaccard(words.get(a)!, words.get(b)!) >= overlap);
}
