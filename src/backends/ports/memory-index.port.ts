import type { ListQuery, MemoryDoc, MemoryPage, MemoryStats, SearchQuery } from './memory.model';

/**
 * Metadata + full-text index of memories (embedded: SQLite FTS5; production: MongoDB).
 * Adapters throw only our own errors (src/common/errors.ts): BackendUnavailableError for a
 * backend that is down, ConflictError for a duplicate id.
 */
export abstract class MemoryIndex {
  abstract insert(doc: MemoryDoc): Promise<void>;
  /** Insert many (reindex). Adapters may override with a batched write; the default inserts one by one. */
  async insertMany(docs: MemoryDoc[]): Promise<void> {
    for (const doc of docs) await this.insert(doc);
  }
  /** Replace the stored document with the same id. Returns false when it does not exist. */
  abstract replace(doc: MemoryDoc): Promise<boolean>;
  abstract get(id: string): Promise<MemoryDoc | null>;
  /** The memories of these ids that exist, in no particular order (migration, backup). Adapters may override with one query. */
  async getMany(ids: string[]): Promise<MemoryDoc[]> {
    const out: MemoryDoc[] = [];
    for (const id of ids) {
      const d = await this.get(id);
      if (d) out.push(d);
    }
    return out;
  }
  abstract delete(id: string): Promise<boolean>;
  /** Deletes the ids that exist; returns those it deleted. */
  abstract deleteMany(ids: string[]): Promise<string[]>;
  /** Newest first (createdAt desc, id desc); offset or cursor paging. */
  abstract list(query: ListQuery): Promise<MemoryPage>;
  /** Relevance first (CONTRACT §3 search semantics). */
  abstract search(query: SearchQuery): Promise<MemoryPage>;
  abstract stats(): Promise<MemoryStats>;
  abstract count(): Promise<number>;
  /** Remove every memory (used by reindex before rebuilding). */
  abstract clear(): Promise<void>;
  /** Which search implementation is active, for /api/status (e.g. "fts5", "$text", "regex fallback"). */
  abstract searchMode(): string;
}
