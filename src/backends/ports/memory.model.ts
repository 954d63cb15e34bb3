export const MEMORY_TYPES = ['note', 'fact', 'decision', 'task', 'preference', 'reference', 'code', 'conversation'] as const;
export type MemoryType = (typeof MEMORY_TYPES)[number];
export const MEMORY_SCOPES = ['global', 'project', 'agent', 'user'] as const;
export type MemoryScope = (typeof MEMORY_SCOPES)[number];

/** A memory as the index keeps it (content included: it is what full-text search reads). */
export interface MemoryDoc {
  id: string; // 24 lowercase hex, time-ordered (ObjectId layout)
  /** The tenant it belongs to (issue 43, decision 0100): fixed at creation; every adapter query is bound to it. */
  namespace: string;
  title: string | null;
  type: MemoryType;
  scope: MemoryScope;
  tags: string[];
  agent: string | null;
  project: string | null;
  content: string;
  createdAt: Date;
  updatedAt: Date;
  /** Write counter: 1 on create, +1 on every change (compared-and-swapped by the index). */
  version: number;
  /**
   * Object store key of this version's immutable markdown file (memories/<id>.v<version>-<write>.md);
   * null for a memory written before versioned objects (its file is memories/<id>.md).
   */
  objectKey?: string | null;
  /** Who wrote this version (absent for memories written before provenance was recorded). */
  author?: Author | null;
  /** Set when a newer memory replaced this one (`supersedes`, decision 0130): the newer one's id, and when that write happened. */
  supersededBy?: string | null;
  validTo?: Date | null;
}

/** Provenance of a version: an API token (id and name at the time) or the signed-in administrator. */
export interface Author {
  kind: 'token' | 'admin';
  /** Token id, or the admin user name. */
  id: string;
  /** Token name at the time of the write (null for the admin). */
  name: string | null;
  /**
   * Set when the version came in by an import (issue 46): the author above is the importer, and this is
   * what the imported file claimed — never taken as provenance, shown beside it.
   */
  claimed?: ImportClaim;
}

