/**
 * Hybrid ranking: fuses a keyword (full-text) list and a semantic (vector) list into one
 * (README "Hybrid search"). Both adapters use it, so SQLite and MongoDB rank alike.
 *
 * Rule: every candidate (the union of both lists' top FUSION_CANDIDATES) gets both signals
 * where they exist — its keyword score (0 when the full-text list does not hold it) and its
 * cosine similarity (computed for keyword candidates too, not only for the vector list's
 * own). Each signal is normalised over the candidates: keyword score / the best keyword score;
 * cosine min-max between the candidates' lowest and highest. fused = KEYWORD_WEIGHT x keyword
 * + SEMANTIC_WEIGHT x semantic; ties go to the newer memory.
 */
export const FUSION_CANDIDATES = 50;
export const KEYWORD_WEIGHT = 0.5;
export const SEMANTIC_WEIGHT = 0.5;

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
}

export interface FusedResult<K> {
  key: K;
  score: number;
  matched: MatchedList[];
}

export function fuse<K>(candidates: FusionCandidate<K>[], mode: SearchMode): FusedResult<K>[] {
  let kwMax = 0;
  let cosMin = Infinity;
  let cosMax = -Infinity;
  for (const c of candidates) {
    if (c.keyword !== undefined) kwMax = Math.max(kwMax, c.keyword);
    if (c.cosine !== undefined) {
      cosMin = Math.min(cosMin, c.cosine);
      cosMax = Math.max(cosMax, c.cosine);
    }
  }
  const span = cosMax - cosMin;
  const out = candidates.map((c) => {
    const kw = c.keyword !== undefined && kwMax > 0 ? c.keyword / kwMax : 0;
    const sem = c.cosine === undefined ? 0 : span > 1e-9 ? (c.cosine - cosMin) / span : 1;
    const score = mode === 'semantic' ? (c.cosine ?? 0) : mode === 'keyword' ? kw : KEYWORD_WEIGHT * kw + SEMANTIC_WEIGHT * sem;
    const matched: MatchedList[] = [];
    if (c.keyword !== undefined) matched.push('keyword');
    if (c.semanticHit) matched.push('semantic');
    return { key: c.key, score, matched, order: c.order };
  });
  out.sort((a, b) => b.score - a.score || b.order - a.order);
  return out.map(({ key, score, matched }) => ({ key, score: Number(score.toPrecision(6)), matched }));
}

/** The part of a search string that is embedded: exclusions dropped, quotes removed. */
export function semanticText(q: string): string {
  return q
    .replace(/(^|\s)-("[^"]*"?|\S+)/g, ' ')
    .replace(/"/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}
