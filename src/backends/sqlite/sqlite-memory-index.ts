import type Database from 'better-sqlite3';
import { hasPositiveTerms, ParsedSearch, parseSearchQuery, snippetMaker, toFts5Match, toFts5Terms } from '../../../libs/search-query';
import { AppError, BackendUnavailableError, ConflictError } from '../../common/errors';
import { MemoryIndex } from '../ports/memory-index.port';
import {
  ListQuery,
  MEMORY_SCOPES,
  MEMORY_TYPES,
  MemoryDoc,
  MemoryFilter,
  MemoryPage,
  MemoryRow,
  MemoryScope,
  MemoryStats,
  MemoryType,
  SearchQuery,
} from '../ports/memory.model';

/** Characters of content kept as the list-mode preview. */
export const PREVIEW_CHARS = 200;
/** bm25 column weights: title, tags, content (CONTRACT §3: title and tags weigh more than content). */
const BM25_WEIGHTS = 'bm25(10.0, 6.0, 1.0)';
/** Tokens around the best match shown by snippet(). */
const SNIPPET_TOKENS = 24;
/** Ranked search: newest matches looked at per term (see rankedSearch). */
export const DEFAULT_TERM_WINDOW = 500;
/** Ranked search: a title or tag hit counts this many times a content hit. */
const TITLE_TAG_WEIGHT = 3;

export interface SqliteMemoryIndexOptions {
  /**
   * How many of the newest matches of each query term the ranked search reads. Below it (a term
   * matching fewer memories) ranking and totals are exact; above it, relevance is computed among
   * the newest `termWindow` matches of that term and the total is an estimate.
   */
  termWindow?: number;
  /**
   * When every term is complete (matches fewer than `termWindow` memories) and the terms have at
   * most this many matches together, FTS5's bm25() ranks them instead (term frequency and length
   * normalisation included; its cost grows with the matches, so only for small sets). 0 = never.
   */
  exactRankingBudget?: number;
  /**
   * Create or upgrade the schema (default). False for a connection that only reads (a search
   * worker's): the schema is the main connection's business.
   */
  schema?: boolean;
  /**
   * Tidy the full-text index this long after the last write (ms; see maintainStep), or never when
   * null. Default: 1000 on a connection that owns the schema, null otherwise.
   */
  maintenanceIdleMs?: number | null;
}

/** Runs searches elsewhere (SqliteSearchPool); null when it cannot take one now (then the index searches itself). */
export interface SearchDelegate {
  search(query: SearchQuery): Promise<MemoryPage> | null;
}

