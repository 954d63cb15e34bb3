import type { MemoryPage, MemoryRow } from '../../backends/ports/memory.model';
import type { CosineScale } from '../../embeddings/embedding-provider.port';
import { Explanation, rankCandidates, RankingHooks, RELEVANCE } from './relevance';

/**
 * One page of a search answer from what the index returned: a keyword page as it is; a semantic
 * or hybrid search's candidates ranked here, above the adapters (relevance.ts), the floor applied
 * (`total` counts only the rows at or above it), then paged; `bestBelowFloor` says how close the
 * best of the rest came (semantic and hybrid only).
 *
 * Hooks for the stages other work adds: `hooks.signals` (a recency prior, a date match: one value
 * per row added before the floor), `hooks.rescore` (a second stage over the best N).
 */
export async function searchPage(
  res: MemoryPage,
  opts: { mode: 'keyword' | 'semantic' | 'hybrid'; text: string; minScore?: number; offset: number; limit: number; hooks?: RankingHooks; scale?: CosineScale | null },
): Promise<{ rows: MemoryRow[]; explains: Explanation[] | null; total: number; reachable?: number; bestBelowFloor?: number | null }> {
  if (!res.candidates || opts.mode === 'keyword') return { rows: res.rows, explains: null, total: res.total, reachable: res.reachable };
  const ranked = await rankCandidates(res.candidates, { mode: opts.mode, text: opts.text, floor: opts.minScore ?? RELEVANCE.FLOOR, hooks: opts.hooks, scale: opts.scale });
  const page = ranked.rows.slice(opts.offset, opts.offset + opts.limit);
  return { rows: page.map((r) => r.row), explains: page.map((r) => r.explain), total: ranked.rows.length, bestBelowFloor: ranked.bestBelowFloor };
}
