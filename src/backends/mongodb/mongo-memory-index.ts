import type { FilterQuery } from 'mongoose';
import { ALL_NAMESPACES, DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import { hasPositiveTerms, isStopWord, ParsedSearch, parseSearchQuery, softenPhrases } from '../../../libs/search-query';
import type { EmbeddingQueue } from '../ports/embedding-queue.port';
import { MemoryIndex, type NamespaceUsage, type NamespaceUsageQuery } from '../ports/memory-index.port';
import { mongoNamespaceUsage } from './mongo-namespace-usage';
import {
  Author,
  CasResult,
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
  SimilarHit,
  VersionEntry,
  storedAuthor,
} from '../ports/memory.model';
import type { MongoExec, MongoModels } from './mongo-models';
import type { VersionRecord } from './mongo-integrity.schemas';
import type { MemoryRecord } from './mongo.schemas';
import { rankByMatches, regexSearchFilter, snippetPatterns } from './regex-search';
import { makeSnippet } from './snippet';
import * as vectors from './mongo-vectors';
import { MongoVectorCache } from './mongo-vector-cache';

/** The regex fallback ranks at most this many candidates (newest first) per query. */
export /** A query word's memories are counted up to this many (a common word's rarity needs no more). */
const DF_CAP = 10_000;
const REGEX_FALLBACK_MAX_CANDIDATES = 5_000;

function toDoc(r: MemoryRecord): MemoryDoc {
  return {
    id: r._id,
    namespace: r.namespace ?? DEFAULT_NAMESPACE,
    title: r.title ?? null,
    type: r.type as MemoryType,
    scope: r.scope as MemoryScope,
    tags: [...(r.tags ?? [])],
    agent: r.agent ?? null,
    project: r.project ?? null,
    content: r.content,
    createdAt: new Date(r.createdAt),
    updatedAt: new Date(r.updatedAt),
    version: r.version ?? 1,
    objectKey: r.objectKey ?? null,
    author: toAuthor(r.author),
    ...(r.supersededBy && r.validTo ? { supersededBy: r.supersededBy, validTo: new Date(r.validTo) } : {}),
  };
}

type AuthorRecord = VersionRecord['author'];

function toAuthor(a: AuthorRecord | undefined): Author | null {
  return storedAuthor(a);
}

function toEntry(h: VersionRecord): VersionEntry {
  return { version: h.version, objectKey: h.objectKey ?? '', title: h.title ?? null, size: h.size ?? 0, updatedAt: new Date(h.updatedAt), author: toAuthor(h.author) };
}

/** A version claim that never led to its memory moving on (its writer died) is taken back after this long. */
const STALE_CLAIM_MS = 30_000;
/** Attempts of a delete without If-Match against concurrent writers. */
const DELETE_ROUNDS = 20;

function toRecord(d: MemoryDoc): MemoryRecord {
  return {
    _id: d.id,
    namespace: d.namespace,
    title: d.title,
    type: d.type,
    scope: d.scope,
    tags: d.tags,
    agent: d.agent,
    project: d.project,
    content: d.content,
    size: Buffer.byteLength(d.content), // namespace usage (mongo-namespace-usage.ts)
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
    version: d.version ?? 1,
    objectKey: d.objectKey ?? null,
    author: d.author ?? null,
    supersededBy: d.supersededBy && d.validTo ? d.supersededBy : null,
    validTo: d.supersededBy && d.validTo ? d.validTo : null,
  };
}

function toRow(r: MemoryRecord, snippet: string, score?: number): MemoryRow {
  const { content: _content, ...rest } = toDoc(r);
  return score === undefined ? { ...rest, snippet } : { ...rest, snippet, score };
}

/** The filter of CONTRACT §3 as a MongoDB query (values are compared, never interpreted). */
function filterQuery(f: MemoryFilter): FilterQuery<MemoryRecord> {
  const q: FilterQuery<MemoryRecord> = { ...inNamespace(f.namespace) };
  if (f.type) q.type = String(f.type);
  if (f.scope) q.scope = String(f.scope);
  if (f.agent) q.agent = String(f.agent);
  if (f.project) q.project = String(f.project);
  if (f.tags && f.tags.length > 0) q.tags = { $all: f.tags.map(String) };
  if (f.since) q.createdAt = { $gte: f.since };
  if (f.asOf) q.$and = [{ createdAt: { $lte: f.asOf } }];
  // Superseded (decision 0130): validTo is null or absent for a memory nothing replaced.
  if (f.current) q.$or = f.asOf ? [{ validTo: null }, { validTo: { $gt: f.asOf } }] : [{ validTo: null }];
  return q;
}

/** The namespace condition (issue 43): one namespace, or none for ALL_NAMESPACES (operator tools only). Fails closed on anything but a string. */
function inNamespace(ns: string): { namespace?: string } {
  if (typeof ns !== 'string') throw new Error('A memory query without a namespace');
  return ns === ALL_NAMESPACES ? {} : { namespace: ns };
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
const NO_VECTOR = { vec: 0, vec_model: 0, vec_at: 0, emb_pending: 0, emb_gen: 0, emb_next_at: 0, emb_lease_until: 0, emb_owner: 0, emb_attempts: 0, emb_error: 0 } as const;

/**
 * Memories in MongoDB. Search uses the text index ($text, textScore) where the server has one,
 * else the regex fallback (regex-search.ts); searchMode() says which.
 */
export class MongoMemoryIndex extends MemoryIndex implements EmbeddingQueue {
  /** The in-process copy of the current vector space's vectors (lives and dies with the database). */
  readonly vectorCache = new MongoVectorCache();

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
      // The memory and its first history entry, side by side (a new id has no rival claim).
      await Promise.all([
        m.memories.collection.insertOne({ ...toRecord(doc), ...vectors.queuedFields() } as never),
        doc.objectKey ? m.versions.collection.insertOne(this.claimRecord(doc, 'write') as never).catch(() => undefined) : undefined,
      ]);
    });
  }

  override insertMany(docs: MemoryDoc[]): Promise<void> {
    if (docs.length === 0) return Promise.resolve();
    return this.run(async (m) => {
      await m.memories.collection.insertMany(docs.map((d) => ({ ...toRecord(d), ...vectors.queuedFields() })) as never[], { ordered: true });
      const claims = docs.filter((d) => d.objectKey).map((d) => this.claimRecord(d, 'write'));
      if (claims.length > 0) await m.versions.collection.insertMany(claims as never[], { ordered: false }).catch(() => undefined);
    });
  }

  override replace(doc: MemoryDoc): Promise<boolean> {
    return this.run(async (m) => {
      const { _id, ...rest } = toRecord(doc);
      // The fields of the memory are replaced; its vector stays, and it is queued for a new one
      // only when the title or the content changed.
      const same = await m.memories.collection.updateOne({ _id, namespace: rest.namespace, title: rest.title, content: rest.content } as never, { $set: rest });
      if (same.matchedCount === 1) return true;
      // A new generation: a vector computed from the old text does not clear the job.
      const r = await m.memories.collection.updateOne({ _id, namespace: rest.namespace } as never, {
        $set: { ...rest, ...vectors.queuedFields(Date.now()) },
        $unset: { emb_owner: '', emb_error: '' },
      });
      return r.matchedCount === 1;
    });
  }

  override get(ns: string, id: string): Promise<MemoryDoc | null> {
    return this.run(async (m) => {
      const r = await m.memories
        .findOne({ _id: String(id), ...inNamespace(ns) }, NO_VECTOR)
        .lean<MemoryRecord>()
        .exec();
      return r ? toDoc(r) : null;
    });
  }

  override getMany(ns: string, ids: string[]): Promise<MemoryDoc[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.run(async (m) => {
      const rows = await m.memories
        .find({ _id: { $in: ids.map(String) }, ...inNamespace(ns) })
        .lean<MemoryRecord[]>()
        .exec();
      return rows.map(toDoc);
    });
  }

  override delete(ns: string, id: string): Promise<boolean> {
    return this.run(async (m) => {
      const gone = (await m.memories.deleteOne({ _id: String(id), ...inNamespace(ns) }).exec()).deletedCount === 1;
      this.vectorCache.drop([String(id)]);
      return gone;
    });
  }

  override deleteMany(ns: string, ids: string[]): Promise<string[]> {
    return this.run(async (m) => {
      const wanted = [...new Set(ids.map(String))];
      if (wanted.length === 0) return [];
      const found = await m.memories
        .find({ _id: { $in: wanted }, ...inNamespace(ns) }, { _id: 1 })
        .lean<Array<{ _id: string }>>()
        .exec();
      const present = found.map((r) => r._id);
      if (present.length === 0) return [];
      await m.memories.deleteMany({ _id: { $in: present } }).exec();
      this.vectorCache.drop(present);
      const set = new Set(present);
      return wanted.filter((id) => set.has(id));
    });
  }

  /**
   * The filter without `current` when no memory is superseded (one probe of by_valid_to): a store
   * that never used `supersedes` queries exactly as before (decision 0130).
   */
  private idleSupersession(m: MongoModels, f: MemoryFilter): Promise<MemoryFilter> | MemoryFilter {
    if (!f.current || f.asOf) return f;
    return m.memories.collection.findOne({ validTo: { $type: 'date' } } as never, { projection: { _id: 1 } }).then((hit) => {
      if (hit) return f;
      const { current: _c, ...rest } = f;
      return rest;
    });
  }

  override list(query: ListQuery): Promise<MemoryPage> {
    return this.run(async (m) => {
      const base = filterQuery(await this.idleSupersession(m, query.filter));
      const cursor = query.after ? { $or: [{ createdAt: { $lt: new Date(query.after.createdAt) } }, { createdAt: new Date(query.after.createdAt), _id: { $lt: String(query.after.id) } }] } : null;
      let find = m.memories.find(and(base, cursor), NO_VECTOR).sort(NEWEST_FIRST);
      if (!query.after && query.offset > 0) find = find.skip(query.offset);
      const [rows, total] = await Promise.all([find.limit(query.limit).lean<MemoryRecord[]>().exec(), m.memories.countDocuments(base).exec()]);
      return { rows: rows.map((r) => toRow(r, makeSnippet(r.content))), total };
    });
  }

  override async search(asked: SearchQuery): Promise<MemoryPage> {
    const query = asked.filter.current ? { ...asked, filter: await this.run((m) => Promise.resolve(this.idleSupersession(m, asked.filter))) } : asked;
    if (query.vector && query.vectorKey && query.mode !== 'keyword') {
      return this.run((m) =>
        vectors.vectorSearch(
          m,
          this.vectorCache,
          query,
          filterQuery(query.filter),
          (q) => this.search(q),
          async (ids) => {
            const docs = await m.memories
              .find({ _id: { $in: ids }, ...inNamespace(query.filter.namespace) }, NO_VECTOR)
              .lean<MemoryRecord[]>()
              .exec();
            const patterns = snippetPatterns(parseSearchQuery(softenPhrases(query.text)));
            return new Map(docs.map((d) => [d._id, { row: toRow(d, makeSnippet(d.content, patterns)), content: d.content }]));
          },
          // A word's rarity: memories holding it, counted up to DF_CAP (the text index where there is one).
          (w) => m.memories.countDocuments((m.textSearch && !isStopWord(w) ? { $text: { $search: w, $language: 'english' } } : regexSearchFilter(parseSearchQuery(w))) ?? {}, { limit: DF_CAP }).exec(),
        ),
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

  override stats(ns: string): Promise<MemoryStats> {
    return this.run(async (m) => {
      const group = async (field: string) => {
        const rows = await m.memories.aggregate<{ _id: string | null; n: number }>([{ $match: inNamespace(ns) }, { $group: { _id: `$${field}`, n: { $sum: 1 } } }]).exec();
        // Keys are user values ('__proto__', 'constructor'...): count in an object without a prototype.
        const out: Record<string, number> = Object.create(null) as Record<string, number>;
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

  override count(ns: string): Promise<number> {
    return this.run(async (m) => m.memories.countDocuments(inNamespace(ns)).exec());
  }

  override namespaceUsage(query: NamespaceUsageQuery): Promise<NamespaceUsage[]> {
    return this.run((m) => mongoNamespaceUsage(m, query));
  }

  override clear(): Promise<void> {
    return this.run(async (m) => {
      await m.memories.deleteMany({}).exec();
      this.vectorCache.reset();
      await m.versions.deleteMany({}).exec();
    });
  }

  // --- versions (issue 9): compare-and-swap through version claims (see VersionRecord) ---

  private claimRecord(doc: MemoryDoc, kind: 'write' | 'delete'): VersionRecord {
    return {
      _id: `${doc.id}:${doc.version}`,
      memoryId: doc.id,
      namespace: doc.namespace ?? DEFAULT_NAMESPACE,
      version: doc.version,
      kind,
      objectKey: doc.objectKey ?? null,
      title: doc.title,
      size: Buffer.byteLength(doc.content, 'utf8'),
      updatedAt: doc.updatedAt,
      author: doc.author ?? null,
      claimedAt: new Date(),
    };
  }

  /**
   * Claims the step to doc.version (insert with a unique _id). False when another writer holds
   * it; a claim left by a writer that died before moving the memory on is taken back first.
   */
  private async claim(m: MongoModels, doc: MemoryDoc, kind: 'write' | 'delete'): Promise<boolean> {
    const rec = this.claimRecord(doc, kind);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await m.versions.collection.insertOne(rec as never);
        return true;
      } catch (e) {
        if ((e as { code?: number }).code !== 11000) throw e;
      }
      const held = await m.versions.collection.findOne({ _id: rec._id } as never);
      if (!held) continue;
      const stale = Date.now() - new Date(held.claimedAt as Date).getTime() > STALE_CLAIM_MS;
      const cur = await this.currentVersion(m, doc.id, ALL_NAMESPACES);
      if (!stale || cur === null || cur >= doc.version) return false;
      await m.versions.collection.deleteOne({ _id: rec._id, claimedAt: held.claimedAt as Date } as never);
    }
    return false;
  }

  private async currentVersion(m: MongoModels, id: string, ns: string): Promise<number | null> {
    const r = await m.memories.collection.findOne({ _id: String(id), ...inNamespace(ns) } as never, { projection: { version: 1 } });
    return r ? ((r.version as number | undefined) ?? 1) : null;
  }

  private versionFilter(id: string, version: number): Record<string, unknown> {
    // Memories from before versions have no version field: they are version 1.
    return version === 1 ? { _id: String(id), $or: [{ version: 1 }, { version: { $exists: false } }] } : { _id: String(id), version };
  }

  private async outcome(m: MongoModels, id: string, ns: string, atLeast: number): Promise<CasResult> {
    const cur = await this.currentVersion(m, id, ns);
    return cur === null ? { status: 'missing' } : { status: 'conflict', current: Math.max(cur, atLeast) };
  }

  override update(doc: MemoryDoc, expected: number, keep: number): Promise<CasResult> {
    return this.run(async (m): Promise<CasResult> => {
      const ns = doc.namespace;
      const cur = await this.currentVersion(m, doc.id, ns);
      if (cur === null) return { status: 'missing' };
      if (cur !== expected) return { status: 'conflict', current: cur };
      if (!(await this.claim(m, doc, 'write'))) return this.outcome(m, doc.id, ns, expected + 1);
      // Only the holder of the claim moves the memory from `expected` on; the filter still guards
      // against a writer that read a version whose claim was pruned long ago.
      const { _id, ...rest } = toRecord(doc);
      // Its vector stays when the title and content are the same; otherwise it is queued again (a
      // new generation, so a vector computed from the old text does not clear the job).
      let r = await m.memories.collection.updateOne({ ...this.versionFilter(_id, expected), namespace: ns, title: rest.title, content: rest.content }, { $set: rest });
      if (r.matchedCount !== 1) {
        r = await m.memories.collection.updateOne(
          { ...this.versionFilter(_id, expected), namespace: ns },
          {
            $set: { ...rest, ...vectors.queuedFields(Date.now()) },
            $unset: { emb_owner: '', emb_error: '' },
          },
        );
      }
      if (r.matchedCount !== 1) {
        await m.versions.collection.deleteOne({ _id: `${doc.id}:${doc.version}` } as never);
        return this.outcome(m, doc.id, ns, expected);
      }
      return { status: 'ok', released: await this.prune(m, doc.id, keep) };
    });
  }

  /** Keeps the newest `keep` history entries; returns the object keys of those removed. */
  private async prune(m: MongoModels, id: string, keep: number): Promise<string[]> {
    const old = await m.versions
      .find({ memoryId: id, kind: 'write' }, { _id: 1, objectKey: 1 })
      .sort({ version: -1 })
      .skip(Math.max(1, keep))
      .lean<Array<Pick<VersionRecord, '_id' | 'objectKey'>>>()
      .exec();
    if (old.length === 0) return [];
    await m.versions.deleteMany({ _id: { $in: old.map((o) => o._id) } }).exec();
    return old.map((o) => o.objectKey).filter((k): k is string => !!k);
  }

  override remove(ns: string, id: string, expected?: number): Promise<CasResult> {
    return this.run(async (m): Promise<CasResult> => {
      for (let round = 0; round < DELETE_ROUNDS; round++) {
        const r = await m.memories.collection.findOne({ _id: String(id), ...inNamespace(ns) } as never, { projection: { version: 1, objectKey: 1, namespace: 1 } });
        if (!r) return { status: 'missing' };
        const cur = (r.version as number | undefined) ?? 1;
        if (expected !== undefined && cur !== expected) return { status: 'conflict', current: cur };
        const step = { id: String(id), namespace: r.namespace as string, version: cur + 1, title: null, content: '', updatedAt: new Date(), objectKey: null } as unknown as MemoryDoc;
        if (!(await this.claim(m, step, 'delete'))) {
          if (expected !== undefined) return this.outcome(m, id, ns, cur + 1);
          continue; // a writer took that step: look again
        }
        const gone = await m.memories.collection.deleteOne({ ...this.versionFilter(id, cur), ...inNamespace(ns) });
        if (gone.deletedCount !== 1) {
          await m.versions.collection.deleteOne({ _id: `${id}:${cur + 1}` } as never);
          continue;
        }
        this.vectorCache.drop([String(id)]);
        const claims = await m.versions
          .find({ memoryId: String(id) }, { objectKey: 1 })
          .lean<Array<Pick<VersionRecord, 'objectKey'>>>()
          .exec();
        await m.versions.deleteMany({ memoryId: String(id) }).exec();
        const keys = [...claims.map((c) => c.objectKey), (r.objectKey as string | null | undefined) ?? null, `memories/${id}.md`];
        return { status: 'ok', released: [...new Set(keys.filter((k): k is string => !!k))] };
      }
      return this.outcome(m, id, ns, 0);
    });
  }

  override async removeMany(ns: string, ids: string[]): Promise<Array<{ id: string; released: string[] }>> {
    const out: Array<{ id: string; released: string[] }> = [];
    const unique = [...new Set(ids.map(String))];
    // A few deletes at a time: each is several round trips, and they do not depend on each other.
    for (let i = 0; i < unique.length; i += 16) {
      const chunk = unique.slice(i, i + 16);
      const res = await Promise.all(chunk.map((id) => this.remove(ns, id)));
      res.forEach((r, j) => {
        if (r.status === 'ok') out.push({ id: chunk[j], released: r.released });
      });
    }
    return out;
  }

  /**
   * A write of `key` is held when the memory points at it, or when its version claim lies below
   * the memory's version (the memory went through it). A claim at or above the current version
   * that the memory does not point at is a write that stopped half-way (claimed, then the
   * database dropped): not held.
   */
  override holds(id: string, key: string): Promise<boolean> {
    return this.run(async (m) => {
      const mem = await m.memories.collection.findOne({ _id: String(id) } as never, { projection: { version: 1, objectKey: 1 } });
      if (!mem) return false;
      if (((mem.objectKey as string | null | undefined) ?? `memories/${id}.md`) === key) return true;
      const claim = await m.versions.collection.findOne({ memoryId: String(id), objectKey: String(key), kind: 'write' } as never, { projection: { version: 1 } });
      return !!claim && (claim.version as number) < ((mem.version as number | undefined) ?? 1);
    });
  }

  /** Removes the version claim of a write that is not held (see holds), so the next writer need not wait for it to go stale. */
  override forget(id: string, key: string): Promise<void> {
    return this.run(async (m) => {
      const mem = await m.memories.collection.findOne({ _id: String(id) } as never, { projection: { version: 1, objectKey: 1 } });
      if (mem && mem.objectKey === key) return;
      const below = mem ? { $lt: (mem.version as number | undefined) ?? 1 } : null;
      const claims = await m.versions.collection.find({ memoryId: String(id), objectKey: String(key), kind: 'write' } as never, { projection: { version: 1 } }).toArray();
      for (const c of claims) if (!below || !((c.version as number) < below.$lt)) await m.versions.collection.deleteOne({ _id: c._id, objectKey: String(key) });
    });
  }

  override history(ns: string, id: string, limit: number, offset: number): Promise<{ rows: VersionEntry[]; total: number }> {
    return this.run(async (m) => {
      // Claims carry their memory's namespace; a memory outside `ns` shows no history.
      if (ns !== ALL_NAMESPACES && (await this.currentVersion(m, id, ns)) === null) return { rows: [], total: 0 };
      const q = { memoryId: String(id), kind: 'write', ...inNamespace(ns) };
      const [rows, total] = await Promise.all([m.versions.find(q).sort({ version: -1 }).skip(offset).limit(limit).lean<VersionRecord[]>().exec(), m.versions.countDocuments(q).exec()]);
      return { rows: rows.map(toEntry), total };
    });
  }

  override addHistory(ns: string, id: string, entries: VersionEntry[]): Promise<void> {
    if (entries.length === 0) return Promise.resolve();
    return this.run(async (m) => {
      const mem = await m.memories.collection.findOne({ _id: String(id), ...inNamespace(ns) } as never, { projection: { namespace: 1 } });
      if (!mem) return;
      const recs = entries.map((e) => ({
        ...this.claimRecord(
          {
            id,
            namespace: (mem.namespace as string | undefined) ?? DEFAULT_NAMESPACE,
            version: e.version,
            objectKey: e.objectKey,
            title: e.title,
            content: '',
            updatedAt: e.updatedAt,
            author: e.author,
          } as MemoryDoc,
          'write',
        ),
        size: e.size,
      }));
      await m.versions.collection.insertMany(recs as never[], { ordered: false }).catch((e: { code?: number; writeErrors?: unknown }) => {
        if (e.code !== 11000 && !e.writeErrors) throw e;
      });
    });
  }

  // --- vectors and the embedding queue (mongo-vectors.ts) ---

  /** Loads the copy of the vector space in use now (a serving process at start: not on its first vector search). */
  preloadVectors(): Promise<void> {
    return this.run(async (m) => {
      const key = await vectors.vectorSpace(m);
      if (key) await this.vectorCache.sync(m, key);
    });
  }

  useVectorSpace(key: string): Promise<boolean> {
    return this.run(async (m) => {
      const changed = await vectors.useVectorSpace(m, key);
      if (changed) this.vectorCache.reset();
      return changed;
    });
  }

  claimEmbeddingJobs(owner: string, max: number, leaseMs: number): Promise<EmbeddingJob[]> {
    return this.run((m) => vectors.claimJobs(m, owner, max, leaseMs));
  }

  storeVector(job: EmbeddingJob, key: string, vector: Float32Array): Promise<void> {
    return this.run((m) => vectors.storeVector(m, job, key, vector));
  }

  failEmbeddingJob(job: EmbeddingJob, error: string, retryAt: Date): Promise<void> {
    return this.run((m) => vectors.failJob(m, job, error, retryAt));
  }

  embeddingProgress(key: string | null): Promise<EmbeddingProgress> {
    return this.run((m) => vectors.progress(m, key));
  }

  similar(vector: Float32Array, key: string, limit: number, filter: MemoryFilter): Promise<SimilarHit[]> {
    return this.run(async (m) => vectors.similar(m, this.vectorCache, vector, key, limit, filterQuery(await this.idleSupersession(m, filter))));
  }

  override searchMode(): string {
    const m = this.peek();
    if (!m) return 'unknown (not connected yet)';
    return m.textSearch ? 'text index ($text)' : 'regex fallback (the server has no text indexes)';
  }
}
