import { asksForTotal, comparisonSides, parseSearchQuery, SESSION_GAP_MS } from '../../../libs/search-query';
import type { MemoryRow, SearchCandidate, SearchCandidates } from '../../backends/ports/memory.model';
import type { CosineScale } from '../../embeddings/embedding-provider.port';

/**
 * The one ranking step of semantic and hybrid search, above the adapters (decision 0120): the
 * adapters hand over candidates with raw signals (SearchCandidate), this turns them into an
 * absolute relevance in [0, 1] that means the same across queries, and a floor decides which
 * candidates are answers at all.
 *
 * - semantic: S = the cosine mapped linearly from COSINE_ZERO (0: what unrelated text scores
 *   with bge-small) to COSINE_ONE (1), clamped; a model that states its own scale (a local
 *   model's model.json, decision 0172) is mapped by that instead. The scale is a conversation
 *   turn's; a memory of any other type (an independent note) is lifted by NOTE_LIFT of it
 *   (decision 0173): a short note embedded alone scores lower cosines against the questions it
 *   answers, and against those it does not, than a turn whose conversation's names and topics
 *   fill the question.
 * - keyword: K = share x (KEYWORD_BASE + (1 - KEYWORD_BASE) x rarity), where share is the part of
 *   the query's IDF weight the memory contains (rare words weigh most) and rarity the IDF of its
 *   rarest matched word over the largest IDF possible in this store; each quoted phrase found as
 *   a phrase adds PHRASE_WEIGHT of what is left (a phrase weighs, it never filters).
 * - a comparison ("which first, A or B?", "how long between A and B?", decision 0164): a memory
 *   holding one side's own words is scored on that side (the head and the side) as well, and the
 *   better K counts (signal `comparison_side`: what it added); each side's evidence is usually a
 *   memory of its own, and the whole question's words would bury both.
 * - a long memory (hybrid, decision 0169): holds many of a question's words by its length alone,
 *   so its K (and its comparison side's) is scaled by √(LONG_MEMORY / length), never below
 *   LONG_MEMORY_MIN (signal `long_memory`: what it cost). A short statement of the fact comes
 *   before a long text that mentions the same words; a long memory with the rare word still answers.
 * - base = 1 - (1 - K)(1 - S) in hybrid (either kind of evidence alone can place a memory, so a
 *   memory without a vector yet is ranked by its words and is not buried under semantic-only
 *   rows); S alone in semantic mode. Then the extra signals of the hooks (recency, date match).
 * - no close meaning (hybrid, decision 0162): when no candidate's S reaches MEANING_GATE, nothing
 *   stored is close to the question in meaning, and the cosines only say which text is least far:
 *   S counts 0 for every row and each pays NO_MEANING_PENALTY (signal `no_close_meaning`), so a
 *   row is an answer only when its words alone clear the floor by that much. Shared everyday
 *   words of a question about something absent no longer make an answer.
 * - neighbours (hybrid, conversation turns only, both sides): + NEIGHBOUR_WEIGHT x the best base
 *   of its session neighbours among the candidates x (1 - base).
 * - an optional second stage re-scores the best N (hooks.rescore); then the floor applies:
 *   rows below it are not answers, and `total` counts only those kept.
 * - a question that asks for a count or a total (hybrid, decision 0165): among the rows kept, a
 *   conversation turn is placed as if it scored SESSION_REPEAT less for every turn of its session
 *   ranked above it, so the next session's best turn can come before a session's second (the
 *   answer adds up occasions, each usually told in a session of its own, and a session's turns
 *   repeat each other). Order only: its score stays its relevance. Signal `same_session`.
 */
