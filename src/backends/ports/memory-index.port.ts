import { ALL_NAMESPACES } from '../../namespaces/namespace';
import type { CasResult, ListQuery, MemoryDoc, MemoryPage, MemoryStats, SearchQuery, VersionEntry } from './memory.model';

/**
 * Metadata + full-text index of memories (embedded: SQLite FTS5; production: MongoDB): memories,
 * their versions and keyword search. Vectors and the embedding queue are EmbeddingQueue's.
 * Adapters throw only our own errors (src/common/errors.ts): BackendUnavailableError for a
 * backend that is down, ConflictError for a duplicate id.
 */
export abstract class MemoryIndex {
  /** Stores a new memory and, when it has an objectKey, its first history entry. ConflictError for a duplicate id. */
  abstract insert(doc: MemoryDoc): Promise<void>;
  /** Insert many (reindex). Adapters may override with a batched write; the default inserts one by one. */
  async insertMany(docs: MemoryDoc[]): Promise<void> {
    for (const doc of docs) await this.insert(doc);
  }
  /**
   * Replace the stored document with the same id. Returns false when it does not exist.
   * replace/delete/deleteMany are the unversioned primitives (no version check, no history
   * entry): the memory service writes through update/remove/removeMany (issue 9).
   */
  abstract replace(doc: MemoryDoc): Promise<boolean>;
  /**
   * The memory of this id IN namespace `ns` (null when it does not exist there: a memory of another
   * namespace is as absent as an unknown id). Every method below that names memories by id takes
   * the namespace first (issue 43, decision 0100); ALL_NAMESPACES ('*') only from operator tools.
   */
  abstract get(ns: string, id: string): Promise<MemoryDoc | null>;
  /** The memories of these ids that exist, in no particular order (migration, backup). Adapters may override with one query. */
  async getMany(ns: string, ids: string[]): Promise<MemoryDoc[]> {
    const out: MemoryDoc[] = [];
    for (const id of ids) {
      const d = await this.get(ns, id);
      if (d) out.push(d);
    }
    return out;
  }
  abstract delete(ns: string, id: string): Promise<boolean>;
  /** Deletes the ids that exist; returns those it deleted. */
  abstract deleteMany(ns: string, ids: string[]): Promise<string[]>;
  /** Newest first (createdAt desc, id desc); offset or cursor paging. */
  abstract list(query: ListQuery): Promise<MemoryPage>;
  /** Relevance first (CONTRACT §3 search semantics). */
  abstract search(query: SearchQuery): Promise<MemoryPage>;
  abstract stats(ns: string): Promise<MemoryStats>;
  abstract count(ns: string): Promise<number>;
  /**
   * Memories and content bytes per namespace (issue 43: GET /api/namespaces, quotas), of the
   * namespaces that hold at least one memory, sorted by name; see NamespaceUsageQuery.
   */
  abstract namespaceUsage(query: NamespaceUsageQuery): Promise<NamespaceUsage[]>;
  /** Remove every memory (used by reindex before rebuilding). */
  abstract clear(): Promise<void>;
  /**
   * Compare-and-swap write (issue 9): when the stored memory's version is `expected`, replaces it
   * with `doc` (whose version is expected + 1 and whose objectKey is set), adds its history entry
   * and keeps at most `keep` entries; `released` lists the object keys of the entries dropped.
   * 'missing' when the memory does not exist, 'conflict' (with the stored version) otherwise.
   * Atomic per memory across every instance sharing the database. Only a memory of doc.namespace
   * is swapped ('missing' for one of another namespace).
   */
  abstract update(doc: MemoryDoc, expected: number, keep: number): Promise<CasResult>;
  /**
   * Deletes a memory with its history, when its version is `expected` (any version when
   * undefined); `released` lists every object key it referenced (current and past versions).
   */
  abstract remove(ns: string, id: string, expected?: number): Promise<CasResult>;
  /** Deletes the memories that exist, with their history; returns each with the object keys it referenced. */
  abstract removeMany(ns: string, ids: string[]): Promise<Array<{ id: string; released: string[] }>>;
  /** Kept versions of a memory, newest first (empty for an unknown id or a memory from before versions). */
  abstract history(ns: string, id: string, limit: number, offset: number): Promise<{ rows: VersionEntry[]; total: number }>;
  /** Adds past versions to a memory's history (reindex); entries already there are left as they are. */
  abstract addHistory(ns: string, id: string, entries: VersionEntry[]): Promise<void>;
  /**
   * Whether the index holds the write of object `key` to memory `id` (decision 0060): the key is
   * the memory's current version, or a kept past version the memory went through. False for a
   * write that never happened or was undone, and for a memory that does not exist. The sweep and
   * reindex decide with it what an object of a pending write is.
   */
  async holds(id: string, key: string): Promise<boolean> {
    // Write intents name a memory id only: the sweep (an operator task) looks in every namespace.
    const doc = await this.get(ALL_NAMESPACES, id);
    if (!doc) return false;
    if ((doc.objectKey ?? `memories/${id}.md`) === key) return true;
    return (await this.history(ALL_NAMESPACES, id, 1000, 0)).rows.some((r) => r.objectKey === key);
  }
  /**
   * Drops what a write of `key` left in the index without completing (e.g. a version claim whose
   * memory never moved on), once the sweep has found that the index does not hold it. Only called
   * for writes older than the grace period. Default: nothing to drop (writes are atomic).
   */
  async forget(_id: string, _key: string): Promise<void> {}
  /**
   * True when a write that threw is known not to have happened (an in-process transaction that
   * rolled back); false when its outcome is unknown (a networked database may have committed it
   * before the connection dropped), so the object it references must not be deleted at once.
   */
  readonly failedWritesRolledBack: boolean = false;
  /** Which search implementation is active, for /api/status (e.g. "fts5", "$text", "regex fallback"). */
  abstract searchMode(): string;
}

/** What namespaceUsage reads: every namespace, or those `names`, or `prefix` and the names under it (`prefix/...`); after `after`, at most `limit`. */
export interface NamespaceUsageQuery {
  names?: readonly string[];
  prefix?: string;
  /** Only names sorting after this one (paging). */
  after?: string;
  limit: number;
}

/** One namespace's usage: its memories and the UTF-8 bytes of their current content. */
export interface NamespaceUsage {
  namespace: string;
  memories: number;
  bytes: number;
}
