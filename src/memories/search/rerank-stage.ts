import type { Reranker } from '../../embeddings/remote-reranker';
import type { RankedRow, RankingHooks } from './relevance';

/** Candidates the second stage re-scores (the best by the first stage). */
export const RERANK_TOP_N = 30;

/** A re-ranker's score as a relevance in 0..1: scores already in that range as they are, raw logits through the logistic function. */
function asProbability(scores: number[]): number[] {
  return scores.every((v) => v >= 0 && v <= 1) ? scores : scores.map((v) => 1 / (1 + Math.exp(-v)));
}

/**
 * The second stage of semantic and hybrid search (issue 45 item 2) as a ranking hook: the
 * configured re-ranker re-scores the best RERANK_TOP_N rows (title and snippet), and its score,
 * a probability, replaces theirs before the floor. Undefined when no re-ranker is configured; a
 * re-ranker that fails or times out leaves the first stage's scores (never a 503).
 */
export function rerankStage(reranker: Reranker, query: string): RankingHooks['rescore'] {
  if (reranker.unavailable) return undefined;
  return {
    topN: RERANK_TOP_N,
    run: async (rows: RankedRow[]) => {
      const scores = await reranker.rerank(
        query,
        rows.map((r) => [r.row.title, r.row.snippet].filter(Boolean).join('\n')),
      );
      const out = new Map<string, number>();
      if (!scores) return out;
      const scored = rows.flatMap((r, i) => (scores[i] === null || scores[i] === undefined ? [] : [{ id: r.row.id, v: scores[i] }]));
      const probs = asProbability(scored.map((x) => x.v));
      scored.forEach((x, i) => out.set(x.id, probs[i]));
      return out;
    },
  };
}
