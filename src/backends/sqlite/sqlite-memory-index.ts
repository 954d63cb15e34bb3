import type Database from 'better-sqlite3';
import { parseSearchQuery, toFts5Match } from '../../../libs/search-query';
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
CREATE INDEX IF NOT EXISTS memories_type    ON memories (type, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS memories_scope   ON memories (scope, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS memories_agent   ON memories (agent, created_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS memories_project ON memories (project, created_at DESC, id DESC);

CREATE TABLE IF NOT EXISTS memory_tags (
  tag TEXT NOT NULL,
  seq INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
  PRIMARY KEY (tag, seq)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_tags_seq ON memory_tags (seq);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
  title, tag_text, content,
  content = 'memories', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

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

  constructor(private readonly db: Database.Database) {
    super();
    this.createSchema();
  }

  private createSchema(): void {
    this.db.exec(SCHEMA);
    this.db.prepare(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', ?)`).run(BM25_WEIGHTS);
  }

  override searchMode(): string {
    return 'fts5';
  }

  override async insert(doc: MemoryDoc): Promise<void> {
    this.guard(() =>
      this.db.transaction(() => {
        const res = this.stmt(
          `INSERT INTO memories (id, title, type, scope, tags, tag_text, agent, project, content, preview, created_at, updated_at)
           VALUES (@id, @title, @type, @scope, @tags, @tag_text, @agent, @project, @content, @preview, @created_at, @updated_at)`,
        ).run(this.params(doc));
        this.writeTags(Number(res.lastInsertRowid), doc.tags);
      })(),
    );
  }

  override async replace(doc: MemoryDoc): Promise<boolean> {
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
        this.writeTags(row.seq, doc.tags);
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
    return this.guard(() => this.stmt('DELETE FROM memories WHERE id = ?').run(id).changes > 0);
  }

  override async deleteMany(ids: string[]): Promise<string[]> {
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
      const { where, params } = filterSql(query.filter);
      const countSql = `SELECT count(*) AS n FROM memories m${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
      const total = (this.stmt(countSql).get(params) as { n: number }).n;
      const pageWhere = [...where];
      const pageParams: Params = { ...params, limit: query.limit, offset: 0 };
      if (query.after) {
        pageWhere.push('(m.created_at < @after_ts OR (m.created_at = @after_ts AND m.id < @after_id))');
        pageParams.after_ts = query.after.createdAt.getTime();
        pageParams.after_id = query.after.id;
      } else {
        pageParams.offset = query.offset;
      }
      const sql = `SELECT ${ROW_COLUMNS} FROM memories m${pageWhere.length ? ` WHERE ${pageWhere.join(' AND ')}` : ''}
        ORDER BY m.created_at DESC, m.id DESC LIMIT @limit OFFSET @offset`;
      const rows = (this.stmt(sql).all(pageParams) as DbRow[]).map(toRow);
      return { rows, total };
    });
  }

  override async search(query: SearchQuery): Promise<MemoryPage> {
    const match = toFts5Match(parseSearchQuery(query.text));
    if (match === null) return { rows: [], total: 0 };
    return this.guard(() => {
      const { where, params } = filterSql(query.filter);
      const filters = where.length ? ` AND ${where.join(' AND ')}` : '';
      const base = `FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH @match${filters}`;
      const all = { ...params, match };
      const total = (this.stmt(`SELECT count(*) AS n ${base}`).get(all) as { n: number }).n;
      if (total === 0 || query.offset >= total) return { rows: [], total };
      // Rank first without snippets (cheap), then build snippets for the page only.
      const ranked = this.stmt(`SELECT m.seq AS seq, -memories_fts.rank AS score ${base} ORDER BY memories_fts.rank LIMIT @limit OFFSET @offset`).all({
        ...all,
        limit: query.limit,
        offset: query.offset,
      }) as Array<{ seq: number; score: number }>;
      if (ranked.length === 0) return { rows: [], total };
      const seqs = ranked.map((r) => r.seq);
      const placeholders = seqs.map((_, i) => `@s${i}`).join(', ');
      const seqParams: Params = { match };
      seqs.forEach((s, i) => (seqParams[`s${i}`] = s));
      const details = this.stmt(
        `SELECT ${ROW_COLUMNS}, snippet(memories_fts, 2, '', '', '…', ${SNIPPET_TOKENS}) AS snip
         FROM memories_fts JOIN memories m ON m.seq = memories_fts.rowid
         WHERE memories_fts MATCH @match AND memories_fts.rowid IN (${placeholders})`,
      ).all(seqParams) as DbRow[];
      const bySeq = new Map(details.map((d) => [d.seq, d]));
      const rows: MemoryRow[] = [];
      for (const r of ranked) {
        const d = bySeq.get(r.seq);
        if (!d) continue; // deleted between the two statements (cannot happen inside one synchronous call)
        const row = toRow(d);
        const snip = (d.snip ?? '').replace(/\s+/g, ' ').trim();
        row.snippet = snip.length > 0 ? snip : row.snippet;
        row.score = Math.round(r.score * 1e6) / 1e6;
        rows.push(row);
      }
      return { rows, total };
    });
  }

  override async stats(): Promise<MemoryStats> {
    return this.guard(() => {
      const group = (col: string): Array<{ k: string | null; n: number }> =>
        this.stmt(`SELECT ${col} AS k, count(*) AS n FROM memories GROUP BY ${col}`).all() as Array<{ k: string | null; n: number }>;
      const byType: Record<string, number> = Object.fromEntries(MEMORY_TYPES.map((t) => [t, 0]));
      const byScope: Record<string, number> = Object.fromEntries(MEMORY_SCOPES.map((s) => [s, 0]));
      let total = 0;
      for (const { k, n } of group('type')) {
        byType[k ?? '(none)'] = (byType[k ?? '(none)'] ?? 0) + n;
        total += n;
      }
      for (const { k, n } of group('scope')) byScope[k ?? '(none)'] = (byScope[k ?? '(none)'] ?? 0) + n;
      const named = (col: string) => {
        const out: Record<string, number> = {};
        for (const { k, n } of group(col)) out[k ?? '(none)'] = (out[k ?? '(none)'] ?? 0) + n;
        return out;
      };
      return { total, byType, byScope, byProject: named('project'), byAgent: named('agent') };
    });
  }

  override async count(): Promise<number> {
    return this.guard(() => (this.stmt('SELECT count(*) AS n FROM memories').get() as { n: number }).n);
  }

  override async clear(): Promise<void> {
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

  private writeTags(seq: number, tags: string[]): void {
    const ins = this.stmt('INSERT OR IGNORE INTO memory_tags (tag, seq) VALUES (?, ?)');
    for (const t of tags) ins.run(t, seq);
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
      throw translate(e);
    }
  }
}

function translate(e: unknown): Error {
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

function filterSql(f: MemoryFilter): { where: string[]; params: Params } {
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
    where.push(`m.seq IN (SELECT seq FROM memory_tags WHERE tag = @f_tag${i})`);
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
