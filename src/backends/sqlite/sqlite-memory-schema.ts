import Database from 'better-sqlite3';
import { SESSION_GAP_MS } from '../../../libs/search-query';
import { createVersionSchema, DROP_VERSIONS } from './sqlite-memory-versions';
import { createNamespaceUsageSchema, NAMESPACE_USAGE_TRIGGER_PREFIX } from './sqlite-namespace-usage';
import { createSupersessionSchema } from './sqlite-supersession';

/** bm25 column weights: title, tags, content (CONTRACT §3: title and tags weigh more than content); the namespace token none. */
export const BM25_WEIGHTS = 'bm25(10.0, 6.0, 1.0, 0.0)';

/**
 * A memory's namespace as one full-text token (decision 0152), in the FTS column fts_ns, so a
 * search matches `fts_ns : <token> AND (...)` and FTS5 walks only the namespace's documents. The
 * name in hex (no '/', '.', '-' to split it) between 'n' and '0' (ending in a digit: the Porter
 * stemmer leaves it whole). 'default' has none: a store from before namespaces keeps its index,
 * and bm25's document lengths, exactly as they were. sqlite-fts-namespace.ts builds the same in JS.
 */
export const FTS_NS_TOKEN_SQL = "CASE WHEN namespace = 'default' THEN NULL ELSE 'n' || hex(namespace) || '0' END";
/** The full-text indexes (maintained by FtsMaintenance). */
export const FTS_TABLES = ['memories_fts', 'memories_tt'] as const;

/**
 * The seq of the memory just before (after) memory \`m\` (an alias of the enclosing query) in its
 * session: same project and agent, the greatest (least) (created_at, seq) below (above) m's, at
 * most SESSION_GAP_MS apart; NULL when there is none. PREVIOUS_SEQ is a vector's context and its
 * \`prev\` (libs/search-query/fusion.ts); NEXT_SEQ the memory whose prev a new vector may change
 * (storeJobVector). One definition for both sides, so they stay each other's inverse.
 */
function sessionNeighbourSeq(side: 'before' | 'after'): string {
  const [beyond, near, gap, order] = side === 'before' ? ['<', '>=', `- ${SESSION_GAP_MS}`, 'DESC'] : ['>', '<=', `+ ${SESSION_GAP_MS}`, 'ASC'];
  return `(SELECT p.seq FROM memories p WHERE p.namespace = m.namespace AND p.project IS m.project AND p.agent IS m.agent
  AND p.created_at ${beyond}= m.created_at AND p.created_at ${near} m.created_at ${gap} AND (p.created_at ${beyond} m.created_at OR p.seq ${beyond} m.seq)
  ORDER BY p.created_at ${order}, p.seq ${order} LIMIT 1)`;
}
export const PREVIOUS_SEQ = sessionNeighbourSeq('before');
export const NEXT_SEQ = sessionNeighbourSeq('after');

/**
 * The conflict clause of an INSERT INTO embedding_queue (seq) that (re-)queues a memory: a memory
 * already queued gets a new generation (a vector of the old one no longer clears the job), due
 * now, unleased, its failures forgotten.
 */