export const DEFAULT_EXACT_RANKING_BUDGET = 2000;
const MMAP_BYTES = 1024 * 1024 * 1024;
/** Leaf pages of FTS5 merge work per maintenance step (a step takes ~5 ms, rarely ~15 ms, at 100,000 memories). */
const MERGE_PAGES_PER_STEP = 100;
const DEFAULT_MAINTENANCE_IDLE_MS = 1000;
const FTS_TABLES = ['memories_fts', 'memories_tt'] as const;
/** See rankedSearch: below this many filtered candidates, a windowed search is ranked exactly. */
const FILTERED_WINDOW_MIN = 200;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS memories (
  seq        INTEGER PRIMARY KEY,
  id         TEXT NOT NULL UNIQUE,
  title      TEXT,
  type       TEXT NOT NULL,
  scope      TEXT NOT NULL,
  tags       TEXT NOT NULL,   -- JSON array, order kept
  tag_text   TEXT NOT NULL,   -- tags joined by newlines: what full-text search reads
  agent      TEXT,
  project    TEXT,
  content    TEXT NOT NULL,
  preview    TEXT NOT NULL,   -- list-mode snippet
  created_at INTEGER NOT NULL, -- epoch ms
  updated_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_newest  ON memories (created_at DESC, id DESC);
-- One index per filter column, in newest-first order, ending with the other filter columns: a
-- filtered count (or a page skipping non-matching rows) reads only the index, never the rows
-- (which carry the content: counting 30,000 rows through them took ~6 ms at 100,000 memories).
CREATE INDEX IF NOT EXISTS memories_type_f    ON memories (type, created_at DESC, id DESC, scope, agent, project);
CREATE INDEX IF NOT EXISTS memories_scope_f   ON memories (scope, created_at DESC, id DESC, type, agent, project);
CREATE INDEX IF NOT EXISTS memories_agent_f   ON memories (agent, created_at DESC, id DESC, type, scope, project);
CREATE INDEX IF NOT EXISTS memories_project_f ON memories (project, created_at DESC, id DESC, type, scope, agent);

-- One row per (memory, tag), with the memory's position in the newest-first order, so a tag
-- filter walks its own index in order (and counts without touching the memories table).
CREATE TABLE IF NOT EXISTS memory_tags (
  tag        TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  id         TEXT NOT NULL,
  seq        INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
  PRIMARY KEY (tag, created_at, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_tags_by_memory ON memory_tags (seq, tag);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
  title, tag_text, content,
  content = 'memories', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Title and tags alone: a small index, so "which of these memories have the word in the title or
-- tags" costs in proportion to title/tag hits rather than to every occurrence of the word.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_tt USING fts5 (
  title, tag_text,
  content = 'memories', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS memories_tt_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memories_tt (rowid, title, tag_text) VALUES (new.seq, new.title, new.tag_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_tt_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memories_tt (memories_tt, rowid, title, tag_text) VALUES ('delete', old.seq, old.title, old.tag_text);
END;
CREATE TRIGGER IF NOT EXISTS memories_tt_update AFTER UPDATE OF title, tag_text ON memories BEGIN
  INSERT INTO memories_tt (memories_tt, rowid, title, tag_text) VALUES ('delete', old.seq, old.title, old.tag_text);
  INSERT INTO memories_tt (rowid, title, tag_text) VALUES (new.seq, new.title, new.tag_text);
END;

-- Running counts for /api/stats (grouping 100,000 rows on every call would cost tens of ms).
-- A missing project or agent is counted under ''.
CREATE TABLE IF NOT EXISTS memory_counts (
  dim TEXT NOT NULL,
  key TEXT NOT NULL,
  n   INTEGER NOT NULL,
  PRIMARY KEY (dim, key)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS memory_counts_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memory_counts (dim, key, n) VALUES
    ('type', new.type, 1), ('scope', new.scope, 1), ('project', coalesce(new.project, ''), 1), ('agent', coalesce(new.agent, ''), 1)
  ON CONFLICT (dim, key) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_delete AFTER DELETE ON memories BEGIN
  UPDATE memory_counts SET n = n - 1 WHERE (dim = 'type' AND key = old.type) OR (dim = 'scope' AND key = old.scope)
    OR (dim = 'project' AND key = coalesce(old.project, '')) OR (dim = 'agent' AND key = coalesce(old.agent, ''));
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_update AFTER UPDATE OF type, scope, project, agent ON memories BEGIN
  UPDATE memory_counts SET n = n - 1 WHERE (dim = 'type' AND key = old.type) OR (dim = 'scope' AND key = old.scope)
    OR (dim = 'project' AND key = coalesce(old.project, '')) OR (dim = 'agent' AND key = coalesce(old.agent, ''));
  INSERT INTO memory_counts (dim, key, n) VALUES
    ('type', new.type, 1), ('scope', new.scope, 1), ('project', coalesce(new.project, ''), 1), ('agent', coalesce(new.agent, ''), 1)
  ON CONFLICT (dim, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts (rowid, title, tag_text, content) VALUES (new.seq, new.title, new.tag_text, new.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, title, tag_text, content) VALUES ('delete', old.seq, old.title, old.tag_text, old.content);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE OF title, tag_text, content ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, title, tag_text, content) VALUES ('delete', old.seq, old.title, old.tag_text, old.content);
  INSERT INTO memories_fts (rowid, title, tag_text, content) VALUES (new.seq, new.title, new.tag_text, new.content);
END;
`;

const DROP = `
DROP TRIGGER IF EXISTS memories_fts_insert;
DROP TRIGGER IF EXISTS memories_fts_delete;
DROP TRIGGER IF EXISTS memories_fts_update;
DROP TRIGGER IF EXISTS memory_counts_insert;
DROP TRIGGER IF EXISTS memory_counts_delete;
DROP TRIGGER IF EXISTS memory_counts_update;
DROP TABLE IF EXISTS memory_counts;
DROP TRIGGER IF EXISTS memories_tt_insert;
DROP TRIGGER IF EXISTS memories_tt_delete;
DROP TRIGGER IF EXISTS memories_tt_update;
DROP TABLE IF EXISTS memories_tt;
DROP TABLE IF EXISTS memories_fts;
DROP TABLE IF EXISTS memory_tags;
DROP TABLE IF EXISTS memories;
`;

const ROW_COLUMNS = 'm.seq, m.id, m.title, m.type, m.scope, m.tags, m.agent, m.project, m.preview, m.created_at, m.updated_at';

interface DbRow {
  seq: number;
  id: string;
  title: string | null;
  type: string;
  scope: string;
  tags: string;
  agent: string | null;
  project: string | null;
  preview: string;
  created_at: number;
  updated_at: number;
  content?: string;
  score?: number;
  snip?: string;
}

type Params = Record<string, string | number>;

/** A content preview for list rows: the first characters, whitespace collapsed. */
export function previewOf(content: string): string {
  const flat = content.replace(/\s+/g, ' ').trim();
  if (flat.length <= PREVIEW_CHARS) return flat;
  // Do not cut a surrogate pair in half.
  let cut = PREVIEW_CHARS;
  const code = flat.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return `${flat.slice(0, cut)}…`;
}

/**
 * MemoryIndex on the embedded SQLite file: a plain table with an index for every filter and for
 * newest-first listing, a tag table for the all-tags filter, and an external-content FTS5 table
 * (porter stemming, case and accent folding) kept in step by triggers.
 */
export class SqliteMemoryIndex extends MemoryIndex {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly termWindow: number;
  private readonly exactRankingBudget: number;
  private searchDelegate: SearchDelegate | null = null;
  private readonly maintenanceIdleMs: number | null;
  private maintenanceTimer: NodeJS.Timeout | null = null;
  private maintaining = false;
  private maintenanceStopped = false;
  /** A write while maintenance ran: schedule another round when it ends. */
  private maintenanceAgain = false;

  constructor(
    private readonly db: Database.Database,
    opts: SqliteMemoryIndexOptions = {},
  ) {
    super();
    this.termWindow = Math.max(1, opts.termWindow ?? DEFAULT_TERM_WINDOW);
    this.exactRankingBudget = Math.max(0, opts.exactRankingBudget ?? DEFAULT_EXACT_RANKING_BUDGET);
    // Memory-mapped reads: rows carry their content, so a page read through read(2) per row made
    // filtered lists ~10x slower at 100,000 memories. (Per connection; only address space.)
    this.db.pragma(`mmap_size = ${MMAP_BYTES}`);
    if (opts.schema !== false) this.createSchema();
    this.maintenanceIdleMs = opts.maintenanceIdleMs === undefined ? (opts.schema === false ? null : DEFAULT_MAINTENANCE_IDLE_MS) : opts.maintenanceIdleMs;
    // An index left fragmented (by a bulk import, or writes before a restart) is tidied too.
    this.scheduleMaintenance();
  }

  /**
   * FTS5 segment maintenance. Every write transaction adds a small segment to each full-text
   * index and FTS5's automerge keeps up to ~4 per level, so at 100,000 memories a term lookup
   * read ~15 segments (~25 % slower than one). When writes pause, we merge them in small steps
   * (`merge` with usermerge = 2: levels of two or more segments, smallest first), yielding to
   * requests between steps: a tidy-up after a few hundred writes is ~15 ms of work in all; the
   * first one on an index seeded without it ~0.7 s, spread over ~150 steps.
   */
  private scheduleMaintenance(): void {
    if (this.maintenanceIdleMs === null || this.maintenanceStopped) return;
    if (this.maintaining) {
      this.maintenanceAgain = true;
      return;
    }
    if (this.maintenanceTimer) clearTimeout(this.maintenanceTimer);
    this.maintenanceTimer = setTimeout(() => {
      this.maintenanceTimer = null;
      this.maintaining = true;
      const step = () => {
        let more = false;
        try {
          more = !this.maintenanceStopped && this.db.open && this.maintainStep();
        } catch {
          more = false; // the next write schedules another attempt
        }
        if (more) {
          setImmediate(step);
          return;
        }
        this.maintaining = false;
        if (this.maintenanceAgain) {
          this.maintenanceAgain = false;
          this.scheduleMaintenance();
        }
      };
      step();
    }, this.maintenanceIdleMs);
    this.maintenanceTimer.unref();
  }

  /** One bounded step of segment merging on both full-text indexes; true while work remains. */
  maintainStep(pages = MERGE_PAGES_PER_STEP): boolean {
    let worked = false;
    const changes = this.stmt('SELECT total_changes()').pluck();
    for (const t of FTS_TABLES) {
      const before = changes.get() as number;
      this.stmt(`INSERT INTO ${t} (${t}, rank) VALUES ('merge', ${Math.max(1, Math.floor(pages))})`).run();
      // FTS5: a merge that did no work changes fewer than two rows.
      if ((changes.get() as number) - before >= 2) worked = true;
    }
    return worked;
  }

  /** Segments in each full-text index (tests, diagnostics). */
  ftsSegments(): { fts: number; titleTags: number } {
    const count = (t: string) => this.stmt(`SELECT count(DISTINCT segid) FROM ${t}_idx`).pluck().get() as number;
    return { fts: count('memories_fts'), titleTags: count('memories_tt') };
  }

  /** No more maintenance (the connection is about to close). */
  stopMaintenance(): void {
    this.maintenanceStopped = true;
    if (this.maintenanceTimer) clearTimeout(this.maintenanceTimer);
    this.maintenanceTimer = null;
  }

  /** Searches go to `delegate` (worker threads with their own connections) while it takes them. */
  delegateSearches(delegate: SearchDelegate | null): void {
    this.searchDelegate = delegate;
  }

  /** Creates or upgrades the schema in one transaction (a second process opening the file waits). */
  private createSchema(): void {
    this.db.transaction(() => this.createSchemaNow()).immediate();
  }

  private createSchemaNow(): void {
    const has = (name: string) => this.db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(name) !== undefined;
    // A tag table from before the denormalised layout: rebuild it from the memories' tags.
    const oldTags = has('memory_tags') && !(this.db.prepare('PRAGMA table_info(memory_tags)').all() as Array<{ name: string }>).some((c) => c.name === 'created_at');
    if (oldTags) this.db.exec('DROP INDEX IF EXISTS memory_tags_seq; DROP TABLE memory_tags;');
    const hadTitleIndex = has('memories_tt');
    const hadCounts = has('memory_counts');
    // The narrower filter indexes of earlier versions (replaced by the covering *_f ones).
    this.db.exec('DROP INDEX IF EXISTS memories_type; DROP INDEX IF EXISTS memories_scope; DROP INDEX IF EXISTS memories_agent; DROP INDEX IF EXISTS memories_project;');
    this.db.exec(SCHEMA);
    if (oldTags) {
      this.db.exec(`INSERT OR IGNORE INTO memory_tags (tag, created_at, id, seq)
        SELECT j.value, m.created_at, m.id, m.seq FROM memories m, json_each(m.tags) j`);
    }
    // A database from before the running counts: count the rows already there.
    if (!hadCounts) {
      this.db.exec(`INSERT INTO memory_counts (dim, key, n)
        SELECT 'type', type, count(*) FROM memories GROUP BY type
        UNION ALL SELECT 'scope', scope, count(*) FROM memories GROUP BY scope
        UNION ALL SELECT 'project', coalesce(project, ''), count(*) FROM memories GROUP BY coalesce(project, '')
        UNION ALL SELECT 'agent', coalesce(agent, ''), count(*) FROM memories GROUP BY coalesce(agent, '')`);
    }
    // A database from before the title/tags index: fill it from the rows already there.
    if (!hadTitleIndex) this.db.exec("INSERT INTO memories_tt (memories_tt) VALUES ('rebuild')");
    this.db.prepare(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', ?)`).run(BM25_WEIGHTS);
    // Maintenance merges any level with two or more segments (see scheduleMaintenance).
    for (const t of FTS_TABLES) this.db.exec(`INSERT INTO ${t} (${t}, rank) VALUES ('usermerge', 2)`);
  }

  override searchMode(): string {
    return 'fts5';
  }

  override async insert(doc: MemoryDoc): Promise<void> {
    this.scheduleMaintenance();
    this.guard(() =>
      this.db.transaction(() => {
        const res = this.stmt(
          `INSERT INTO memories (id, title, type, scope, tags, tag_text, agent, project, content, preview, created_at, updated_at)
           VALUES (@id, @title, @type, @scope, @tags, @tag_text, @agent, @project, @content, @preview, @created_at, @updated_at)`,
        ).run(this.params(doc));
        this.writeTags(Number(res.lastInsertRowid), doc);
      })(),
    );
  }

  /** One transaction for the whole batch. */
  override async insertMany(docs: MemoryDoc[]): Promise<void> {
    this.scheduleMaintenance();
    this.guard(() =>
      this.db.transaction(() => {
        const ins = this.stmt(
          `INSERT INTO memories (id, title, type, scope, tags, tag_text, agent, project, content, preview, created_at, updated_at)
           VALUES (@id, @title, @type, @scope, @tags, @tag_text, @agent, @project, @content, @preview, @created_at, @updated_at)`,
        );
        for (const doc of docs) this.writeTags(Number(ins.run(this.params(doc)).lastInsertRowid), doc);
      })(),
    );
  }

  override async replace(doc: MemoryDoc): Promise<boolean> {
    this.scheduleMaintenance();
    return this.guard(() =>
      this.db.transaction(() => {
        const row = this.stmt('SELECT seq FROM memories WHERE id = ?').get(doc.id) as { seq: number } | undefined;
        if (!row) return false;
        this.stmt(
          `UPDATE memories SET title = @title, type = @type, scope = @scope, tags = @tags, tag_text = @tag_text, agent = @agent,
             project = @project, content = @content, preview = @preview, created_at = @created_at, updated_at = @updated_at
           WHERE id = @id`,
        ).run(this.params(doc));
        this.stmt('DELETE FROM memory_tags WHERE seq = ?').run(row.seq);
        this.writeTags(row.seq, doc);
        return true;
      })(),
    );
  }

  override async get(id: string): Promise<MemoryDoc | null> {
    return this.guard(() => {
      const row = this.stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.id = ?`).get(id) as DbRow | undefined;
      if (!row) return null;
      const { snippet: _s, ...rest } = toRow(row);
      return { ...rest, content: row.content ?? '' };
    });
  }

  override async delete(id: string): Promise<boolean> {
    this.scheduleMaintenance();
    return this.guard(() => this.stmt('DELETE FROM memories WHERE id = ?').run(id).changes > 0);
  }

  override async deleteMany(ids: string[]): Promise<string[]> {
    this.scheduleMaintenance();
    return this.guard(() =>
      this.db.transaction(() => {
        const del = this.stmt('DELETE FROM memories WHERE id = ?');
        const deleted: string[] = [];
        for (const id of new Set(ids)) if (del.run(id).changes > 0) deleted.push(id);
        return deleted;
      })(),
    );
  }

  override async list(query: ListQuery): Promise<MemoryPage> {
    return this.guard(() => {
      // With a tag filter, walk that tag's rows in newest-first order (memory_tags has the order).
      const tags = this.rarestFirst([...new Set(query.filter.tags ?? [])]);
      const tagDriven = tags.length > 0;
      const { where, params } = filterSql({ ...query.filter, tags }, { tagDriven });
      const from = tagDriven ? 'memory_tags t0 JOIN memories m ON m.seq = t0.seq' : 'memories m';
      const o = tagDriven ? 't0' : 'm';
      const onlyTag = tagDriven && where.length === 1;
      const f = query.filter;
      const columnFilter = f.type !== undefined || f.scope !== undefined || f.agent !== undefined || f.project !== undefined;
      let countSql: string;
      if (onlyTag) countSql = 'SELECT count(*) AS n FROM memory_tags t0 WHERE t0.tag = @f_tag0';
      else if (tagDriven && columnFilter) {
        // Tags and a column filter: count through the column's covering index and check the tags
        // there (walking the tag's rows would read every one of those memories' rows).
        const plain = filterSql({ ...f, tags });
        countSql = `SELECT count(*) AS n FROM memories m WHERE ${plain.where.join(' AND ')}`;
      } else countSql = `SELECT count(*) AS n FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
      const total = (this.stmt(countSql).get(params) as { n: number }).n;
      const pageWhere = [...where];
      const pageParams: Params = { ...params, limit: query.limit, offset: 0 };
      if (query.after) {
        pageWhere.push(`(${o}.created_at < @after_ts OR (${o}.created_at = @after_ts AND ${o}.id < @after_id))`);
        pageParams.after_ts = query.after.createdAt.getTime();
        pageParams.after_id = query.after.id;
      } else {
        pageParams.offset = query.offset;
      }
      const sql = `SELECT ${ROW_COLUMNS} FROM ${from}${pageWhere.length ? ` WHERE ${pageWhere.join(' AND ')}` : ''}
        ORDER BY ${o}.created_at DESC, ${o}.id DESC LIMIT @limit OFFSET @offset`;
      const rows = (this.stmt(sql).all(pageParams) as DbRow[]).map(toRow);
      return { rows, total };
    });
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
  override async search(query: SearchQuery): Promise<MemoryPage> {
    return this.searchDelegate?.search(query) ?? this.searchNow(query);
  }

  /** The search itself, synchronously on this index's connection (what a search worker runs). */
  searchNow(query: SearchQuery): MemoryPage {
    const parsed = parseSearchQuery(query.text);
    if (!hasPositiveTerms(parsed)) return { rows: [], total: 0 };
    return this.guard(() => {
      const ranked = this.rankedSearch(parsed, query);
      return 'rows' in ranked ? ranked : this.exactSearch(parsed, query, ranked.total);
    });
  }

  /**
   * The windowed ranking, or `{ total }` when exactSearch must rank instead; `total` is then the
   * number of matches when the windows already hold every one of them (no filter), else null.
   */
  private rankedSearch(parsed: ParsedSearch, query: SearchQuery): MemoryPage | { total: number | null } {
    const { terms, exclusion } = toFts5Terms(parsed);
    const C = this.termWindow;
    const newest = this.stmt('SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid DESC LIMIT ?').pluck();
    // Title/tag hits are only looked up for rows in the term's window (rowid >= its cutoff): the
    // same answer for those rows as the newest `C` title/tag hits, reading far fewer of them.
    const newestTitleTags = this.stmt('SELECT rowid FROM memories_tt WHERE memories_tt MATCH ? AND rowid >= ? ORDER BY rowid DESC LIMIT ?').pluck();
    // Every row has one type: the running counts give count(*) without scanning an index.
    const n = (this.stmt("SELECT sum(n) FROM memory_counts WHERE dim = 'type'").pluck().get() as number | null) || 0;
    if (n === 0) return { rows: [], total: 0 };
    const maxSeq = (this.stmt('SELECT max(seq) FROM memories').pluck().get() as number) ?? 0;
    const not = (e: string) => (exclusion ? `(${e}) NOT (${exclusion})` : e);

    interface TermHits {
      /** Newest matching rowids, descending. */
      rows: number[];
      titleTags: Set<number>;
      /** Rowids below this are not known (the window was full). 0 when complete. */
      cutoff: number;
      idf: number;
      required: boolean;
    }
    const hits: TermHits[] = terms.map((t) => {
      const any = newest.all(not(t.expr), C) as number[];
      const complete = any.length < C;
      const cutoff = complete ? 0 : any[any.length - 1];
      // Exclusions are applied through `any` (a row must be in it to count). The bound is a BigInt:
      // FTS5 ignores a REAL rowid constraint (what a JS number binds as) beside MATCH.
      const titleTags = any.length === 0 ? [] : (newestTitleTags.all(t.expr, BigInt(cutoff), C) as number[]);
      const df = complete ? any.length : (C * n) / Math.max(C, maxSeq - cutoff + 1);
      return { rows: any, titleTags: new Set(titleTags), cutoff, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)), required: t.required };
    });

    // Few matches: bm25 over all of them is cheap and ranks with term frequencies too. Not with a
    // multi-word phrase: bm25 counts a phrase's documents by reading every occurrence of its words.
    const postings = hits.reduce((sum, h) => sum + h.rows.length, 0);
    const phrases = terms.some((t) => t.words.length > 1);
    const exact = !phrases && hits.every((h) => h.cutoff === 0) && postings <= this.exactRankingBudget;
    const filtered = hasFilter(query.filter);

    // Candidates: rows of the required terms (phrases, all of them), else of any term.
    const required = hits.filter((h) => h.required);
    let candidates: number[] | null = null;
    if (required.length > 0) {
      const [first, ...others] = required;
      const sets = others.map((h) => new Set(h.rows));
      candidates = sets.length === 0 ? first.rows : first.rows.filter((r) => sets.every((set) => set.has(r)));
    }
    // Every window complete and no filter: the candidates are exactly the matches, so their number
    // is exactSearch's total (it need not count again).
    if (exact) {
      if (filtered) return { total: null };
      if (candidates) return { total: candidates.length };
      const union = new Set<number>();
      for (const h of hits) for (const r of h.rows) union.add(r);
      return { total: union.size };
    }
    // Scores of every row in a window, summed term by term in query order (so each row's sum is
    // the same as adding its terms one after another).
    const scores = new Map<number, number>();
    for (const h of hits) {
      for (const r of h.rows) {
        const add = h.idf * (h.titleTags.has(r) ? TITLE_TAG_WEIGHT : 1);
        const prev = scores.get(r);
        scores.set(r, prev === undefined ? add : prev + add);
      }
    }
    candidates ??= [...scores.keys()];
    if (filtered && candidates.length > 0) {
      const { where, params } = filterSql(query.filter);
      candidates = this.stmt(`SELECT m.seq FROM memories m WHERE m.seq IN (SELECT value FROM json_each(@seqs)) AND ${where.join(' AND ')}`)
        .pluck()
        .all({ ...params, seqs: JSON.stringify(candidates) }) as number[];
    }
    const scored = candidates.map((r) => ({ seq: r, score: scores.get(r) as number }));
    scored.sort((a, b) => b.score - a.score || b.seq - a.seq);

    const incomplete = hits.filter((h) => h.cutoff > 0);
    let total = scored.length;
    if (incomplete.length > 0) {
      // A filter that leaves fewer rows in the windows than the largest page: rank every match
      // exactly instead. Decided from the query alone (not the page), so paging stays consistent.
      if (filtered && scored.length < FILTERED_WINDOW_MIN) return { total: null };
      // Exact inside the window where every term is complete; scaled to the whole table.
      const lowest = Math.max(...incomplete.map((h) => h.cutoff));
      const inside = scored.filter((x) => x.seq >= lowest).length;
      total = Math.max(scored.length, Math.round((inside * n) / Math.max(1, maxSeq - lowest + 1)));
    }
    const page = scored.slice(query.offset, query.offset + query.limit);
    if (page.length === 0) return { rows: [], total, reachable: scored.length };
    const details = this.stmt(`SELECT ${ROW_COLUMNS}, m.content FROM memories m WHERE m.seq IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(page.map((p) => p.seq)),
    ) as DbRow[];
    const bySeq = new Map(details.map((d) => [d.seq, d]));
    const snippet = snippetMaker(parsed);
    const rows: MemoryRow[] = [];
    for (const p of page) {
      const d = bySeq.get(p.seq);
      if (!d) continue;
      const row = toRow(d);
      row.snippet = snippet(d.content ?? '') ?? row.snippet;
      row.score = Number(p.score.toPrecision(6));
      rows.push(row);
    }
    return { rows, total, reachable: scored.length };
  }

  /** Exact bm25 ranking over every match: for small result sets, and for a filtered search that needs more than the windows hold. */
  private exactSearch(parsed: ParsedSearch, query: SearchQuery, knownTotal: number | null = null): MemoryPage {
    const match = toFts5Match(parsed);
    if (match === null) return { rows: [], total: 0 };
    const { where, params } = filterSql(query.filter);
    const filters = where.length ? ` AND ${where.join(' AND ')}` : '';
    const base = `FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH @match${filters}`;
    const all = { ...params, match };
    const total = knownTotal ?? (this.stmt(`SELECT count(*) AS n ${base}`).get(all) as { n: number }).n;
    if (total === 0 || query.offset >= total) return { rows: [], total };
    // Rank first without snippets (cheap), then build snippets for the page only.
    const ranked = this.stmt(`SELECT m.seq AS seq, -memories_fts.rank AS score ${base} ORDER BY memories_fts.rank LIMIT @limit OFFSET @offset`).all({
      ...all,
      limit: query.limit,
      offset: query.offset,
    }) as Array<{ seq: number; score: number }>;
    if (ranked.length === 0) return { rows: [], total };
    const seqs = ranked.map((r) => r.seq);
    // The page's snippets in one pass over the matches between its lowest and highest rowid: given
    // `rowid IN (...)`, FTS5 re-runs the MATCH once per value (each ~40 µs, more than the scan).
    // The unary + keeps the IN list a plain filter, so snippet() runs for the page's rows only.
    // Bounds are bound as BigInt (INTEGER): better-sqlite3 binds a JS number as REAL, and FTS5
    // ignores a REAL rowid constraint beside MATCH.
    const details = this.stmt(
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
      row.score = Number(r.score.toPrecision(6));
      rows.push(row);
    }
    return { rows, total };
  }

  override async stats(): Promise<MemoryStats> {
    return this.guard(() => {
      const counts = this.stmt('SELECT dim, key, n FROM memory_counts WHERE n > 0').all() as Array<{ dim: string; key: string; n: number }>;
      const byType: Record<string, number> = Object.fromEntries(MEMORY_TYPES.map((t) => [t, 0]));
      const byScope: Record<string, number> = Object.fromEntries(MEMORY_SCOPES.map((x) => [x, 0]));
      // Keys are user values ('__proto__', 'constructor'...): count in objects without a prototype.
      const byProject: Record<string, number> = Object.create(null) as Record<string, number>;
      const byAgent: Record<string, number> = Object.create(null) as Record<string, number>;
      const target: Record<string, Record<string, number>> = { type: byType, scope: byScope, project: byProject, agent: byAgent };
      let total = 0;
      for (const { dim, key, n } of counts) {
        const k = (dim === 'project' || dim === 'agent') && key === '' ? '(none)' : key;
        target[dim][k] = (target[dim][k] ?? 0) + n;
        if (dim === 'type') total += n;
      }
      return { total, byType, byScope, byProject, byAgent };
    });
  }

  override async count(): Promise<number> {
    return this.guard(() => (this.stmt('SELECT count(*) AS n FROM memories').get() as { n: number }).n);
  }

  override async clear(): Promise<void> {
    this.scheduleMaintenance();
    this.guard(() => {
      this.statements.clear();
      this.db.transaction(() => {
        this.db.exec(DROP);
        this.createSchema();
      })();
    });
  }

  // --- helpers ---

  private params(doc: MemoryDoc): Params & Record<string, string | number | null> {
    return {
      id: doc.id,
      title: doc.title,
      type: doc.type,
      scope: doc.scope,
      tags: JSON.stringify(doc.tags),
      tag_text: doc.tags.join('\n'),
      agent: doc.agent,
      project: doc.project,
      content: doc.content,
      preview: previewOf(doc.content),
      created_at: doc.createdAt.getTime(),
      updated_at: doc.updatedAt.getTime(),
    } as Params & Record<string, string | number | null>;
  }

  /** Several tag filters: the tag with the fewest memories drives the query. */
  private rarestFirst(tags: string[]): string[] {
    if (tags.length < 2) return tags;
    const count = this.stmt('SELECT count(*) FROM memory_tags WHERE tag = ?').pluck();
    return tags.map((t) => ({ t, n: count.get(t) as number })).sort((a, b) => a.n - b.n).map((x) => x.t);
  }

  private writeTags(seq: number, doc: MemoryDoc): void {
    const ins = this.stmt('INSERT OR IGNORE INTO memory_tags (tag, created_at, id, seq) VALUES (?, ?, ?, ?)');
    for (const t of doc.tags) ins.run(t, doc.createdAt.getTime(), doc.id, seq);
  }

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  /** Runs a synchronous SQLite call, translating driver errors into ours. */
  private guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (e) {
      throw translateSqliteError(e);
    }
  }
}

/** Driver errors as ours: a duplicate id is 409, any other SQLite failure 503 naming the document database. */
export function translateSqliteError(e: unknown): Error {
  if (e instanceof AppError) return e;
  const err = e as { code?: string; message?: string; name?: string };
  if (err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY') {
    return new ConflictError('A memory with this id already exists');
  }
  if (err?.name === 'SqliteError' || /database connection is not open/i.test(err?.message ?? '')) {
    return new BackendUnavailableError('Document database', `SQLite error: ${err.message ?? 'unknown'}`);
  }
  return e as Error;
}

function hasFilter(f: MemoryFilter): boolean {
  return f.type !== undefined || f.scope !== undefined || f.agent !== undefined || f.project !== undefined || f.since !== undefined || (f.tags?.length ?? 0) > 0;
}

function filterSql(f: MemoryFilter, opts: { tagDriven?: boolean } = {}): { where: string[]; params: Params } {
  const where: string[] = [];
  const params: Params = {};
  if (f.type !== undefined) {
    where.push('m.type = @f_type');
    params.f_type = f.type;
  }
  if (f.scope !== undefined) {
    where.push('m.scope = @f_scope');
    params.f_scope = f.scope;
  }
  if (f.agent !== undefined) {
    where.push('m.agent = @f_agent');
    params.f_agent = f.agent;
  }
  if (f.project !== undefined) {
    where.push('m.project = @f_project');
    params.f_project = f.project;
  }
  if (f.since !== undefined) {
    where.push('m.created_at >= @f_since');
    params.f_since = f.since.getTime();
  }
  [...new Set(f.tags ?? [])].forEach((tag, i) => {
    if (i === 0 && opts.tagDriven) {
      // list(): the first tag's rows (alias t0) drive the query; see list().
      where.push('t0.tag = @f_tag0');
    } else {
      where.push(`EXISTS (SELECT 1 FROM memory_tags tx WHERE tx.seq = m.seq AND tx.tag = @f_tag${i})`);
    }
    params[`f_tag${i}`] = tag;
  });
  return { where, params };
}

function toRow(r: DbRow): MemoryRow {
  return {
    id: r.id,
    title: r.title,
    type: r.type as MemoryType,
    scope: r.scope as MemoryScope,
    tags: JSON.parse(r.tags) as string[],
    agent: r.agent,
    project: r.project,
    snippet: r.preview,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  };
}
