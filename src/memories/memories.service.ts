import { searchPage } from './search/search-page';
import { dateSignal } from './search/date-signal';
import { rerankStage } from './search/rerank-stage';
import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { Author, CasResult, MemoryDoc, MemoryFilter, MemoryStats, SimilarHit, VersionEntry } from '../backends/ports/memory.model';
import { ObjectStore, SignedUrl } from '../backends/ports/object-store.port';
import { signFileUrl } from '../backends/filesystem/url-signer';
import { deleteIntentKey, WriteIntentRepository } from '../backends/ports/write-intent.repository';
import { AppError, ConflictError, NotFoundError, PreconditionFailedError, RequestValidationError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { HISTORY_KEEP_DEFAULT } from '../config/setting-rules';
import { SettingsService } from '../config/settings.service';
import { EmbeddingsService } from '../embeddings/embeddings.service';
import { NamespaceQuotas } from '../namespaces/namespace-quotas';
import { resolveTime, semanticText } from '../../libs/search-query';
import { decodeCursor, encodeCursor } from './cursor';
import type { CreateMemoryDto } from './dto/create-memory.dto';
import type { ListMemoriesQueryDto } from './dto/list-memories-query.dto';
import type { MemoryListResponseDto } from './dto/memory-response.dto';
import type { UpdateMemoryDto } from './dto/update-memory.dto';
import { InputChecker } from './memory-input';
import { isMemoryId, namespaceKeyPrefix, newMemoryId, objectKeyOf, versionKey } from './memory-id';
import { MarkdownParseError, parseMarkdown, toMarkdown } from './memory-markdown';
import { mapRow } from './memory.mapper';
import { recencyPrior } from './recency-prior';
import { checkSupersedes, markLikelyUpdates, SimilarHint, supersededVersion, supersessionFilter } from './supersession';

export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
const DAY_MS = 86_400_000;
/** A PATCH without If-Match that loses the compare-and-swap re-applies its change to the new state this often. */
const UPDATE_ROUNDS = 50;

/** Options of a write: who writes it (provenance) and the If-Match version, if any. */
export interface WriteOptions {
  author?: Author | null;
  ifMatch?: number;
}

export class MemoryNotFoundError extends NotFoundError {
  constructor() {
    super('Memory not found');
  }
}

/**
 * The memory use cases over the two ports. Write integrity (issue 9; README "Write integrity and
 * versions"): every write of a memory puts a NEW immutable object (memories/<id>.v<n>-<write>.md),
 * recorded first as a write intent, then compare-and-swaps the index row from version n-1 to n.
 * A writer that loses the swap deletes its own object (the winner's is never touched) and either
 * re-applies its change to the new state (PATCH without If-Match) or answers 412 (If-Match).
 * An index write whose outcome is unknown (the database dropped mid-write) keeps its object and
 * its intent: the sweep decides later from what the index holds (decision 0060).
 * Delete = a delete intent, the index (with its history), every object it referenced, then the
 * intent goes; the sweep finishes a delete that was interrupted.
 */
@Injectable()
export class MemoriesService {
  private readonly logger = new Logger('Memories');

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly intents: WriteIntentRepository,
    private readonly embeddings: EmbeddingsService,
    private readonly quotas: NamespaceQuotas,
  ) {}

  async create(ns: string, dto: CreateMemoryDto, opts: WriteOptions = {}): Promise<MemoryDoc> {
    const check = new InputChecker(this.cfg.limits);
    const content = check.content(dto.content);
    const title = dto.title == null ? null : check.text('title', dto.title);
    const agent = dto.agent == null ? null : check.text('agent', dto.agent);
    const project = dto.project == null ? null : check.text('project', dto.project);
    const tags = dto.tags == null ? [] : check.tags(dto.tags);
    check.throwIfAny();
    const supersedes = await checkSupersedes(dto.supersedes, null, (i) => this.index.get(ns, i));

    const now = new Date();
    const id = newMemoryId(now.getTime());
    const doc: MemoryDoc = {
      id,
      namespace: ns,
      title,
      type: dto.type ?? 'note',
      scope: dto.scope ?? 'global',
      tags,
      agent,
      project,
      content,
      createdAt: now,
      updatedAt: now,
      version: 1,
      objectKey: versionKey(ns, id, 1),
      author: opts.author ?? null,
    };
    await this.insertNew(doc);
    const linked: string[] = [];
    try {
      await this.supersede(ns, supersedes, id, now, doc.author ?? null, linked);
    } catch (e) {
      await this.takeBack(doc, linked);
      throw e;
    }
    return doc;
  }

  /**
   * A create whose `supersedes` links failed after its insert (decision 0166): the links made are
   * undone and the new memory is deleted, so the error means "nothing stored" and a retry stores
   * the memory once. When that fails too (the backend is down), what is left stays as it is (the
   * memory stored, some links made) and is logged: the links are undone before the memory goes,
   * so an older memory never stays hidden behind a memory that is gone.
   */
  private async takeBack(doc: MemoryDoc, linked: string[]): Promise<void> {
    const unlinked = (cur: MemoryDoc) => (cur.supersededBy === doc.id ? { ...cur, supersededBy: null, validTo: null } : null);
    try {
      for (const oldId of linked) {
        if ((await this.rewrite(doc.namespace, oldId, unlinked, doc.author ?? null)) === 'lost') throw new Error(`memory ${oldId} kept changing`);
      }
      await this.delete(doc.namespace, doc.id);
    } catch (e) {
      this.logger.warn(`Memory ${doc.id}: its supersedes links failed and it could not be taken back (${(e as Error).message}); it stays stored`);
    }
  }

  /** Duplicate hints for a new memory (same namespace and project, not superseded): see EmbeddingsService.similar; those that look like updates are marked. */
  async similarTo(doc: MemoryDoc): Promise<SimilarHint[]> {
    const hits: SimilarHit[] = await this.embeddings.similar(doc.title, doc.content, { namespace: doc.namespace, ...(doc.project ? { project: doc.project } : {}), current: true }, doc.id);
    return hits.length === 0 ? [] : markLikelyUpdates(doc, hits, (i) => this.index.get(doc.namespace, i));
  }

  /**
   * Records that memory `by` replaces the memories `ids` since `at` (decision 0130): each gets a
   * new version carrying superseded_by and valid_to (history keeps the one before; If-Match moves
   * on as with any write). One deleted meanwhile, or already superseded, is left as it is. The ids
   * it linked are pushed to `linked` as it goes.
   */
  private async supersede(ns: string, ids: string[], by: string, at: Date, author: Author | null, linked: string[] = []): Promise<void> {
    for (const id of ids) {
      if ((await this.rewrite(ns, id, (old) => supersededVersion(old, by, at), author)) === 'written') linked.push(id);
    }
  }

  /**
   * Writes `change(current)` as the next version of memory `id`, reading it again after a lost
   * compare-and-swap (at most UPDATE_ROUNDS times): 'written'; 'unchanged' when the memory is gone
   * (or deleted meanwhile) or `change` says there is nothing to write (null); 'lost' when every
   * round lost to another writer.
   */
  private async rewrite(ns: string, id: string, change: (current: MemoryDoc) => MemoryDoc | null, author: Author | null): Promise<'written' | 'unchanged' | 'lost'> {
    for (let round = 0; round < UPDATE_ROUNDS; round++) {
      const current = await this.index.get(ns, id);
      const next = current && change(current);
      if (!current || !next) return 'unchanged';
      try {
        if (await this.commit(current, next, author)) return 'written';
      } catch (e) {
        if (e instanceof MemoryNotFoundError) return 'unchanged'; // deleted meanwhile
        throw e;
      }
    }
    return 'lost';
  }

  /** The memory with its content read from the object store (404 for a memory of another namespace). */
  async get(ns: string, id: string): Promise<MemoryDoc> {
    const doc = await this.indexed(ns, id);
    const key = objectKeyOf(doc);
    try {
      const stored = parseMarkdown((await this.store.get(key)).toString('utf8'));
      return { ...doc, content: stored.content };
    } catch (e) {
      if (!(e instanceof NotFoundError) && !(e instanceof MarkdownParseError)) throw e;
      // The file is missing or damaged: serve the index copy rather than fail; reindex reports it.
      this.logger.warn(`Memory ${id}: object ${key} unreadable (${e.message}); served the indexed content`);
      return doc;
    }
  }

  /**
   * PATCH: applies the change to the current version and swaps it in. Without If-Match a lost
   * swap re-reads and re-applies the change (bounded); with If-Match it answers 412.
   */
  async update(ns: string, id: string, dto: UpdateMemoryDto, opts: WriteOptions = {}): Promise<MemoryDoc> {
    const patch = this.checkPatch(dto); // bad input is refused before the memory or its version is looked at
    for (let round = 0; ; round++) {
      const old = await this.indexed(ns, id);
      this.checkIfMatch(old.version, opts.ifMatch);
      const supersedes = await checkSupersedes(dto.supersedes, old, (i) => this.index.get(ns, i));
      const next: MemoryDoc = { ...old, ...patch };
      const done = sameMemory(old, next) ? old : await this.commit(old, next, opts.author ?? null);
      if (done) {
        await this.supersede(ns, supersedes, id, done === old ? new Date() : done.updatedAt, opts.author ?? null);
        return done;
      }
      if (opts.ifMatch !== undefined || round >= UPDATE_ROUNDS) {
        const now = await this.indexed(ns, id);
        throw new PreconditionFailedError(`Memory ${id} was changed by another write (now version ${now.version})`, now.version);
      }
    }
  }

  /** The checked, normalised fields a PATCH sets (absent or null fields are left out). */
  private checkPatch(dto: UpdateMemoryDto): Partial<MemoryDoc> {
    const check = new InputChecker(this.cfg.limits);
    const patch: Partial<MemoryDoc> = {};
    if (dto.content != null) patch.content = check.content(dto.content);
    if (dto.title != null) patch.title = check.text('title', dto.title);
    if (dto.agent != null) patch.agent = check.text('agent', dto.agent);
    if (dto.project != null) patch.project = check.text('project', dto.project);
    if (dto.type != null) patch.type = dto.type;
    if (dto.scope != null) patch.scope = dto.scope;
    if (dto.tags != null) patch.tags = check.tags(dto.tags);
    check.throwIfAny();
    return patch;
  }

  /**
   * Writes `next` as version old.version + 1: a new object, then the compare-and-swap. Returns
   * the stored memory, or null when another write got there first (its own object is removed);
   * 404 when the memory was deleted meanwhile.
   */
  private async commit(old: MemoryDoc, next: MemoryDoc, author: Author | null, opts: { keepTimestamps?: boolean } = {}): Promise<MemoryDoc | null> {
    const grows = Buffer.byteLength(next.content) - Buffer.byteLength(old.content); // a growing content counts against the byte quota
    await this.quotas.check(old.namespace, 0, grows);
    const version = old.version + 1;
    const doc: MemoryDoc = {
      ...next,
      version,
      namespace: old.namespace, // a write never moves a memory to another namespace
      objectKey: versionKey(old.namespace, old.id, version),
      author,
      // updated_at strictly moves forward, even within the same millisecond (an import keeps its own).
      updatedAt: opts.keepTimestamps ? next.updatedAt : new Date(Math.max(Date.now(), old.updatedAt.getTime() + 1)),
    };
    if (!old.objectKey) {
      // A memory from before versions: its file (memories/<id>.md) becomes version 1 of the history.
      await this.index.addHistory(old.namespace, old.id, [this.entryOf(old)]);
    }
    await this.writeObject(doc);
    let res: CasResult;
    try {
      res = await this.quotas.within(old.namespace, 0, grows, () => this.index.update(doc, old.version, this.historyKeep()));
    } catch (e) {
      await this.abandon(doc, e, 'a failed index write');
      throw e;
    }
    if (res.status !== 'ok') {
      await this.dropObject(doc, 'a lost compare-and-swap');
      if (res.status === 'missing') throw new MemoryNotFoundError();
      return null;
    }
    this.settle(doc.objectKey!);
    this.embeddings.written();
    // The version before a memory had history (memories/<id>.md) and pruned versions' objects.
    for (const key of res.released) await this.deleteKey(old.id, key);
    return doc;
  }

  async delete(ns: string, id: string, opts: WriteOptions = {}): Promise<void> {
    if (!isMemoryId(id)) throw new MemoryNotFoundError();
    const intent = deleteIntentKey(id, namespaceKeyPrefix(ns));
    await this.intents.add({ objectKey: intent, memoryId: id, createdAt: new Date(), kind: 'delete' });
    let res: CasResult;
    try {
      res = await this.index.remove(ns, id, opts.ifMatch);
    } catch (e) {
      // Not removed for sure: the intent goes. Otherwise it stays and the sweep finishes (or drops) the delete.
      if (this.definitelyNotWritten(e)) this.settle(intent);
      throw e;
    }
    if (res.status !== 'ok') {
      this.settle(intent);
      if (res.status === 'missing') throw new MemoryNotFoundError();
      throw new PreconditionFailedError(`Memory ${id} is at version ${res.current}, not ${opts.ifMatch || 'a weak ETag (If-Match compares strongly)'}`, res.current);
    }
    if (await this.deleteKeys(id, res.released)) this.settle(intent);
  }

  /** Kept versions, newest first. A memory from before versions shows its current state as version 1. */
  async versions(ns: string, id: string, limit: number, offset: number): Promise<{ rows: VersionEntry[]; total: number; current: number }> {
    const doc = await this.indexed(ns, id);
    const page = await this.index.history(ns, id, limit, offset);
    if (page.total === 0) {
      return { rows: offset === 0 ? [this.entryOf(doc)] : [], total: 1, current: doc.version };
    }
    return { ...page, current: doc.version };
  }

  /** One kept version, read from its object. */
  async version(ns: string, id: string, n: number): Promise<{ doc: MemoryDoc; entry: VersionEntry }> {
    const current = await this.indexed(ns, id);
    const { rows } = await this.versions(ns, id, 1, 0);
    let entry: VersionEntry | undefined = rows[0]?.version === n ? rows[0] : undefined;
    if (!entry) {
      const all = await this.index.history(ns, id, 1000, 0);
      entry = all.rows.find((r) => r.version === n);
    }
    if (!entry) throw new NotFoundError(`Memory ${id} has no kept version ${n}`);
    if (n === current.version) return { doc: await this.get(ns, id), entry };
    let stored: Omit<MemoryDoc, 'namespace'>;
    try {
      stored = parseMarkdown((await this.store.get(entry.objectKey)).toString('utf8'));
    } catch (e) {
      if (e instanceof NotFoundError) throw new NotFoundError(`The file of version ${n} of memory ${id} is missing`);
      if (e instanceof MarkdownParseError) {
        this.logger.warn(`Memory ${id}: object ${entry.objectKey} (version ${n}) unreadable: ${e.message}`);
        throw new NotFoundError(`The file of version ${n} of memory ${id} cannot be read`);
      }
      throw e;
    }
    return { doc: { ...stored, id, namespace: current.namespace, createdAt: current.createdAt, version: n, objectKey: entry.objectKey, author: entry.author }, entry };
  }

  /** Makes a kept version current again, as a new version. */
  async restore(ns: string, id: string, n: number, opts: WriteOptions = {}): Promise<MemoryDoc> {
    const { doc: past } = await this.version(ns, id, n);
    const dto: UpdateMemoryDto = { content: past.content, title: past.title ?? '', agent: past.agent ?? '', project: past.project ?? '', type: past.type, scope: past.scope, tags: past.tags };
    return this.update(ns, id, dto, opts);
  }

  /**
   * Writes a memory exactly as given, id, version and timestamps included (import, issue 12): the
   * public create never takes those from a caller. The same write path as create and update (an
   * immutable object per version, a write intent, then the index), so a failure never leaves half
   * a memory. Without `replace` it is inserted (ConflictError when the id exists meanwhile); with
   * `replace` it becomes the next version of the existing memory (compare-and-swap, retried like
   * an update) and keeps the imported timestamps. Fields are checked against create's limits.
   */
  async putExact(doc: MemoryDoc, replace: boolean, importer: Author | null = null): Promise<void> {
    const check = new InputChecker(this.cfg.limits);
    check.content(doc.content);
    const normalized: MemoryDoc = {
      ...doc,
      title: doc.title == null ? null : check.text('title', doc.title),
      agent: doc.agent == null ? null : check.text('agent', doc.agent),
      project: doc.project == null ? null : check.text('project', doc.project),
      tags: check.tags(doc.tags),
      author: importedBy(importer, doc),
    };
    check.throwIfAny();
    if (replace) {
      for (let attempt = 0; attempt < UPDATE_ROUNDS; attempt++) {
        const old = await this.index.get(doc.namespace, doc.id);
        if (!old) break;
        if (await this.commit(old, normalized, normalized.author ?? null, { keepTimestamps: true })) return;
      }
      if (await this.index.get(doc.namespace, doc.id)) throw new ConflictError(`Memory ${doc.id} kept changing while it was imported`);
    }
    const version = normalized.version && normalized.version >= 1 ? normalized.version : 1;
    const fresh: MemoryDoc = { ...normalized, version, objectKey: versionKey(doc.namespace, doc.id, version) };
    await this.insertNew(fresh);
  }

  /** A new memory: its object, then its index row (the object is removed when the row cannot be written). */
  private async insertNew(doc: MemoryDoc): Promise<void> {
    const bytes = Buffer.byteLength(doc.content);
    await this.quotas.check(doc.namespace, 1, bytes); // refused before the object is written; checked again with the index write
    await this.writeObject(doc);
    try {
      await this.quotas.within(doc.namespace, 1, bytes, () => this.index.insert(doc));
    } catch (e) {
      await this.abandon(doc, e, 'a failed index write');
      throw e;
    }
    this.settle(doc.objectKey!);
    this.embeddings.written();
  }

  /**
   * Restores an earlier version of an existing memory into its history (import of an export's
   * `history/<id>/<n>.md`, issue 12): its own immutable object, then the history entry, rolled back
   * together. 'kept' when the memory already keeps version n (nothing written), 'current' when n is
   * not below the current version, 'missing' when the memory does not exist.
   */
  async putPastVersion(past: MemoryDoc, importer: Author | null = null): Promise<'added' | 'kept' | 'current' | 'missing'> {
    const current = await this.index.get(past.namespace, past.id);
    if (!current) return 'missing';
    if (past.version >= current.version) return 'current';
    const kept = await this.index.history(past.namespace, past.id, 1000, 0);
    if (kept.rows.some((r) => r.version === past.version)) return 'kept';
    const doc: MemoryDoc = { ...past, author: importedBy(importer, past), createdAt: current.createdAt, objectKey: versionKey(past.namespace, past.id, past.version) };
    await this.writeObject(doc);
    try {
      // A memory without history rows shows its current state as its only version: keep it listed.
      await this.index.addHistory(past.namespace, past.id, kept.total === 0 ? [this.entryOf(current), this.entryOf(doc)] : [this.entryOf(doc)]);
    } catch (e) {
      await this.abandon(doc, e, 'a failed history write');
      throw e;
    }
    this.settle(doc.objectKey!);
    return 'added';
  }

  async bulkDelete(ns: string, ids: string[]): Promise<{ deleted: string[]; missing: string[] }> {
    if (ids.length > this.cfg.limits.bulkDeleteMax) {
      throw RequestValidationError.one(['body', 'ids'], `List should have at most ${this.cfg.limits.bulkDeleteMax} items`, 'too_long', null, {
        max_length: this.cfg.limits.bulkDeleteMax,
      });
    }
    const unique = [...new Set(ids)];
    const valid = unique.filter(isMemoryId);
    if (valid.length === 0) return { deleted: [], missing: unique };
    const now = new Date();
    const intents = new Map(valid.map((id) => [id, deleteIntentKey(id, namespaceKeyPrefix(ns))]));
    await this.intents.addMany(valid.map((id) => ({ objectKey: intents.get(id)!, memoryId: id, createdAt: now, kind: 'delete' as const })));
    let removed: Array<{ id: string; released: string[] }>;
    try {
      removed = await this.index.removeMany(ns, valid);
    } catch (e) {
      if (this.definitelyNotWritten(e)) for (const key of intents.values()) this.settle(key);
      throw e;
    }
    const gone = new Set(removed.map((r) => r.id));
    for (const id of valid) if (!gone.has(id)) this.settle(intents.get(id)!);
    for (const r of removed) if (await this.deleteKeys(r.id, r.released)) this.settle(intents.get(r.id)!);
    const deleted = removed.map((r) => r.id);
    return { deleted, missing: unique.filter((id) => !gone.has(id)) };
  }

  /** The stored markdown file, byte for byte (rebuilt from the index if the file is missing). */
  async download(ns: string, id: string): Promise<Buffer> {
    const doc = await this.indexed(ns, id);
    try {
      return await this.store.get(objectKeyOf(doc));
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      this.logger.warn(`Memory ${id}: object ${objectKeyOf(doc)} is missing; served markdown rebuilt from the index`);
      return Buffer.from(toMarkdown(doc), 'utf8');
    }
  }

  async signedDownload(ns: string, id: string, baseUrl: string, tokenId?: string): Promise<SignedUrl & { ttl: number }> {
    const doc = await this.indexed(ns, id);
    const ttl = this.settings.current().objstore_presign_ttl;
    if (tokenId) {
      // A token's link is the service's own on every store, so it ends when the token does (decision 0052).
      const expires = Math.floor(Date.now() / 1000) + ttl;
      return { url: signFileUrl(this.settings.serviceKey(), baseUrl, objectKeyOf(doc), expires, tokenId), expiresAt: new Date(expires * 1000), ttl };
    }
    const signed = await this.store.signedUrl(objectKeyOf(doc), ttl, { baseUrl, filename: `${id}.md` });
    return { ...signed, ttl };
  }

  stats(ns: string): Promise<MemoryStats> {
    return this.index.stats(ns);
  }

  /** A list or search page of namespace `ns`. */
  async list(ns: string, q: ListMemoriesQueryDto): Promise<MemoryListResponseDto> {
    const limit = q.limit;
    const filter = { ...this.filterOf(ns, q), ...supersessionFilter(q) };
    const text = (q.q ?? '').trim();

    if (text !== '') {
      if (q.after !== undefined) {
        throw RequestValidationError.one(['query', 'after'], 'Cursor paging is only available in list mode (without q); use page or skip', 'value_error', q.after);
      }
      const offset = q.skip ?? (q.page - 1) * limit;
      // Hybrid by default; keyword when asked, or when there is no embedding model.
      const wanted = q.mode ?? 'hybrid';
      const embedded = wanted === 'keyword' ? null : await this.embeddings.queryVector(semanticText(text) || text);
      const mode = embedded ? wanted : 'keyword';
      // Time in the question (decision 0135): a date preference; its relative words leave the keyword terms. Keyword mode stays literal.
      const time = mode === 'keyword' ? null : resolveTime(text, new Date(q.query_date ?? Date.now()));
      // Semantic and hybrid: the index returns candidates, ranked and floored above it (search/search-page.ts).
      const res = await searchPage(await this.index.search({ text: time?.keywordText ?? text, filter, limit, offset, mode, vector: embedded?.vector, vectorKey: embedded?.key }), {
        mode,
        text,
        minScore: q.min_score,
        offset,
        limit,
        hooks: { signals: time?.range ? [dateSignal(time.range)] : [], rescore: rerankStage(this.cfg.reranker, text) },
        scale: embedded?.scale,
      });
      const hasNext = offset + res.rows.length < Math.min(res.total, res.reachable ?? res.total);
      const found = res.rows.map((r, i) => ({ ...r, explain: res.explains?.[i] }));
      // The newer of two near-duplicate hits first (decision 0131); keyword mode keeps its order, and
      // a question that names a time asks about that time, so its date preference decides instead.
      const rows = (mode === 'keyword' || time?.range ? found : recencyPrior(found)).map(({ explain, ...r }) => (q.explain && explain ? { ...mapRow(r), explain } : mapRow(r)));
      const below = res.bestBelowFloor === undefined ? {} : { best_below_floor: res.bestBelowFloor };
      return { ...this.page('search', rows, res.total, limit, offset, null, hasNext), search_mode: mode, ...below };
    }

    if (q.after !== undefined) {
      const after = decodeCursor(q.after);
      if (!after) throw RequestValidationError.one(['query', 'after'], 'Invalid cursor: pass the next_cursor of a previous page', 'value_error', q.after);
      const res = await this.index.list({ filter, limit: limit + 1, offset: 0, after });
      const hasNext = res.rows.length > limit;
      const rows = res.rows.slice(0, limit);
      const cursor = hasNext ? encodeCursor(rows[rows.length - 1]) : null;
      return { ...this.page('list', rows.map(mapRow), res.total, limit, 0, cursor, hasNext), page: null, has_prev: true };
    }

    const offset = q.skip ?? (q.page - 1) * limit;
    const res = await this.index.list({ filter, limit: limit + 1, offset });
    const hasNext = res.rows.length > limit;
    const rows = res.rows.slice(0, limit);
    const cursor = hasNext ? encodeCursor(rows[rows.length - 1]) : null;
    return this.page('list', rows.map(mapRow), res.total, limit, offset, cursor, hasNext);
  }

  // --- helpers ---

  private page(mode: 'list' | 'search', rows: MemoryListResponseDto['rows'], total: number, limit: number, offset: number, nextCursor: string | null, hasNextKnown: boolean): MemoryListResponseDto {
    const hasNext = hasNextKnown;
    return {
      ok: true,
      rows,
      count: rows.length,
      total,
      page: Math.floor(offset / limit) + 1,
      page_size: limit,
      total_pages: Math.ceil(total / limit),
      has_prev: offset > 0,
      has_next: hasNext,
      next_cursor: mode === 'list' ? nextCursor : null,
      mode,
    };
  }

  /** The list filters of a query (also the export's). */
  filterOf(ns: string, q: Pick<ListMemoriesQueryDto, 'type' | 'scope' | 'agent' | 'project' | 'tag' | 'days' | 'since'>): MemoryFilter {
    const filter: MemoryFilter = { namespace: ns };
    if (q.type !== undefined) filter.type = q.type;
    if (q.scope !== undefined) filter.scope = q.scope;
    if (q.agent !== undefined) filter.agent = q.agent;
    if (q.project !== undefined) filter.project = q.project;
    if (q.tag !== undefined && q.tag.length > 0) filter.tags = q.tag;
    const bounds: number[] = [];
    if (q.days !== undefined) bounds.push(Date.now() - q.days * DAY_MS);
    if (q.since !== undefined) {
      const t = new Date(q.since).getTime();
      if (Number.isNaN(t)) throw RequestValidationError.one(['query', 'since'], 'Input should be a valid datetime', 'datetime_parsing', q.since);
      bounds.push(t);
    }
    if (bounds.length > 0) filter.since = new Date(Math.max(...bounds)); // the later bound wins
    return filter;
  }

  /** The indexed memory, or 404 (also for anything that is not a memory id). */
  private async indexed(ns: string, id: string): Promise<MemoryDoc> {
    if (!isMemoryId(id)) throw new MemoryNotFoundError();
    const doc = await this.index.get(ns, id);
    if (!doc) throw new MemoryNotFoundError();
    return doc;
  }

  private entryOf(doc: MemoryDoc): VersionEntry {
    return { version: doc.version, objectKey: objectKeyOf(doc), title: doc.title, size: Buffer.byteLength(doc.content, 'utf8'), updatedAt: doc.updatedAt, author: doc.author ?? null };
  }

  /** 412 unless the If-Match version (when given) is the current one. */
  private checkIfMatch(current: number, ifMatch: number | undefined): void {
    if (ifMatch !== undefined && ifMatch !== current) throw new PreconditionFailedError(`The memory is at version ${current}, not ${ifMatch || 'a weak ETag (If-Match compares strongly)'}`, current);
  }

  private historyKeep(): number {
    const v = this.settings.current().memory_history_keep;
    return Number.isInteger(v) && v >= 1 ? v : HISTORY_KEEP_DEFAULT;
  }

  /** Records the write intent, then puts the version's object (the intent is dropped if the put fails). */
  private async writeObject(doc: MemoryDoc): Promise<void> {
    const key = doc.objectKey!;
    await this.intents.add({ objectKey: key, memoryId: doc.id, createdAt: new Date() });
    try {
      await this.store.put(key, toMarkdown(doc), MARKDOWN_TYPE);
    } catch (e) {
      // A put that failed may still have stored the object (a timeout): the intent goes only once
      // the object is surely gone, else the sweep removes it.
      await this.dropObject(doc, 'a failed object write');
      throw e;
    }
  }

  /** Whether an error of an index write means it did not happen (the object may go at once). */
  private definitelyNotWritten(e: unknown): boolean {
    // Refused writes (duplicate id, bad input) and writes of an index whose failed writes roll back.
    return this.index.failedWritesRolledBack === true || (e instanceof AppError && e.status < 500);
  }

  /**
   * After an index write threw: the object goes only when the write surely did not happen. When
   * its outcome is unknown (the database may have committed it before the connection dropped)
   * the object and its intent stay, and the sweep decides once the grace period is over.
   */
  private async abandon(doc: MemoryDoc, e: unknown, why: string): Promise<void> {
    if (this.definitelyNotWritten(e)) return this.dropObject(doc, why);
    this.logger.warn(`Memory ${doc.id}: the outcome of ${why} is unknown (${(e as Error).message}); ${doc.objectKey} and its write intent are kept for the sweep to decide`);
  }

  /** Removes the object of a write that did not make it into the index, then its intent. */
  private async dropObject(doc: MemoryDoc, why: string): Promise<void> {
    const key = doc.objectKey!;
    try {
      await this.store.delete(key);
      await this.intents.remove(key);
    } catch (err) {
      // The intent stays: the start-up sweep removes the object later.
      this.logger.error(`Could not remove ${key} after ${why}: ${(err as Error).message}`);
    }
  }

  /**
   * The write is in the index: its intent goes, off the response path (one round trip fewer per
   * write). If that fails or the process dies first, the sweep finds the index references the
   * object and only drops the intent.
   */
  private settle(key: string): void {
    this.intents.remove(key).catch((e: Error) => this.logger.warn(`Write intent of ${key} not removed: ${e.message}`));
  }

  private async deleteKey(id: string, key: string): Promise<boolean> {
    // The index entry is gone, so the version is gone for every reader; a file left behind is
    // logged (and removed by the sweep when a delete intent names it).
    try {
      await this.store.delete(key);
      return true;
    } catch (e) {
      this.logger.error(`Memory ${id}: object ${key} released by the index but not deleted: ${(e as Error).message}`);
      return false;
    }
  }

  /** Deletes the objects a delete released; true when all of them went (the delete intent may go). */
  private async deleteKeys(id: string, keys: string[]): Promise<boolean> {
    let all = true;
    for (const key of keys) if (!(await this.deleteKey(id, key))) all = false;
    return all;
  }
}

/**
 * The author of a version written by an import (issue 46): the importer, with what the file claimed
 * (author, version, timestamps) kept beside it, never in its place. Without an importer (a command-line
 * restore of the service's own backup) the file's author stands.
 */
export function importedBy(importer: Author | null, doc: MemoryDoc): Author | null {
  if (!importer) return doc.author ?? null;
  const a = doc.author;
  return {
    kind: importer.kind,
    id: importer.id,
    name: importer.name,
    claimed: { author: a ? { kind: a.kind, id: a.id, name: a.name } : null, version: doc.version, createdAt: doc.createdAt.toISOString(), updatedAt: doc.updatedAt.toISOString() },
  };
}

/** Same fields and content (timestamps and id not compared). */
export function sameMemory(a: Omit<MemoryDoc, 'namespace'>, b: Omit<MemoryDoc, 'namespace'>): boolean {
  return (
    a.title === b.title &&
    a.type === b.type &&
    a.scope === b.scope &&
    a.agent === b.agent &&
    a.project === b.project &&
    a.content === b.content &&
    a.tags.length === b.tags.length &&
    a.tags.every((t, i) => t === b.tags[i])
  );
}