export const RELEVANCE = {
  COSINE_ZERO: 0.55,
  COSINE_ONE: 0.85,
  /** S added to a memory that is not a conversation turn: its cosines sit lower on the same scale (decision 0173). */
  NOTE_LIFT: 0.2,
  KEYWORD_BASE: 0.7,
  PHRASE_WEIGHT: 0.3,
  NEIGHBOUR_WEIGHT: 0.5,
  /** The default floor (min_score); chosen on the LoCoMo dev set and absent-thing queries (decision 0121). */
  FLOOR: 0.4,
  /** Hybrid: below this best S among the candidates, nothing is close in meaning (decision 0162). */
  MEANING_GATE: 0.2,
  /** Hybrid: what each row pays when nothing is close in meaning (decision 0162). */
  NO_MEANING_PENALTY: 0.1,
  /** Hybrid, questions asking for a total, order only: how much lower a turn is placed per turn of its session above it (decision 0165). */
  SESSION_REPEAT: 0.1,
  /** Hybrid: the length (characters) above which a memory's K is scaled down, and the least share of it kept (decision 0169). */
  LONG_MEMORY: 600,
  LONG_MEMORY_MIN: 0.7,
};

/**
 * An extra per-row signal (a hook): its name (shown by explain) and what it adds to the base score
 * (may be negative). A `rankOnly` signal orders the rows that pass the floor but never lifts a
 * row over it (a date in the question prefers memories of that time; it is no reason to answer).
 */
export interface RowSignal {
  name: string;
  value: number;
  rankOnly?: boolean;
}

export interface RankingHooks {
  /** Per-row signals added to the base score before neighbours and the floor (recency prior, date match...). */
  signals?: Array<(c: SearchCandidate) => RowSignal | null>;
  /** A second stage: new calibrated scores (0..1) for the best `topN` rows by fused score; the floor applies after it. */
  rescore?: { topN: number; run: (rows: RankedRow[]) => Promise<Map<string, number>> };
}

/** Why a row is where it is (explain=true). */
export interface Explanation {
  matched_words: string[];
  matched_phrases: string[];
  /** The adapter's own keyword score (its scale is the backend's), null when not in the keyword list. */
  keyword_score: number | null;
  /** K above. */
  keyword: number;
  cosine: number | null;
  /** S above. */
  semantic: number;
  neighbour_boost: number;
  signals: Record<string, number>;
  rescore: number | null;
  score: number;
  floor: number;
}

/** A candidate while it is ranked: score (relevance), rank-only signals (in the score shown), repeat (order only). */
interface Ranked {
  c: SearchCandidate;
  score: number;
  rankOnly: number;
  repeat: number;
  explain: Explanation;
}

/** A ranked answer: the rows at or above the floor, best first, and the best score the floor left out. */
export interface Ranking {
  rows: RankedRow[];
  /** The highest relevance among the candidates below the floor (what `min_score` would have to be to let one more in); null when none was left out. */
  bestBelowFloor: number | null;
}

export interface RankedRow {
  row: MemoryRow;
  score: number;
  explain: Explanation;
}

const r4 = (x: number) => Math.round(x * 1e4) / 1e4;
const clamp01 = (x: number) => (x < 0 ? 0 : x > 1 ? 1 : x);

/** bge-small's cosine scale: the default of a model that states none. */
const DEFAULT_SCALE = (): CosineScale => ({ zero: RELEVANCE.COSINE_ZERO, one: RELEVANCE.COSINE_ONE });

/** S of a candidate: its cosine on the model's scale, lifted for a memory that is not a conversation turn (decision 0173). */
function semanticSignal(c: Pick<SearchCandidate, 'cosine' | 'row'>, scale: CosineScale = DEFAULT_SCALE()): number {
  if (c.cosine === undefined) return 0;
  const lift = c.row.type === 'conversation' ? 0 : RELEVANCE.NOTE_LIFT;
  return clamp01((c.cosine - scale.zero) / (scale.one - scale.zero) + lift);
}

/** The share of K a memory of `length` characters keeps (decision 0169). */
export function lengthFactor(length: number): number {
  return length <= RELEVANCE.LONG_MEMORY ? 1 : Math.max(RELEVANCE.LONG_MEMORY_MIN, Math.sqrt(RELEVANCE.LONG_MEMORY / length));
}

/** The words' weights: BM25's IDF from the store's counts. */
function idfOf(set: SearchCandidates): { idf: Map<string, number>; max: number } {
  const n = Math.max(1, set.docs);
  const idf = new Map<string, number>();
  for (const [w, df] of set.df) idf.set(w, Math.log(1 + (Math.max(n, df) - df + 0.5) / (df + 0.5)));
  return { idf, max: Math.log(1 + (n - 1 + 0.5) / 1.5) };
}

