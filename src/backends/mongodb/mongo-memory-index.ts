import type { FilterQuery } from 'mongoose';
import { hasPositiveTerms, isStopWord, ParsedSearch, parseSearchQuery } from '../../../libs/search-query';
import { MemoryIndex } from '../ports/memory-index.port';
import {
  EmbeddingJob,
  EmbeddingProgress,
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
import type { MongoExec, MongoModels } from './mongo-document-database';
import type { MemoryRecord } from './mongo.schemas';
import { rankByMatches, regexSearchFilter, snippetPatterns } from './regex-search';
import { makeSnippet } from './snippet';
import * as vectors from './mongo-vectors';

/** The regex fallback ranks at most this many candidates (newest first) per query. */
export const REGEX_FALLBACK_MAX_CANDIDATES = 5_000;

function toDoc(r: MemoryRecord): MemoryDoc {
  return {
    id: r._id,
    title: r.title ?? null,
    type: r.type as MemoryType,
    scope: r.scope as MemoryScope,
    tags: [...(r.tags ?? [])],
    agent: r.agent ?? null,
    project: r.project ?? null,
    content: r.content,
    createdAt: new Date(r.createdAt),
    updatedAt: new Date(r.updatedAt),
  };
}

function toRecord(d: MemoryDoc): MemoryRecord {
  return {
    _id: d.id,
    title: d.title,
    type: d.type,
    scope: d.scope,
    tags: d.tags,
    agent: d.agent,
    project: d.project,
    content: d.content,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

function toRow(r: MemoryRecord, snippet: string, score?: number): MemoryRow {
  const { content: _content, ...rest } = toDoc(r);
  return score === undefined ? { ...rest, snippet } : { ...rest, snippet, score };
}

/** The filter of CONTRACT §3 as a MongoDB query (values are compared, never interpreted). */
function filterQuery(f: MemoryFilter): FilterQuery<MemoryRecord> {
  const q: FilterQuery<MemoryRecord> = {};
  if (f.type) q.type = String(f.type);
  if (f.scope) q.scope = String(f.scope);
  if (f.agent) q.agent = String(f.agent);
  if (f.project) q.project = String(f.project);
  if (f.tags && f.tags.length > 0) q.tags = { $all: f.tags.map(String) };
  if (f.since) q.createdAt = { $gte: f.since };
  return q;
}

function and(...parts: Array<FilterQuery<MemoryRecord> | null | undefined>): FilterQuery<MemoryRecord> {
  const nonEmpty = parts.filter((p): p is FilterQuery<MemoryRecord> => !!p && Object.keys(p).length > 0);
  if (nonEmpty.length === 0) return {};
  return nonEmpty.length === 1 ? nonEmpty[0] : { $and: nonEmpty };
}

/** The $text search string of a parsed query: quoted words, phrases and exclusions only. */
function textSearchString(q: ParsedSearch): string {
  const quote = (parts: string[]) => `"${parts.join(' ')}"`;
  return [...q.phrases.map(quote), ...q.words, ...q.excluded.map((t) => (t.length === 1 ? `-${t[0]}` : `-${quote(t)}`))].join(' ');
}

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
/** Reads of memories leave the vector and the queue fields out. */
const NO_VECTOR = { vec: 0, vec_model: 0, emb_pending: 0, emb_gen: 0, emb_next_at: 0, emb_lease_until: 0, emb_owner: 0, emb_attempts: 0, emb_error: 0 } as const;

/**
 * Memories in MongoDB. Search uses the text index ($text, textScore) where the server has one,
 * else the regex fallback (regex-search.ts); searchMode() says which.
 */
export class MongoMemoryIndex extends MemoryIndex {
  constructor(
    private readonly exec: MongoExec,
    private readonly peek: () => MongoModels | undefined = () => undefined,
  ) {
    super();
  }

  private run<T>(fn: (m: MongoModels) => Promise<T>): Promise<T> {
    return this.exec(fn);
  }

  override insert(doc: MemoryDoc): Promise<void> {
    return this.run(async (m) => {
      await m.memories.collection.insertOne({ ...toRecord(doc), ...vectors.queuedFields() } as never);
    });
  }

  override insertMany(docs: MemoryDoc[]): Promise<void> {
    if (docs.length === 0) return Promise.resolve();
    return this.run(async (m) => {
      await m.memories.collection.insertMany(docs.map((d) => ({ ...toRecord(d), ...vectors.queuedFields() })) as never[], { ordered: true });
    });
  }

  override replace(doc: MemoryDoc): Promise<boolean> {
    return this.run(async (m) => {
      const { _id, ...rest } = toRecord(doc);
      // The fields of the memory are replaced; its vector stays, and it is queued for a new one
      // only when the title or the content changed.
      const same = await m.memories.collection.updateOne({ _id, title: rest.title, content: rest.content } as never, { $set: rest } as never);
      if (same.matchedCount === 1) return true;
      // A new generation: a vector computed from the old text does not clear the job.
      const r = await m.memories.collection.updateOne({ _id } as never, { $set: { ...rest, ...vectors.queuedFields(Date.now()) }, $unset: { emb_owner: '', emb_error: '' } } as never);
      return r.matchedCount === 1;
    });
  }

  override get(id: string): Promise<MemoryDoc | null> {
    return this.run(async (m) => {
      const r = await m.memories.findById(String(id), NO_VECTOR).lean<MemoryRecord>().exec();
      return r ? toDoc(r) : null;
    });
  }

  override delete(id: string): Promise<boolean> {
    return this.run(async (m) => (await m.memories.deleteOne({ _id: String(id) }).exec()).deletedCount === 1);
  }

  override deleteMany(ids: string[]): Promise<string[]> {
    return this.run(async (m) => {
      const wanted = [...new Set(ids.map(String))];
      if (wanted.length === 0) return [];
      const found = await m.memories.find({ _id: { $in: wanted } }, { _id: 1 }).lean<Array<{ _id: string }>>().exec();
      const present = found.map((r) => r._id);
      if (present.length === 0) return [];
      await m.memories.deleteMany({ _id: { $in: present } }).exec();
      const set = new Set(present);
      return wanted.filter((id) => set.has(id));
    });
  }

  override list(query: ListQuery): Promise<MemoryPage> {
    return this.run(async (m) => {
      const base = filterQuery(query.filter);
      const cursor = query.after
        ? { $or: [{ createdAt: { $lt: new Date(query.after.createdAt) } }, { createdAt: new Date(query.after.createdAt), _id: { $lt: String(query.after.id) } }] }
        : null;
      let find = m.memories.find(and(base, cursor), NO_VECTOR).sort(NEWEST_FIRST);
      if (!query.after && query.offset > 0) find = find.skip(query.offset);
      const [rows, total] = await Promise.all([find.limit(query.limit).lean<MemoryRecord[]>().exec(), m.memories.countDocuments(base).exec()]);
      return { rows: rows.map((r) => toRow(r, makeSnippet(r.content))), total };
    });
  }

  override search(query: SearchQuery): Promise<MemoryPage> {
    if (query.vector && query.vectorKey && query.mode !== 'keyword') {
      return this.run((m) =>
        vectors.vectorSearch(m, query, filterQuery(query.filter), (q) => this.search(q), async (ids) => {
          const docs = await m.memories.find({ _id: { $in: ids } }, NO_VECTOR).lean<MemoryRecord[]>().exec();
          const patterns = snippetPatterns(parseSearchQuery(query.text));
          return new Map(docs.map((d) => [d._id, toRow(d, makeSnippet(d.content, patterns))]));
        }),
      );
    }
    const parsed = parseSearchQuery(query.text);
    if (!hasPositiveTerms(parsed)) return Promise.resolve({ rows: [], total: 0 });
    // MongoDB's text index drops English stop words: a query of stop words only (or a phrase made
    // of them) would match nothing there, so those go through the regex search on every server.
    const textable = !parsed.stopWordsOnly && parsed.phrases.every((p) => p.some((w) => !isStopWord(w)));
    return this.run((m) => (m.textSearch && textable ? this.textSearch(m, parsed, query) : this.regexSearch(m, parsed, query)));
  }

  private async textSearch(m: MongoModels, parsed: ParsedSearch, query: SearchQuery): Promise<MemoryPage> {
    const filter = and({ $text: { $search: textSearchString(parsed), $language: 'english' } }, filterQuery(query.filter));
    const [rows, total] = await Promise.all([
      m.memories
        .find(filter, { score: { $meta: 'textScore' }, ...NO_VECTOR })
        .sort({ score: { $meta: 'textScore' }, ...NEWEST_FIRST })
        .skip(query.offset)
        .limit(query.limit)
        .lean<Array<MemoryRecord & { score: number }>>()
        .exec(),
      m.memories.countDocuments(filter).exec(),
    ]);
    const patterns = snippetPatterns(parsed);
    return { rows: rows.map((r) => toRow(r, makeSnippet(r.content, patterns), Math.round(r.score * 1000) / 1000)), total };
  }

  private async regexSearch(m: MongoModels, parsed: ParsedSearch, query: SearchQuery): Promise<MemoryPage> {
    const text = regexSearchFilter(parsed);
    if (!text) return { rows: [], total: 0 };
    const filter = and(text, filterQuery(query.filter));
    const [candidates, all] = await Promise.all([
      m.memories.find(filter, NO_VECTOR).sort(NEWEST_FIRST).limit(REGEX_FALLBACK_MAX_CANDIDATES).lean<MemoryRecord[]>().exec(),
      m.memories.estimatedDocumentCount().exec(),
    ]);
    const total = candidates.length < REGEX_FALLBACK_MAX_CANDIDATES ? candidates.length : await m.memories.countDocuments(filter).exec();
    const ranked = rankByMatches(
      candidates.map((r) => ({ ...r, tags: r.tags ?? [] })),
      parsed,
      all,
    );
    // Relevance first, then newest first (candidates are already newest first; the sort is stable).
    ranked.sort((a, b) => b.score - a.score);
    const patterns = snippetPatterns(parsed);
    const page = ranked.slice(query.offset, query.offset + query.limit);
    return { rows: page.map(({ doc, score }) => toRow(doc, makeSnippet(doc.content, patterns), score)), total };
  }

  override stats(): Promise<MemoryStats> {
    return this.run(async (m) => {
      const group = async (field: string) => {
        const rows = await m.memories.aggregate<{ _id: string | null; n: number }>([{ $group: { _id: `$${field}`, n: { $sum: 1 } } }]).exec();
        const out: Record<string, number> = {};
        for (const r of rows) {
          const key = r._id === null || r._id === undefined || r._id === '' ? '(none)' : String(r._id);
          out[key] = (out[key] ?? 0) + r.n;
        }
        return out;
      };
      const [byType, byScope, byProject, byAgent] = await Promise.all([group('type'), group('scope'), group('project'), group('agent')]);
      const total = Object.values(byType).reduce((a, b) => a + b, 0);
      return {
        total,
        byType: Object.fromEntries(MEMORY_TYPES.map((t) => [t, byType[t] ?? 0])),
        byScope: Object.fromEntries(MEMORY_SCOPES.map((s) => [s, byScope[s] ?? 0])),
        byProject,
        byAgent,
      };
    });
  }

  override count(): Promise<number> {
    return this.run(async (m) => m.memories.countDocuments({}).exec());
  }

  override clear(): Promise<void> {
    return this.run(async (m) => {
      await m.memories.deleteMany({}).exec();
    });
  }

  // --- vectors and the embedding queue (mongo-vectors.ts) ---

  override useVectorSpace(key: string): Promise<boolean> {
    return this.run((m) => vectors.useVectorSpace(m, key));
  }

  override claimEmbeddingJobs(owner: string, max: number, leaseMs: number): Promise<EmbeddingJob[]> {
    return this.run((m) => vectors.claimJobs(m, owner, max, leaseMs));
  }

  override storeVector(job: EmbeddingJob, key: string, vector: Float32Array): Promise<void> {
    return this.run((m) => vectors.storeVector(m, job, key, vector));
  }

  override failEmbeddingJob(job: EmbeddingJob, error: string, retryAt: Date): Promise<void> {
    return this.run((m) => vectors.failJob(m, job, error, retryAt));
  }

  override embeddingProgress(key: string | null): Promise<EmbeddingProgress> {
    return this.run((m) => vectors.progress(m, key));
  }

  override similar(vector: Float32Array, key: string, limit: number, filter: MemoryFilter = {}): Promise<Array<{ id: string; title: string | null; score: number }>> {
    return this.run((m) => vectors.similar(m, vector, key, limit, filterQuery(filter)));
  }

  override searchMode(): string {
    const m = this.peek();
    if (!m) return 'unknown (not connected yet)';
    return m.textSearch ? 'text index ($text)' : 'regex fallback (the server has no text indexes)';
  }
}
