import type Database from 'better-sqlite3';
import type { NamespaceUsage, NamespaceUsageQuery } from '../ports/memory-index.port';
import type { Params, Stmt } from './sqlite-memory-rows';

/** The trigger names of this file (sqlite-memory-schema.ts leaves triggers with this prefix alone when it replaces its own). */
export const NAMESPACE_USAGE_TRIGGER_PREFIX = 'namespace_usage_';

/**
 * Running usage per namespace (issue 43, decision 0155): memories and the UTF-8 bytes of their
 * current content, kept by triggers in the write's own transaction, so GET /api/namespaces and a
 * quota check read one small row per namespace instead of grouping the memories (which carry the
 * content). A namespace's row goes when its last memory does: a purged tenant's name does not
 * survive here (decision 0151).
 */
const SCHEMA = `
CREATE TABLE IF NOT EXISTS namespace_usage (
  namespace TEXT PRIMARY KEY,
  memories  INTEGER NOT NULL,
  bytes     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS namespace_usage_insert AFTER INSERT ON memories BEGIN
  INSERT INTO namespace_usage (namespace, memories, bytes) VALUES (new.namespace, 1, octet_length(new.content))
  ON CONFLICT (namespace) DO UPDATE SET memories = memories + 1, bytes = bytes + excluded.bytes;
END;
CREATE TRIGGER IF NOT EXISTS namespace_usage_delete AFTER DELETE ON memories BEGIN
  UPDATE namespace_usage SET memories = memories - 1, bytes = bytes - octet_length(old.content) WHERE namespace = old.namespace;
  DELETE FROM namespace_usage WHERE namespace = old.namespace AND memories <= 0;
END;
CREATE TRIGGER IF NOT EXISTS namespace_usage_update AFTER UPDATE OF content, namespace ON memories BEGIN
  UPDATE namespace_usage SET memories = memories - 1, bytes = bytes - octet_length(old.content) WHERE namespace = old.namespace;
  DELETE FROM namespace_usage WHERE namespace = old.namespace AND memories <= 0;
  INSERT INTO namespace_usage (namespace, memories, bytes) VALUES (new.namespace, 1, octet_length(new.content))
  ON CONFLICT (namespace) DO UPDATE SET memories = memories + 1, bytes = bytes + excluded.bytes;
END;
`;

/**
 * Creates the table and its triggers (inside the schema transaction, after the memories table).
 * When the triggers were missing (a file from before them, or the memories table just recreated
 * empty by a reset) the usage is counted from the rows there, once.
 */
export function createNamespaceUsageSchema(db: Database.Database): void {
  const had = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'namespace_usage_insert'").get() !== undefined;
  db.exec(SCHEMA);
  if (had) return;
  db.exec('DELETE FROM namespace_usage');
  db.exec('INSERT INTO namespace_usage (namespace, memories, bytes) SELECT namespace, count(*), sum(octet_length(content)) FROM memories GROUP BY namespace');
}

/** The namespaces holding memories, by name (see MemoryIndex.namespaceUsage). */
export function namespaceUsageRows(stmt: Stmt, q: NamespaceUsageQuery): NamespaceUsage[] {
  const where = ['memories > 0'];
  const params: Params = { limit: q.limit };
  if (q.after !== undefined) {
    where.push('namespace > @after');
    params.after = q.after;
  }
  if (q.names !== undefined) {
    where.push('namespace IN (SELECT value FROM json_each(@names))');
    params.names = JSON.stringify(q.names);
  }
  if (q.prefix !== undefined) {
    where.push("(namespace = @prefix OR (namespace > @prefix || '/' AND namespace < @prefix || '0'))");
    params.prefix = q.prefix;
  }
  return stmt(`SELECT namespace, memories, bytes FROM namespace_usage WHERE ${where.join(' AND ')} ORDER BY namespace LIMIT @limit`).all(params) as NamespaceUsage[];
}