export const REQUEUE = 'ON CONFLICT (seq) DO UPDATE SET gen = gen + 1, attempts = 0, next_at = 0, lease_owner = NULL, lease_until = 0, error = NULL';

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
  updated_at INTEGER NOT NULL,
  namespace  TEXT NOT NULL DEFAULT 'default', -- issue 43: every query names it (decision 0100)
  fts_ns     TEXT GENERATED ALWAYS AS (${FTS_NS_TOKEN_SQL}) VIRTUAL -- what the full-text indexes read (no storage)
);
CREATE INDEX IF NOT EXISTS memories_newest  ON memories (created_at DESC, id DESC);
-- Every index a query walks starts with the namespace (decision 0100): a namespace of 1,000
-- memories in a store of 100,000 reads only its own entries.
CREATE INDEX IF NOT EXISTS memories_ns_newest ON memories (namespace, created_at DESC, id DESC, type, scope, agent, project);
-- One index per filter column, in newest-first order, ending with the other filter columns: a
-- filtered count (or a page skipping non-matching rows) reads only the index, never the rows
-- (which carry the content: counting 30,000 rows through them took ~6 ms at 100,000 memories).
CREATE INDEX IF NOT EXISTS memories_ns_type_f    ON memories (namespace, type, created_at DESC, id DESC, scope, agent, project);
CREATE INDEX IF NOT EXISTS memories_ns_scope_f   ON memories (namespace, scope, created_at DESC, id DESC, type, agent, project);
CREATE INDEX IF NOT EXISTS memories_ns_agent_f   ON memories (namespace, agent, created_at DESC, id DESC, type, scope, project);
CREATE INDEX IF NOT EXISTS memories_ns_project_f ON memories (namespace, project, created_at DESC, id DESC, type, scope, agent);
-- And one per pair of filter columns: two filters (type + project...) walk exactly their matches,
-- newest first, so the count reads only them and the page stops after it (with only the
-- one-column index, type + project counted every memory of the project: ~10x the list's cost).
CREATE INDEX IF NOT EXISTS memories_ns_type_project_f  ON memories (namespace, type, project, created_at DESC, id DESC, scope, agent);
CREATE INDEX IF NOT EXISTS memories_ns_type_scope_f    ON memories (namespace, type, scope, created_at DESC, id DESC, agent, project);
CREATE INDEX IF NOT EXISTS memories_ns_type_agent_f    ON memories (namespace, type, agent, created_at DESC, id DESC, scope, project);
CREATE INDEX IF NOT EXISTS memories_ns_scope_project_f ON memories (namespace, scope, project, created_at DESC, id DESC, type, agent);
CREATE INDEX IF NOT EXISTS memories_ns_scope_agent_f   ON memories (namespace, scope, agent, created_at DESC, id DESC, type, project);
CREATE INDEX IF NOT EXISTS memories_ns_agent_project_f ON memories (namespace, agent, project, created_at DESC, id DESC, type, scope);

-- One row per (memory, tag), with the memory's position in the newest-first order and its filter
-- columns (copies, rewritten with the tags on every write of the memory), so a tag filter, alone
-- or with column filters, walks its own index in order and counts without touching the memories
-- table (a tag + type + scope count went through every memory of the scope, 20+ ms at 100,000).
CREATE TABLE IF NOT EXISTS memory_tags (
  tag        TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  id         TEXT NOT NULL,
  seq        INTEGER NOT NULL REFERENCES memories (seq) ON DELETE CASCADE,
  type       TEXT NOT NULL,
  scope      TEXT NOT NULL,
  agent      TEXT,
  project    TEXT,
  namespace  TEXT NOT NULL DEFAULT 'default',
  PRIMARY KEY (tag, created_at, id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS memory_tags_by_memory ON memory_tags (seq, tag);
CREATE INDEX IF NOT EXISTS memory_tags_ns_f         ON memory_tags (tag, namespace, created_at DESC, id DESC, type, scope, agent, project);
CREATE INDEX IF NOT EXISTS memory_tags_ns_type_f    ON memory_tags (tag, namespace, type, created_at DESC, id DESC, scope, agent, project);
CREATE INDEX IF NOT EXISTS memory_tags_ns_scope_f   ON memory_tags (tag, namespace, scope, created_at DESC, id DESC, type, agent, project);
CREATE INDEX IF NOT EXISTS memory_tags_ns_agent_f   ON memory_tags (tag, namespace, agent, created_at DESC, id DESC, type, scope, project);
CREATE INDEX IF NOT EXISTS memory_tags_ns_project_f ON memory_tags (tag, namespace, project, created_at DESC, id DESC, type, scope, agent);

CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5 (
  title, tag_text, content, fts_ns,
  content = 'memories', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

-- Title and tags alone: a small index, so "which of these memories have the word in the title or
-- tags" costs in proportion to title/tag hits rather than to every occurrence of the word.
CREATE VIRTUAL TABLE IF NOT EXISTS memories_tt USING fts5 (
  title, tag_text, fts_ns,
  content = 'memories', content_rowid = 'seq',
  tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER IF NOT EXISTS memories_tt_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memories_tt (rowid, title, tag_text, fts_ns) VALUES (new.seq, new.title, new.tag_text, new.fts_ns);
END;
CREATE TRIGGER IF NOT EXISTS memories_tt_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memories_tt (memories_tt, rowid, title, tag_text, fts_ns) VALUES ('delete', old.seq, old.title, old.tag_text, old.fts_ns);
END;
CREATE TRIGGER IF NOT EXISTS memories_tt_update AFTER UPDATE OF title, tag_text, namespace ON memories BEGIN
  INSERT INTO memories_tt (memories_tt, rowid, title, tag_text, fts_ns) VALUES ('delete', old.seq, old.title, old.tag_text, old.fts_ns);
  INSERT INTO memories_tt (rowid, title, tag_text, fts_ns) VALUES (new.seq, new.title, new.tag_text, new.fts_ns);
END;

-- Running counts for /api/stats (grouping 100,000 rows on every call would cost tens of ms).
-- A missing project or agent is counted under ''. Per namespace (issue 43). A row that reaches 0
-- is deleted: no name of a deleted project or agent stays behind (a purge, decision 0151).
CREATE TABLE IF NOT EXISTS memory_counts (
  namespace TEXT NOT NULL,
  dim TEXT NOT NULL,
  key TEXT NOT NULL,
  n   INTEGER NOT NULL,
  PRIMARY KEY (namespace, dim, key)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS memory_counts_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memory_counts (namespace, dim, key, n) VALUES
    (new.namespace, 'type', new.type, 1), (new.namespace, 'scope', new.scope, 1), (new.namespace, 'project', coalesce(new.project, ''), 1), (new.namespace, 'agent', coalesce(new.agent, ''), 1)
  ON CONFLICT (namespace, dim, key) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_delete AFTER DELETE ON memories BEGIN
  UPDATE memory_counts SET n = n - 1 WHERE namespace = old.namespace AND ((dim = 'type' AND key = old.type) OR (dim = 'scope' AND key = old.scope)
    OR (dim = 'project' AND key = coalesce(old.project, '')) OR (dim = 'agent' AND key = coalesce(old.agent, '')));
  DELETE FROM memory_counts WHERE namespace = old.namespace AND n <= 0;
END;
CREATE TRIGGER IF NOT EXISTS memory_counts_update AFTER UPDATE OF type, scope, project, agent ON memories BEGIN
  UPDATE memory_counts SET n = n - 1 WHERE namespace = old.namespace AND ((dim = 'type' AND key = old.type) OR (dim = 'scope' AND key = old.scope)
    OR (dim = 'project' AND key = coalesce(old.project, '')) OR (dim = 'agent' AND key = coalesce(old.agent, '')));
  DELETE FROM memory_counts WHERE namespace = old.namespace AND n <= 0;
  INSERT INTO memory_counts (namespace, dim, key, n) VALUES
    (new.namespace, 'type', new.type, 1), (new.namespace, 'scope', new.scope, 1), (new.namespace, 'project', coalesce(new.project, ''), 1), (new.namespace, 'agent', coalesce(new.agent, ''), 1)
  ON CONFLICT (namespace, dim, key) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS memories_fts_insert AFTER INSERT ON memories BEGIN
  INSERT INTO memories_fts (rowid, title, tag_text, content, fts_ns) VALUES (new.seq, new.title, new.tag_text, new.content, new.fts_ns);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_delete AFTER DELETE ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, title, tag_text, content, fts_ns) VALUES ('delete', old.seq, old.title, old.tag_text, old.content, old.fts_ns);
END;
CREATE TRIGGER IF NOT EXISTS memories_fts_update AFTER UPDATE OF title, tag_text, content, namespace ON memories BEGIN
  INSERT INTO memories_fts (memories_fts, rowid, title, tag_text, content, fts_ns) VALUES ('delete', old.seq, old.title, old.tag_text, old.content, old.fts_ns);
  INSERT INTO memories_fts (rowid, title, tag_text, content, fts_ns) VALUES (new.seq, new.title, new.tag_text, new.content, new.fts_ns);
END;

-- Vectors (README "Hybrid search"): one float32 blob per memory and vector space (\`model\`);
-- \`stamp\` orders writes so a search worker's in-memory copy catches up incrementally;
-- \`prev\` is the memory just before it in its session when it was embedded (its context and its
-- session neighbour: libs/search-query/fusion.ts), kept true by re-embedding (triggers below).
CREATE TABLE IF NOT EXISTS memory_vectors (
  seq   INTEGER PRIMARY KEY,
  model TEXT NOT NULL,
  stamp INTEGER NOT NULL,
  vec   BLOB NOT NULL,
  prev  INTEGER
);
CREATE INDEX IF NOT EXISTS memory_vectors_stamp ON memory_vectors (stamp);
CREATE INDEX IF NOT EXISTS memory_vectors_prev ON memory_vectors (prev) WHERE prev IS NOT NULL;

-- The durable embedding queue: one job per memory whose vector is missing or out of date.
-- gen moves on every change of title or content (a vector of an older gen does not clear the job);
-- a worker leases jobs (lease_owner, lease_until) and a failure pushes next_at back (backoff).
CREATE TABLE IF NOT EXISTS embedding_queue (
  seq         INTEGER PRIMARY KEY,
  gen         INTEGER NOT NULL DEFAULT 1,
  attempts    INTEGER NOT NULL DEFAULT 0,
  next_at     INTEGER NOT NULL DEFAULT 0,
  lease_owner TEXT,
  lease_until INTEGER NOT NULL DEFAULT 0,
  error       TEXT
);
CREATE INDEX IF NOT EXISTS embedding_queue_due ON embedding_queue (next_at, lease_until);

-- Small key/values: the current vector space ('vector_space') and a counter of vector writes
-- ('vector_version') that search workers compare before touching their copy, and the number of
-- rows of memory_vectors ('vector_rows', kept by triggers: counting 100,000 rows costs ms).
CREATE TABLE IF NOT EXISTS embedding_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS embedding_enqueue_insert AFTER INSERT ON memories BEGIN
  INSERT INTO embedding_queue (seq) VALUES (new.seq)
  ${REQUEUE};
END;
CREATE TRIGGER IF NOT EXISTS embedding_enqueue_update AFTER UPDATE OF title, content ON memories
  WHEN old.title IS NOT new.title OR old.content IS NOT new.content BEGIN
  INSERT INTO embedding_queue (seq) VALUES (new.seq)
  ${REQUEUE};
END;
-- A memory leaving its place in a session (deleted, or moved to another project, agent or time)
-- changes what comes before the memory after it: that one is embedded again (its context, its
-- prev), and so is a moved memory. One arriving between two others is handled when its vector is
-- stored (sqlite-vectors.ts storeJobVector).
CREATE TRIGGER IF NOT EXISTS embedding_forget_delete AFTER DELETE ON memories BEGIN
  DELETE FROM embedding_queue WHERE seq = old.seq;
  DELETE FROM memory_vectors WHERE seq = old.seq;
  INSERT INTO embedding_queue (seq) SELECT seq FROM memory_vectors WHERE prev = old.seq
  ${REQUEUE};
END;
CREATE TRIGGER IF NOT EXISTS embedding_enqueue_move AFTER UPDATE OF project, agent, created_at ON memories
  WHEN old.project IS NOT new.project OR old.agent IS NOT new.agent OR old.created_at IS NOT new.created_at BEGIN
  INSERT INTO embedding_queue (seq) SELECT new.seq UNION ALL SELECT seq FROM memory_vectors WHERE prev = new.seq
  ${REQUEUE};
END;
CREATE TRIGGER IF NOT EXISTS memory_vectors_written_insert AFTER INSERT ON memory_vectors BEGIN
  INSERT INTO embedding_meta (key, value) VALUES ('vector_version', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1;
  INSERT INTO embedding_meta (key, value) VALUES ('vector_rows', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS memory_vectors_written_update AFTER UPDATE ON memory_vectors BEGIN
  INSERT INTO embedding_meta (key, value) VALUES ('vector_version', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1;
END;
CREATE TRIGGER IF NOT EXISTS memory_vectors_written_delete AFTER DELETE ON memory_vectors BEGIN
  INSERT INTO embedding_meta (key, value) VALUES ('vector_version', 1) ON CONFLICT (key) DO UPDATE SET value = value + 1;
  UPDATE embedding_meta SET value = value - 1 WHERE key = 'vector_rows';
END;
`;

const DROP = `
DROP TRIGGER IF EXISTS embedding_enqueue_insert;
DROP TRIGGER IF EXISTS embedding_enqueue_update;
DROP TRIGGER IF EXISTS embedding_forget_delete;
DROP TRIGGER IF EXISTS embedding_enqueue_move;
DROP TRIGGER IF EXISTS memory_vectors_written_insert;
DROP TRIGGER IF EXISTS memory_vectors_written_update;
DROP TRIGGER IF EXISTS memory_vectors_written_delete;
DROP TABLE IF EXISTS embedding_queue;
DROP TABLE IF EXISTS memory_vectors;
DROP TABLE IF EXISTS embedding_meta;
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

/** Creates or upgrades the memory schema in one transaction (a second process opening the file waits). */
export function createMemorySchema(db: Database.Database): void {
  db.transaction(() => migrate(db)).immediate();
}

/** Drops every memory table and creates them again, empty. */
export function resetMemorySchema(db: Database.Database): void {
  db.transaction(() => {
    db.exec(DROP_VERSIONS);
    db.exec(DROP);
    createMemorySchema(db);
  })();
}

/** SCHEMA's triggers as SQLite stores them (sqlite_master.sql), by name, and the tables they are on (computed once). */
let schemaTriggers: { sql: Map<string, string>; tables: Set<string> } | undefined;

function expectedTriggers(): { sql: Map<string, string>; tables: Set<string> } {
  if (!schemaTriggers) {
    const scratch = new Database(':memory:');
    try {
      scratch.exec(SCHEMA);
      const rows = scratch.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'").all() as Array<{ name: string; tbl_name: string; sql: string }>;
      schemaTriggers = { sql: new Map(rows.map((r) => [r.name, r.sql])), tables: new Set(rows.map((r) => r.tbl_name)) };
    } finally {
      scratch.close();
    }
  }
  return schemaTriggers;
}

/**
 * Drops the triggers of a file written by an earlier version whose body is not this version's
 * (SCHEMA's are CREATE TRIGGER IF NOT EXISTS, which keeps an old body), and those on the same
 * tables that this version no longer has; SCHEMA then creates them as they are now. Compared as
 * SQLite stores them, so a file already up to date is not written to.
 */
function replaceChangedTriggers(db: Database.Database): void {
  const expected = expectedTriggers();
  const present = db.prepare("SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'").all() as Array<{ name: string; tbl_name: string; sql: string }>;
  for (const t of present) {
    if (t.name.startsWith(NAMESPACE_USAGE_TRIGGER_PREFIX)) continue; // sqlite-namespace-usage.ts's own
    const want = expected.sql.get(t.name);
    if (want === t.sql || (want === undefined && !expected.tables.has(t.tbl_name))) continue;
    db.exec(`DROP TRIGGER "${t.name.replace(/"/g, '""')}"`);
  }
}

/** The schema of this version, upgrading a file written by an earlier one. */
function migrate(db: Database.Database): void {
  const has = (name: string) => db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(name) !== undefined;
  // A tag table from before the denormalised layout (created_at, then the filter columns): rebuild
  // it from the memories' tags (~4 s at 100,000 memories, once).
  const tagColumns = has('memory_tags') ? (db.prepare('PRAGMA table_info(memory_tags)').all() as Array<{ name: string }>).map((c) => c.name) : null;
  const oldTags = tagColumns !== null && !(tagColumns.includes('created_at') && tagColumns.includes('type'));
  if (oldTags) db.exec('DROP INDEX IF EXISTS memory_tags_seq; DROP INDEX IF EXISTS memory_tags_by_memory; DROP TABLE memory_tags;');
  // Namespaces (issue 43, decision 0100): memories and tag rows of an earlier version move to
  // 'default' in place (a column with a default: no row is rewritten); the running counts gain the
  // namespace (recounted below); the filter indexes become namespace-first (old ones dropped).
  // table_xinfo, not table_info: the latter leaves generated columns (fts_ns) out.
  const columnsOf = (table: string) => (db.prepare(`PRAGMA table_xinfo(${table})`).all() as Array<{ name: string }>).map((c) => c.name);
  if (has('memories') && !columnsOf('memories').includes('namespace')) db.exec("ALTER TABLE memories ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default'");
  // The namespace token of the full-text indexes (decision 0152): a computed column (nothing
  // stored), and both indexes made again with it and rebuilt from the rows, once.
  if (has('memories') && !columnsOf('memories').includes('fts_ns')) db.exec(`ALTER TABLE memories ADD COLUMN fts_ns TEXT GENERATED ALWAYS AS (${FTS_NS_TOKEN_SQL}) VIRTUAL`);
  const ftsWithoutNamespace = FTS_TABLES.filter((t) => has(t) && !columnsOf(t).includes('fts_ns'));
  const hadTitleIndex = has('memories_tt') && ftsWithoutNamespace.length === 0;
  for (const t of ftsWithoutNamespace) db.exec(`DROP TABLE ${t}`);
  if (has('memory_tags') && !oldTags && !columnsOf('memory_tags').includes('namespace')) db.exec("ALTER TABLE memory_tags ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default'");
  if (has('memory_counts') && !columnsOf('memory_counts').includes('namespace')) db.exec('DROP TABLE memory_counts');
  for (const old of ['type', 'scope', 'agent', 'project', 'type_project', 'type_scope', 'type_agent', 'scope_project', 'scope_agent', 'agent_project'])
    db.exec(`DROP INDEX IF EXISTS memories_${old}_f`);
  for (const old of ['type', 'scope', 'agent', 'project']) db.exec(`DROP INDEX IF EXISTS memory_tags_${old}_f`);
  const hadCounts = has('memory_counts');
  const hadQueue = has('embedding_queue');
  // Vectors from before their session link: the column now, its values below (the delete trigger
  // that keeps it is replaced with any other trigger whose body changed: replaceChangedTriggers).
  const noPrev = has('memory_vectors') && !(db.prepare('PRAGMA table_info(memory_vectors)').all() as Array<{ name: string }>).some((c) => c.name === 'prev');
  if (noPrev) db.exec('ALTER TABLE memory_vectors ADD COLUMN prev INTEGER;');
  replaceChangedTriggers(db);
  // The narrower filter indexes of earlier versions (replaced by the covering *_f ones).
  db.exec('DROP INDEX IF EXISTS memories_type; DROP INDEX IF EXISTS memories_scope; DROP INDEX IF EXISTS memories_agent; DROP INDEX IF EXISTS memories_project;');
  db.exec(SCHEMA);
  createVersionSchema(db);
  createSupersessionSchema(db);
  createNamespaceUsageSchema(db);
  if (oldTags) {
    db.exec(`INSERT OR IGNORE INTO memory_tags (tag, created_at, id, seq, type, scope, agent, project, namespace)
      SELECT j.value, m.created_at, m.id, m.seq, m.type, m.scope, m.agent, m.project, m.namespace FROM memories m, json_each(m.tags) j`);
  }
  // A database from before the running counts: count the rows already there.
  if (!hadCounts) {
    db.exec(`INSERT INTO memory_counts (namespace, dim, key, n)
      SELECT namespace, 'type', type, count(*) FROM memories GROUP BY namespace, type
      UNION ALL SELECT namespace, 'scope', scope, count(*) FROM memories GROUP BY namespace, scope
      UNION ALL SELECT namespace, 'project', coalesce(project, ''), count(*) FROM memories GROUP BY namespace, coalesce(project, '')
      UNION ALL SELECT namespace, 'agent', coalesce(agent, ''), count(*) FROM memories GROUP BY namespace, coalesce(agent, '')`);
  }
  // Zero rows an earlier version kept (they still named deleted projects and agents).
  if (hadCounts) db.exec('DELETE FROM memory_counts WHERE n <= 0');
  // A database from before embeddings: every memory waits for its vector.
  if (!hadQueue) db.exec('INSERT OR IGNORE INTO embedding_queue (seq) SELECT seq FROM memories');
  // Vectors from before their session link get it from the memories as they are (~3 s at 100,000, once).
  if (noPrev) db.exec(`UPDATE memory_vectors SET prev = (SELECT ${PREVIOUS_SEQ} FROM memories m WHERE m.seq = memory_vectors.seq)`);
  // A database from before the title/tags index (or the namespace token): fill it from the rows already there.
  if (!hadTitleIndex) db.exec("INSERT INTO memories_tt (memories_tt) VALUES ('rebuild')");
  if (ftsWithoutNamespace.includes('memories_fts')) db.exec("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')");
  db.prepare(`INSERT INTO memories_fts (memories_fts, rank) VALUES ('rank', ?)`).run(BM25_WEIGHTS);
  // Maintenance merges any level with two or more segments (see FtsMaintenance).
  for (const t of FTS_TABLES) db.exec(`INSERT INTO ${t} (${t}, rank) VALUES ('usermerge', 2)`);
}
