import { dateBoost, TIME_WEIGHT, type TimeRange } from '../../../libs/search-query';
import type { SearchCandidate } from '../../backends/ports/memory.model';
import type { RowSignal } from './relevance';

/**
 * The date preference of a question that names a time (decision 0135), as a ranking hook: a
 * memory created in the resolved range (or close to it) moves up by at most TIME_WEIGHT. Rank
 * only: it orders the rows that pass the floor and never makes a row an answer by itself.
 */
export function dateSignal(range: TimeRange): (c: SearchCandidate) => RowSignal | null {
  return (c) => {
    const boost = dateBoost(c.row.createdAt.getTime(), range);
    return boost > 0 ? { name: 'date_match', value: TIME_WEIGHT * boost, rankOnly: true } : null;
  };
}