export function keywordSignal(c: Pick<SearchCandidate, 'words' | 'phrases'>, idf: Map<string, number>, maxIdf: number, phrases: number): number {
  let all = 0;
  for (const v of idf.values()) all += v;
  if (all <= 0 || c.words.length === 0) return c.phrases.length > 0 && phrases > 0 ? RELEVANCE.PHRASE_WEIGHT * (c.phrases.length / phrases) : 0;
  let got = 0;
  let rarest = 0;
  for (const w of c.words) {
    const v = idf.get(w) ?? 0;
    got += v;
    rarest = Math.max(rarest, v);
  }
  const rarity = maxIdf > 0 ? Math.min(1, rarest / maxIdf) : 1;
  const k = (got / all) * (RELEVANCE.KEYWORD_BASE + (1 - RELEVANCE.KEYWORD_BASE) * rarity);
  return phrases > 0 ? k + (1 - k) * RELEVANCE.PHRASE_WEIGHT * (c.phrases.length / phrases) : k;
}

/**
 * Ranks a semantic or hybrid search's candidates: every one scored, those at or above `floor`
 * kept, best first (ties, as between cosines beyond COSINE_ONE: the higher cosine, then the newer
 * memory), and the best relevance of those left out (an empty answer then says how close it came).
 */
export async function rankCandidates(set: SearchCandidates, opts: { mode: 'semantic' | 'hybrid'; text: string; floor: number; hooks?: RankingHooks; scale?: CosineScale | null }): Promise<Ranking> {
  const { mode, floor, hooks } = opts;
  const scale = opts.scale ?? DEFAULT_SCALE();
  const phrases = parseSearchQuery(opts.text).phrases.filter((p) => p.length > 1);
  const { idf, max } = idfOf(set);
  const sides = mode === 'hybrid' ? comparisonSides(opts.text).map((side) => ({ ...side, idf: new Map(side.words.filter((w) => idf.has(w)).map((w) => [w, idf.get(w) ?? 0])) })) : [];
  const base = new Map<string, number>();
  const meaning = set.list.map((c) => semanticSignal(c, scale));
  const closeMeaning = mode === 'semantic' || meaning.some((s) => s >= RELEVANCE.MEANING_GATE);
  const out = set.list.map((c, i): Ranked => {
    const k = mode === 'hybrid' ? keywordSignal(c, idf, max, phrases.length) : 0;
    const s = closeMeaning ? meaning[i] : 0;
    const signals: Record<string, number> = {};
    let b = mode === 'hybrid' ? 1 - (1 - k) * (1 - s) : s;
    const side = Math.max(k, ...sides.map((d) => (d.own.some((w) => c.words.includes(w)) ? keywordSignal({ words: c.words, phrases: [] }, d.idf, max, 0) : 0)));
    if (side > k) {
      signals.comparison_side = r4((side - k) * (1 - s));
      b += (side - k) * (1 - s);
    }
    const long = mode === 'hybrid' ? side * (1 - lengthFactor(c.length)) * (1 - s) : 0;
    if (long > 0) {
      signals.long_memory = r4(-long);
      b -= long;
    }
    if (!closeMeaning) {
      signals.no_close_meaning = -RELEVANCE.NO_MEANING_PENALTY;
      b -= RELEVANCE.NO_MEANING_PENALTY;
    }
    let rankOnly = 0;
    for (const hook of hooks?.signals ?? []) {
      const sig = hook(c);
      if (sig) {
        signals[sig.name] = r4(sig.value);
        if (sig.rankOnly) rankOnly += sig.value;
        else b += sig.value;
      }
    }
    b = clamp01(b);
    base.set(c.row.id, b);
    return {
      c,
      score: b,
      rankOnly,
      repeat: 0,
      explain: {
        matched_words: c.words,
        matched_phrases: c.phrases.flatMap((i) => (phrases[i] ? [phrases[i].join(' ')] : [])),
        keyword_score: c.keyword ?? null,
        keyword: r4(k),
        cosine: c.cosine === undefined ? null : r4(c.cosine),
        semantic: r4(s),
        neighbour_boost: 0,
        signals,
        rescore: null,
        score: 0,
        floor,
      },
    };
  });
  if (mode === 'hybrid') {
    const conversation = new Set(set.list.filter((c) => c.row.type === 'conversation').map((c) => c.row.id));
    for (const o of out) {
      if (!conversation.has(o.c.row.id)) continue;
      let best = 0;
      for (const n of o.c.neighbours) if (conversation.has(n)) best = Math.max(best, base.get(n) ?? 0);
      const boost = RELEVANCE.NEIGHBOUR_WEIGHT * best * (1 - o.score);
      o.explain.neighbour_boost = r4(boost);
      o.score += boost;
    }
  }
  const order = (a: Ranked, b: Ranked) =>
    b.score + b.rankOnly + b.repeat - (a.score + a.rankOnly + a.repeat) ||
    (b.c.cosine ?? -1) - (a.c.cosine ?? -1) ||
    b.c.row.createdAt.getTime() - a.c.row.createdAt.getTime() ||
    (a.c.row.id < b.c.row.id ? -1 : 1);
  out.sort(order);
  if (hooks?.rescore && out.length > 0) {
    const top = out.slice(0, hooks.rescore.topN);
    const fresh = await hooks.rescore.run(top.map((o) => ({ row: o.c.row, score: o.score, explain: o.explain })));
    for (const o of top) {
      const v = fresh.get(o.c.row.id);
      if (v !== undefined) {
        o.explain.rescore = r4(v);
        o.score = clamp01(v);
      }
    }
    out.sort(order);
  }
  const kept = out.filter((o) => o.score >= floor); // membership by relevance alone; rank-only signals then order (and show in) the score, repeats order only
  let bestBelowFloor: number | null = null;
  for (const o of out) if (o.score < floor) bestBelowFloor = Math.max(bestBelowFloor ?? 0, clamp01(o.score));
  if (mode === 'hybrid' && asksForTotal(opts.text) && sessionRepeats(kept)) kept.sort(order);
  const rows = kept.map((o) => {
    const score = r4(clamp01(o.score + o.rankOnly));
    o.explain.score = score;
    return { row: { ...o.c.row, score, matched: [...(o.c.keyword !== undefined ? ['keyword' as const] : []), ...(o.c.semantic ? ['semantic' as const] : [])] }, score, explain: o.explain };
  });
  // Floored down, not rounded: a client that passes this value as min_score gets that row.
  return { rows, bestBelowFloor: bestBelowFloor === null ? null : Math.floor(bestBelowFloor * 1e4) / 1e4 };
}