/** Provenance an imported file claimed for itself (author, version, timestamps as written in the file). */
export interface ImportClaim {
  author: { kind: 'token' | 'admin'; id: string; name: string | null } | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** An author as stored (the fields above, the claim only when it is well-formed). */
export function storedAuthor(a: unknown): Author | null {
  const o = a as Record<string, unknown> | null | undefined;
  if (!o || typeof o !== 'object' || (o.kind !== 'token' && o.kind !== 'admin')) return null;
  const out: Author = { kind: o.kind, id: String(o.id), name: typeof o.name === 'string' ? o.name : null };
  const c = o.claimed as Record<string, unknown> | undefined;
  if (c && typeof c === 'object' && typeof c.version === 'number' && typeof c.createdAt === 'string' && typeof c.updatedAt === 'string') {
    const ca = c.author as Record<string, unknown> | null | undefined;
    out.claimed = {
      author: ca && typeof ca === 'object' && (ca.kind === 'token' || ca.kind === 'admin') ? { kind: ca.kind, id: String(ca.id), name: typeof ca.name === 'string' ? ca.name : null } : null,
      version: c.version,
      createdAt: c.createdAt,
      updatedAt: c.updatedAt,
    };
  }
  return out;
}

/** One kept version of a memory (its history entry). */
export interface VersionEntry {
  version: number;
  objectKey: string;
  title: string | null;
  /** Bytes of content (UTF-8). */
  size: number;
  updatedAt: Date;
  author: Author | null;
}

/** Outcome of a compare-and-swap write or delete. */
export type CasResult =
  { status: 'ok'; /** Object keys no longer referenced (pruned or deleted versions): the caller removes them. */ released: string[] } | { status: 'missing' } | { status: 'conflict'; current: number };

/** Filters shared by list and search (CONTRACT §3). All given filters must match. */
export interface MemoryFilter {
  /**
   * REQUIRED (issue 43, decision 0100): the one namespace the query is bound to, put into the
   * adapter's own query (SQLite WHERE, MongoDB filter, vector candidates). ALL_NAMESPACES ('*')
   * only from operator tools (CLI, reindex, admin status); a request never resolves to it.
   */
  namespace: string;
  type?: MemoryType;
  scope?: MemoryScope;
  agent?: string;
  project?: string;
  tags?: string[]; // every tag must be present
  since?: Date; // created_at >= since
  /** Hide superseded memories (decision 0130): those superseded by now, or by `asOf` when given. */
  current?: boolean;
  /** As of a moment: only memories created by then. */
  asOf?: Date;
}

/** Position in the newest-first order: (createdAt desc, id desc). */
export interface ListCursor {
  createdAt: Date;
  id: string;
}

export interface ListQuery {
  filter: MemoryFilter;
  limit: number;
  /** Offset mode. Ignored when `after` is set. */
  offset: number;
  /** Cursor mode: rows strictly after this position. */
  after?: ListCursor;
}

export interface SearchQuery {
  text: string;
  filter: MemoryFilter;
  limit: number;
  offset: number;
  /** keyword (default when no vector is given), semantic or hybrid (README "Hybrid search"). */
  mode?: 'keyword' | 'semantic' | 'hybrid';
  /** The query's embedding (semantic and hybrid), and the key of its vector space. */
  vector?: Float32Array;
  vectorKey?: string;
}

/** A memory waiting for its embedding (the durable embedding queue). */
export interface EmbeddingJob {
  id: string;
  /** What is embedded: the title and the content. */
  text: string;
  /** Bumped on every change of title or content: a vector of an older generation is still stored, the job stays. */
  gen: number;
  attempts: number;
  /** The SQLite index's: the seq of the memory whose start \`text\` carries as context (null: none), checked again when the vector is stored. */
  previous?: number | null;
}

/** Embedding progress of an index for one vector space. */
export interface EmbeddingProgress {
  /** Memories without a vector of the current space (queued, or retrying after a failure). */
  pending: number;
  /** Memories with a vector of the current space. */
  embedded: number;
  /** Jobs whose last attempt failed (retried with backoff). */
  failing: number;
  lastError: string | null;
}

/** A list/search row: everything but content, plus a preview. */
export interface MemoryRow extends Omit<MemoryDoc, 'content'> {
  snippet: string;
  /** Search mode only: higher is better. */
  score?: number;
  /** Search mode only: which lists matched the memory (hybrid and semantic searches). */
  matched?: Array<'keyword' | 'semantic'>;
}

export interface MemoryPage {
  rows: MemoryRow[];
  /** Rows matching the filter (and text), regardless of paging. May be an estimate in search mode. */
  total: number;
  /**
   * Search mode: how many rows paging can reach, when fewer than `total` (an adapter that ranks
   * only part of a very large result set). Absent = total.
   */
  reachable?: number;
  /**
   * Semantic and hybrid searches: the adapter's unranked candidates (rows is then empty); one
   * storage-neutral step ranks them and applies the relevance floor (src/memories/search/).
   */
  candidates?: SearchCandidates;
}

/** A candidate of a semantic or hybrid search, with the signals the adapter can give cheaply. */
export interface SearchCandidate {
  /** Its row (snippet for the query; no score yet). */
  row: MemoryRow;
  /** Cosine of its stored vector and the query's; absent when it has no vector of the space yet. */
  cosine?: number;
  /** In the vector index's best candidates. */
  semantic: boolean;
  /** In the keyword list: the adapter's own keyword score (backend-specific scale, shown by explain only). */
  keyword?: number;
  /** The query words and phrases (indexes) it contains (libs/search-query/term-match.ts). */
  words: string[];
  phrases: number[];
  /** Its content's length in characters (a long memory holds many words by its length alone). */
  length: number;
  /** Ids of the candidates written just before or after it in its session (same project and agent, close in time). */
  neighbours: string[];
}

export interface SearchCandidates {
  list: SearchCandidate[];
  /** Memories in the store, and the number holding each query word (capped): the words' rarity. */
  docs: number;
  df: Array<[string, number]>;
}

export interface MemoryStats {
  total: number;
  byType: Record<string, number>;
  byScope: Record<string, number>;
  byProject: Record<string, number>; // null project under '(none)'
  byAgent: Record<string, number>; // null agent under '(none)'
}

/** A memory close to a vector (duplicate hints on create): its id, title and cosine. */
export type SimilarHit = { id: string; title: string | null; score: number };
