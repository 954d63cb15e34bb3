import type Database from 'better-sqlite3';
import { MemoryRow, MemoryScope, MemoryType } from '../ports/memory.model';
import { parseAuthor } from './sqlite-memory-versions';

/** Characters of content kept as the list-mode preview. */
export const PREVIEW_CHARS = 200;

export const ROW_COLUMNS =
  'm.seq, m.id, m.namespace, m.title, m.type, m.scope, m.tags, m.agent, m.project, m.preview, m.created_at, m.updated_at, m.version, m.object_key, m.author, m.superseded_by, m.valid_to';

export interface DbRow {
  seq: number;
  id: string;
  namespace: string;
  title: string | null;
  type: string;
  scope: string;
  tags: string;
  agent: string | null;
  project: string | null;
  preview: string;
  created_at: number;
  updated_at: number;
  version: number;
  object_key: string | null;
  author: string | null;
  superseded_by?: string | null;
  valid_to?: number | null;
  content?: string;
  score?: number;
  snip?: string;
}

export type Params = Record<string, string | number>;

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

/** Prepared statements of one connection, prepared once each. */
export class StatementCache {
  private readonly statements = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {}

  get(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      s = this.db.prepare(sql);
      this.statements.set(sql, s);
    }
    return s;
  }

  clear(): void {
    this.statements.clear();
  }
}

/** A statement of the connection, prepared once (StatementCache.get). */
export type Stmt = (sql: string) => Database.Statement;

export function toRow(r: DbRow): MemoryRow {
  return {
    id: r.id,
    namespace: r.namespace,
    title: r.title,
    type: r.type as MemoryType,
    scope: r.scope as MemoryScope,
    tags: JSON.parse(r.tags) as string[],
    agent: r.agent,
    project: r.project,
    snippet: r.preview,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
    version: r.version ?? 1,
    objectKey: r.object_key ?? null,
    author: parseAuthor(r.author),
    ...(r.superseded_by && r.valid_to != null ? { supersededBy: r.superseded_by, validTo: new Date(r.valid_to) } : {}),
  };
}