/**
 * Conversation sessions among ranked rows (best first): turns of one namespace, project and agent
 * chained by at most SESSION_GAP_MS between created_at (among these rows: the service's session
 * neighbours, seen from the rows alone). Each turn is ordered SESSION_REPEAT lower per turn of its
 * session ranked above it (`repeat`). Returns whether any row moved down (the caller sorts again).
 */
function sessionRepeats(rows: Ranked[]): boolean {
  const turns = rows.filter((o) => o.c.row.type === 'conversation');
  const key = new Map(turns.map((o) => [o.c, JSON.stringify([o.c.row.namespace, o.c.row.project, o.c.row.agent])]));
  const byTime = [...turns].sort((a, b) => key.get(a.c)!.localeCompare(key.get(b.c)!) || a.c.row.createdAt.getTime() - b.c.row.createdAt.getTime());
  const session = new Map<SearchCandidate, number>();
  byTime.forEach((o, i) => {
    const p = byTime[i - 1]?.c;
    const same = p !== undefined && key.get(p) === key.get(o.c) && o.c.row.createdAt.getTime() - p.row.createdAt.getTime() <= SESSION_GAP_MS;
    session.set(o.c, same ? (session.get(p) ?? i) : i);
  });
  const shown = new Map<number, number>();
  let paid = false;
  for (const o of turns) {
    const s = session.get(o.c) ?? -1;
    const above = shown.get(s) ?? 0;
    shown.set(s, above + 1);
    if (above === 0) continue;
    const v = -RELEVANCE.SESSION_REPEAT * above;
    o.explain.signals.same_session = r4(v);
    o.repeat = v;
    paid = true;
  }
  return paid;
}
