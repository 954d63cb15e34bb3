import { hasPositiveTerms, ParsedSearch, parseSearchQuery, snippetMaker, toFts5Match, toFts5Terms } from '../../../libs/search-query';
import { ALL_NAMESPACES } from '../../namespaces/namespace';
import { MemoryPage, MemoryRow, SearchQuery } from '../ports/memory.model';
import { filterSql, hasFilter, onlyNamespace, searchFilter } from './sqlite-list-planner';
import { FtsScope } from './sqlite-fts-namespace';
import { DbRow, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';

/** Tokens around the best match shown by snippet(). */
const SNIPPET_TOKENS = 24;
/** Ranked search: newest matches looked at per term (see rankedSearch). */
export const DEFAULT_TERM_WINDOW = 500;
/** Ranked search: a title or tag hit counts this many times a content hit. */
const TITLE_TAG_WEIGHT = 3;
export const DEFAULT_EXACT_RANKING_BUDGET = 2000;
/** See rankedSearch: below this many filtered candidates, a windowed search is ranked exactly. */
const FILTERED_WINDOW_MIN = 200;

/** See SqliteMemoryIndexOptions. */
export interface RankingOptions {
  termWindow: number;
  exactRankingBudget: number;
}

/**
 * Search (CONTRACT §3). When the query's words match few memories, FTS5's bm25() ranks every
 * match (title 10, tags 6, content 1). bm25's IDF step reads the whole posting list of every
 * term on every query, tens of milliseconds for a common word at 100,000 memories, so larger
 * result sets are ranked term by term instead: for each term (a word with its Porter variants,
 * or a phrase) we read the newest `termWindow` matching rowids, and those with the term in the
 * title or tags; a memory scores sum(idf(term) * (1 or TITLE_TAG_WEIGHT)) over the terms it
 * contains, so more and rarer words rank higher and title/tag hits weigh more; ties go to the
 * newer memory.
 */
export function rankedFullTextSearch(stmt: Stmt, opts: RankingOptions, asked: SearchQuery): MemoryPage {
  const parsed = parseSearchQuery(asked.text);
  if (!hasPositiveTerms(parsed)) return { rows: [], total: 0 };
  const query = { ...asked, filter: searchFilter(stmt, asked.filter) };
  const ranked = rankedSearch(stmt, opts, parsed, query);
  const page = 'rows' in ranked ? ranked : exactSearch(stmt, parsed, query, ranked.total);
  return { ...page, rows: onlyNamespace(asked.filter.namespace, page.rows) };
}

/** A memory's place in the full-text ranking: its seq and its score, rounded as rows show it. */
export interface RankedSeq {
  seq: number;
  score: number;
}

/**
 * The page rankedFullTextSearch would return, as seqs and scores only: no rows read, no
 * snippets built (hybrid search's keyword list, sqlite-vectors.ts, reads rows for its own page).
 */
export function rankedFullTextSeqs(stmt: Stmt, opts: RankingOptions, asked: SearchQuery): RankedSeq[] {
  const parsed = parseSearchQuery(asked.text);
  if (!hasPositiveTerms(parsed)) return [];
  // Seqs only: the caller's rows are read (and kept to the namespace) by vectorSearch's pageRows.
  const query = { ...asked, filter: searchFilter(stmt, asked.filter) };
  const ranked = rankedSearch(stmt, opts, parsed, query, true);
  return 'seqs' in ranked ? ranked.seqs : exactSearch(stmt, parsed, query, ranked.total, true).seqs;
}

const rounded = (score: number) => Number(score.toPrecision(6));

/** The numbers a term's rarity is estimated from, in a full-text scope (rankedSearch, documentCounts). */
interface ScopeStats {
  /** The scope's memories. */
  n: number;
  maxSeq: number;
  /** The share of the store's rowids that are the scope's (read only when needed: summing every namespace's counts costs ~0.3 ms at 100 namespaces). */
  share: () => number;
  /** A term's document count from its newest matches (`window`, descending, at most `C`): exact when fewer than C, else scaled from the rowids they span. */
  df: (window: number[], C: number) => number;
}

function scopeStats(stmt: Stmt, scope: FtsScope): ScopeStats {
  // Every row has one type: the running counts give count(*) without scanning an index.
  const n = scope.count(stmt);
  let shareOf: number | null = scope.matchesNamespace ? null : 1;
  const share = () => (shareOf ??= n / Math.max(n, FtsScope.of(ALL_NAMESPACES).count(stmt)));
  const maxSeq = (stmt('SELECT max(seq) FROM memories').pluck().get() as number) ?? 0;
  const df = (window: number[], C: number) => (window.length < C ? window.length : (C * n) / Math.max(C, (maxSeq - window[window.length - 1] + 1) * share()));
  return { n, maxSeq, share, df };
}

/**
 * The scope's size and how many of its memories match each FTS expression (0 for none): counted up
 * to DEFAULT_TERM_WINDOW, estimated beyond it from the newest matches' rowids as rankedSearch does
 * (reading a common word's 10,000 matches to count them cost ~0.3 ms a word at 100,000 memories).
 */
export function documentCounts(stmt: Stmt, scope: FtsScope, exprs: Array<string | undefined>): { docs: number; df: number[] } {
  const stats = scopeStats(stmt, scope);
  const newest = stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?').pluck();
  const df = (e: string) => Math.round(stats.df(newest.all(scope.fts(e), DEFAULT_TERM_WINDOW) as number[], DEFAULT_TERM_WINDOW));
  return { docs: stats.n, df: exprs.map((e) => (e === undefined ? 0 : df(e))) };
}

/**
 * The windowed ranking, or `{ total }` when exactSearch must rank instead; `total` is then the
 * number of matches when the windows already hold every one of them (no filter), else null.
 */
function rankedSearch(stmt: Stmt, opts: RankingOptions, parsed: ParsedSearch, query: SearchQuery): MemoryPage | { total: number | null };
function rankedSearch(stmt: Stmt, opts: RankingOptions, parsed: ParsedSearch, query: SearchQuery, seqsOnly: true): { seqs: RankedSeq[] } | { total: number | null };
function rankedSearch(stmt: Stmt, opts: RankingOptions, parsed: ParsedSearch, query: SearchQuery, seqsOnly = false): MemoryPage | { seqs: RankedSeq[] } | { total: number | null } {
  const { terms, exclusion } = toFts5Terms(parsed);
  const C = opts.termWindow;
  const newest = stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?').pluck();
  // Title/tag hits are only looked up for rows in the term's window (rowid >= its cutoff): the
  // same answer for those rows as the newest `C` title/tag hits, reading far fewer of them.
  const newestTitleTags = stmt('SELECT rowid FROM memories_tt WHERE memories_tt MATCH ? AND rowid >= ? ORDER BY rowid DESC LIMIT ?').pluck();
  // The windows hold the namespace's matches only when the MATCH keeps to it (FtsScope): then the
  // statistics are the namespace's (its size; its rows spread over the store's rowids by its share).
  const scope = FtsScope.of(query.filter.namespace);
  const stats = scopeStats(stmt, scope);
  const { n, maxSeq, share } = stats;
  if (n === 0) return { rows: [], total: 0 };
  const not = (e: string) => scope.fts(exclusion ? `(${e}) NOT (${exclusion})` : e);

  interface TermHits extends TermWindow {
    /** Rowids below this are not known (the window was full). 0 when complete. */
    cutoff: number;
  }
  const hits: TermHits[] = terms.map((t) => {
    const any = newest.all(not(t.expr), C) as number[];
    const complete = any.length < C;
    const cutoff = complete ? 0 : any[any.length - 1];
    // Exclusions are applied through `any` (a row must be in it to count). The bound is a BigInt:
    // FTS5 ignores a REAL rowid constraint (what a JS number binds as) beside MATCH.
    const titleTags = any.length === 0 ? [] : (newestTitleTags.all(scope.titleTags(t.expr), BigInt(cutoff), C) as number[]);
    const df = stats.df(any, C);
    return { rows: any, titleTags, cutoff, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)), required: t.required };
  });

  // Few matches: bm25 over all of them is cheap and ranks with term frequencies too. Not with a
  // multi-word phrase: bm25 counts a phrase's documents by reading every occurrence of its words.
  const postings = hits.reduce((sum, h) => sum + h.rows.length, 0);
  const phrases = terms.some((t) => t.words.length > 1);
  const exact = !phrases && hits.every((h) => h.cutoff === 0) && postings <= opts.exactRankingBudget;
  const filtered = hasFilter(query.filter);

  // Candidates: rows of the required terms (phrases, all of them), else of any term; with their
  // scores, in descending rowid order.
  let scored = windowScores(hits);
  // Every window complete and no filter: the candidates are exactly the matches, so their number
  // is exactSearch's total (it need not count again).
  if (exact) return { total: filtered ? null : scored.count };
  if (filtered && scored.count > 0) {
    const { where, params } = filterSql(query.filter);
    const kept = stmt(`SELECT m.seq FROM memories m WHERE m.seq IN (SELECT value FROM json_each(@seqs)) AND ${where.join(' AND ')}`)
      .pluck()
      .all({ ...params, seqs: JSON.stringify(Array.from(scored.seqs.subarray(0, scored.count))) }) as number[];
    scored = scored.keep(new Set(kept));
  }

  const incomplete = hits.filter((h) => h.cutoff > 0);
  let total = scored.count;
  if (incomplete.length > 0) {
    // A filter that leaves fewer rows in the windows than the largest page: rank every match
    // exactly instead. Decided from the query alone (not the page), so paging stays consistent.
    if (filtered && scored.count < FILTERED_WINDOW_MIN) return { total: null };
    // Exact inside the window where every term is complete; scaled to the whole table.
    const lowest = Math.max(...incomplete.map((h) => h.cutoff));
    let inside = 0;
    while (inside < scored.count && scored.seqs[inside] >= lowest) inside++;
    total = Math.max(scored.count, Math.round((inside * n) / Math.max(1, (maxSeq - lowest + 1) * share())));
  }
  // The page's places only: the best offset + limit by (score, newer first).
  const page = scored.best(query.offset + query.limit).slice(query.offset);
  if (seqsOnly) return { seqs: page.map((p) => ({ seq: p.seq, score: rounded(p.score) })) };
  if (page.length === 0) return { rows: [], total, reachable: scored.count };
  const details = stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))`).all(JSON.stringify(page.map((p) => p.seq))) as DbRow[];
  const bySeq = new Map(details.map((d) => [d.seq, d]));
  const snippet = snippetMaker(parsed);
  const rows: MemoryRow[] = [];
  for (const p of page) {
    const d = bySeq.get(p.seq);
    if (!d) continue;
    const row = toRow(d);
    row.snippet = snippet(d.content ?? '') ?? row.snippet;
    row.score = rounded(p.score);
    rows.push(row);
  }
  return { rows, total, reachable: scored.count };
}

/** Exact bm25 ranking over every match: for small result sets, and for a filtered search that needs more than the windows hold. */
function exactSearch(stmt: Stmt, parsed: ParsedSearch, query: SearchQuery, knownTotal: number | null): MemoryPage;
function exactSearch(stmt: Stmt, parsed: ParsedSearch, query: SearchQuery, knownTotal: number | null, seqsOnly: true): { seqs: RankedSeq[] };
function exactSearch(stmt: Stmt, parsed: ParsedSearch, query: SearchQuery, knownTotal: number | null, seqsOnly = false): MemoryPage | { seqs: RankedSeq[] } {
  const words = toFts5Match(parsed);
  if (words === null) return seqsOnly ? { seqs: [] } : { rows: [], total: 0 };
  const match = FtsScope.of(query.filter.namespace).fts(words);
  const { where, params } = filterSql(query.filter);
  const filters = where.length ? ` AND ${where.join(' AND ')}` : '';
  const base = `FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH @match${filters}`;
  const all = { ...params, match };
  const rank = () =>
    stmt(`SELECT m.seq AS seq, -memories_fts.rank AS score ${base} ORDER BY memories_fts.rank LIMIT @limit OFFSET @offset`).all({
      ...all,
      limit: query.limit,
      offset: query.offset,
    }) as Array<{ seq: number; score: number }>;
  // The seqs alone need no count: the ranking's page is the answer.
  if (seqsOnly) return { seqs: rank().map((r) => ({ seq: r.seq, score: rounded(r.score) })) };
  const total = knownTotal ?? (stmt(`SELECT count(*) AS n ${base}`).get(all) as { n: number }).n;
  if (total === 0 || query.offset >= total) return { rows: [], total };
  // Rank first without snippets (cheap), then build snippets for the page only.
  const ranked = rank();
  if (ranked.length === 0) return { rows: [], total };
  const seqs = ranked.map((r) => r.seq);
  // The page's snippets in one pass over the matches between its lowest and highest rowid: given
  // `rowid IN (...)`, FTS5 re-runs the MATCH once per value (each ~40 µs, more than the scan).
  // The unary + keeps the IN list a plain filter, so snippet() runs for the page's rows only.
  // Bounds are bound as BigInt (INTEGER): better-sqlite3 binds a JS number as REAL, and FTS5
  // ignores a REAL rowid constraint beside MATCH.
  const details = stmt(
    `SELECT ${ROW_COLUMNS}, snippet(memories_fts, 2, '', '', '…', ${SNIPPET_TOKENS}) AS snip
     FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
     WHERE memories_fts MATCH @match AND memories_fts.rowid BETWEEN @lo AND @hi
       AND +memories_fts.rowid IN (SELECT value FROM json_each(@seqs))`,
  ).all({ match, lo: BigInt(Math.min(...seqs)), hi: BigInt(Math.max(...seqs)), seqs: JSON.stringify(seqs) }) as DbRow[];
  const bySeq = new Map(details.map((d) => [d.seq, d]));
  const rows: MemoryRow[] = [];
  for (const r of ranked) {
    const d = bySeq.get(r.seq);
    if (!d) continue; // deleted between the two statements (cannot happen inside one synchronous call)
    const row = toRow(d);
    const snip = (d.snip ?? '').replace(/\s+/g, ' ').trim();
    row.snippet = snip.length > 0 ? snip : row.snippet;
    row.score = rounded(r.score);
    rows.push(row);
  }
  return { rows, total };
}

/** A term's window (rankedSearch). */
export interface TermWindow {
  /** Newest matching rowids, descending. */
  rows: number[];
  /** Newest rowids with the term in their title or tags (from the window's lowest rowid on), descending. */
  titleTags: number[];
  idf: number;
  required: boolean;
}

/**
 * The candidates of a windowed ranking, descending by rowid, with their scores: the rows in
 * every required term's window (phrases), or with none required in any term's window. A row's
 * score is the sum over the terms whose window holds it, in query order, of idf · (TITLE_TAG_WEIGHT
 * for a title or tag hit, else 1). One merge of the windows (each descending, as are the title and
 * tag hits): no map or set per search.
 */
export function windowScores(hits: TermWindow[]): WindowScores {
  const k = hits.length;
  const at = new Int32Array(k);
  const tt = new Int32Array(k);
  const need = hits.filter((h) => h.required).length;
  const size = hits.reduce((sum, h) => sum + h.rows.length, 0);
  const seqs = new Float64Array(size);
  const scores = new Float64Array(size);
  let count = 0;
  for (;;) {
    let r = -1;
    for (let t = 0; t < k; t++) {
      const rows = hits[t].rows;
      if (at[t] < rows.length && rows[at[t]] > r) r = rows[at[t]];
    }
    if (r < 0) break;
    let score = 0;
    let required = 0;
    for (let t = 0; t < k; t++) {
      const h = hits[t];
      if (at[t] >= h.rows.length || h.rows[at[t]] !== r) continue;
      at[t]++;
      const titles = h.titleTags;
      while (tt[t] < titles.length && titles[tt[t]] > r) tt[t]++;
      score += h.idf * (tt[t] < titles.length && titles[tt[t]] === r ? TITLE_TAG_WEIGHT : 1);
      if (h.required) required++;
    }
    if (required < need) continue;
    seqs[count] = r;
    scores[count] = score;
    count++;
  }
  return new WindowScores(seqs, scores, count);
}

/** windowScores' answer: candidates [0, count) of `seqs` and `scores`, descending by rowid. */
export class WindowScores {
  constructor(
    readonly seqs: Float64Array,
    readonly scores: Float64Array,
    readonly count: number,
  ) {}

  /** The candidates whose rowid is in `kept`, in the same order. */
  keep(kept: Set<number>): WindowScores {
    const seqs = new Float64Array(this.count);
    const scores = new Float64Array(this.count);
    let n = 0;
    for (let i = 0; i < this.count; i++) {
      if (!kept.has(this.seqs[i])) continue;
      seqs[n] = this.seqs[i];
      scores[n] = this.scores[i];
      n++;
    }
    return new WindowScores(seqs, scores, n);
  }

  /**
   * The best `limit` candidates, best first: higher score, then the newer (higher rowid). What
   * sorting them all and taking the first `limit` gives, without sorting them all: a page needs
   * 10–50 of the ~1,500 a three-word search scores.
   */
  best(limit: number): RankedSeq[] {
    const { seqs, scores } = this;
    const n = this.count;
    const want = Math.max(0, Math.min(limit, n));
    if (want === 0) return [];
    const better = (i: number, j: number) => scores[i] > scores[j] || (scores[i] === scores[j] && seqs[i] > seqs[j]);
    let order: number[];
    if (want * 8 >= n) {
      order = Array.from({ length: n }, (_, i) => i).sort((i, j) => scores[j] - scores[i] || seqs[j] - seqs[i]);
      order.length = want;
    } else {
      // The best so far, best first; a candidate goes in only when it beats the last of them.
      order = [];
      for (let i = 0; i < n; i++) {
        if (order.length === want && !better(i, order[want - 1])) continue;
        let p = order.length === want ? want - 1 : order.length;
        while (p > 0 && better(i, order[p - 1])) {
          order[p] = order[p - 1];
          p--;
        }
        order[p] = i;
      }
    }
    return order.map((i) => ({ seq: seqs[i], score: scores[i] }));
  }
}
