import { dateBoost, TIME_WEIGHT, type TimeRange } from './time-expressions';

/**
 * Hybrid ranking: fuses a keyword (full-text) list and a semantic (vector) list into one
 * (README "Hybrid search"). Both adapters use it, so SQLite and MongoDB rank alike.
 *
 * 1. Candidates: the union of both lists' best FUSION_CANDIDATES. Every candidate gets both
 *    signals where they exist: its keyword score (none when the full-text list does not hold
 *    it) and its cosine similarity (computed for keyword candidates too, not only for the
 *    vector list's own).
 * 2. Each signal is min-max normalised over the candidates (the best 1, the worst 0; a missing
 *    keyword score counts 0): fused = KEYWORD_WEIGHT x keyword + SEMANTIC_WEIGHT x semantic.
 * 3. Session context: memories written one after the other in the same project by the same
 *    agent (at most SESSION_GAP_MS apart) belong together, so each candidate adds
 *    NEIGHBOUR_WEIGHT x the best fused score of its candidate neighbours (the memory just before
 *    and just after it in (created at, then written) order). Ties go to the newer memory.
 * 4. Time in the question (time-expressions.ts): with a resolved range, each candidate adds
 *    TIME_WEIGHT x dateBoost(its created at, the range) in hybrid and semantic mode.
 * Semantic mode ranks by cosine alone (no fusion, no neighbours); keyword mode does not fuse.
 */
export const FUSION_CANDIDATES = 50;
export const KEYWORD_WEIGHT = 0.4;
export const SEMANTIC_WEIGHT = 0.6;
export const NEIGHBOUR_WEIGHT = 0.25;
export const SESSION_GAP_MS = 30 * 60_000;

export type SearchMode = 'keyword' | 'semantic' | 'hybrid';
export const SEARCH_MODES: readonly SearchMode[] = ['keyword', 'semantic', 'hybrid'];
export type MatchedList = 'keyword' | 'semantic';

export interface FusionCandidate<K> {
  key: K;
  /** Keyword score (higher is better), undefined when the full-text list does not hold it. */
  keyword?: number;
  /** Cosine similarity, undefined when unknown (no vector yet). */
  cosine?: number;
  /** In the vector list's own top candidates. */
  semanticHit?: boolean;
  /** Newer first on ties. */
  order: number;
  /** The memories written just before and after it in its session (see SESSION_GAP_MS). */
  neighbours?: K[];
  /** Created at (ms): the date preference of a question that names a time (step 4). */
  at?: number;
}

export interface FusedResult<K> {
  key: K;
  score: number;
  matched: MatchedList[];
}

/** Each candidate's fused score before session context (steps 1 and 2; semantic and keyword mode: their one signal). */
function baseScores<K>(candidates: FusionCandidate<K>[], mode: SearchMode): Map<K, number> {
  let kwMin = Infinity;
  let kwMax = -Infinity;
  let cosMin = Infinity;
  let cosMax = -Infinity;
  for (const c of candidates) {
    if (c.keyword !== undefined) {
      kwMin = Math.min(kwMin, c.keyword);
      kwMax = Math.max(kwMax, c.keyword);
    }
    if (c.cosine !== undefined) {
      cosMin = Math.min(cosMin, c.cosine);
      cosMax = Math.max(cosMax, c.cosine);
    }
  }
  const norm = (v: number | undefined, lo: number, hi: number) => (v === undefined ? 0 : hi - lo > 1e-9 ? (v - lo) / (hi - lo) : 1);
  const base = new Map<K, number>();
  for (const c of candidates) {
    const score =
      mode === 'semantic' ? (c.cosine ?? 0) : mode === 'keyword' ? norm(c.keyword, kwMin, kwMax) : KEYWORD_WEIGHT * norm(c.keyword, kwMin, kwMax) + SEMANTIC_WEIGHT * norm(c.cosine, cosMin, cosMax);
    base.set(c.key, score);
  }
  return base;
}

export function fuse<K>(candidates: FusionCandidate<K>[], mode: SearchMode, time?: TimeRange | null): FusedResult<K>[] {
  const base = baseScores(candidates, mode);
  const out = candidates.map((c) => {
    let score = base.get(c.key) as number;
    if (mode === 'hybrid' && c.neighbours && c.neighbours.length > 0) {
      let best = 0;
      for (const n of c.neighbours) best = Math.max(best, base.get(n) ?? 0);
      score += NEIGHBOUR_WEIGHT * best;
    }
    if (time && mode !== 'keyword') score += TIME_WEIGHT * dateBoost(c.at, time);
    const matched: MatchedList[] = [];
    if (c.keyword !== undefined) matched.push('keyword');
    if (c.semanticHit) matched.push('semantic');
    return { key: c.key, score, matched, order: c.order };
  });
  out.sort((a, b) => b.score - a.score || b.order - a.order);
  return out.map(({ key, score, matched }) => ({ key, score: Number(score.toPrecision(6)), matched }));
}

/**
 * What a memory's vector is computed from: its content, then its title, then the start of the
 * memory written just before it in its session (same project and agent, at most SESSION_GAP_MS
 * earlier; at most CONTEXT_CHARS of it). Content goes first because bge-small reads the start of
 * a text most (a title that leads with a date and a name pulls every memory of that day or
 * speaker together); the previous memory is what a memory answers or continues ("Yes, twice a
 * week" after "Do you still run?"). The context is taken when the memory is embedded: a later
 * edit of the previous memory does not re-embed this one (SQLite re-embeds it when *which* memory
 * comes before it changes: memory_vectors.prev, sqlite-memory-schema.ts). Measured on the LoCoMo dev
 * conversations (bench/README.md "Retrieval quality"); each step was better on each of the five.
 * Change MEMORY_TEXT_FORMAT with this function: it is part of the vector-space key, so stored
 * vectors are recomputed (the model-change re-embed path).
 */
export const MEMORY_TEXT_FORMAT = 'ctx1';
export const CONTEXT_CHARS = 500;
export function memoryEmbeddingText(title: string | null, content: string, previous?: string | null): string {
  const own = title ? `${content}\n${title}` : content;
  return previous ? `${own}\n${previous.slice(0, CONTEXT_CHARS)}` : own;
}

/** The part of a search string that is embedded: exclusions dropped, quotes removed. */
export function semanticText(q: string): string {
  return q
    .replace(/(^|\s)-("[^"]*"?|\S+)/g, ' ')
    .replace(/"/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
