import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { MemoryDoc, MemoryFilter, MemoryStats } from '../backends/ports/memory.model';
import { ObjectStore, SignedUrl } from '../backends/ports/object-store.port';
import { NotFoundError, RequestValidationError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { EmbeddingsService } from '../embeddings/embeddings.service';
import { semanticText } from '../../libs/search-query';
import { decodeCursor, encodeCursor } from './cursor';
import type { CreateMemoryDto } from './dto/create-memory.dto';
import type { ListMemoriesQueryDto } from './dto/list-memories-query.dto';
import type { MemoryListResponseDto } from './dto/memory-response.dto';
import type { UpdateMemoryDto } from './dto/update-memory.dto';
import { InputChecker } from './memory-input';
import { isMemoryId, memoryKey, newMemoryId } from './memory-id';
import { MarkdownParseError, parseMarkdown, toMarkdown } from './memory-markdown';
import { mapRow } from './memory.mapper';

export const MARKDOWN_TYPE = 'text/markdown; charset=utf-8';
const DAY_MS = 86_400_000;

export class MemoryNotFoundError extends NotFoundError {
  constructor() {
    super('Memory not found');
  }
}

/**
 * The memory use cases over the two ports. Consistency rules (issue 3, point 5):
 * create = object first, then index (the object is removed if the index write fails);
 * update = new object, then index (the old object is put back if the index write fails);
 * delete = index first, then object.
 */
@Injectable()
export class MemoriesService {
  private readonly logger = new Logger('Memories');

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly embeddings: EmbeddingsService,
  ) {}

  async create(dto: CreateMemoryDto): Promise<MemoryDoc> {
    const check = new InputChecker(this.cfg.limits);
    const content = check.content(dto.content);
    const title = dto.title == null ? null : check.text('title', dto.title);
    const agent = dto.agent == null ? null : check.text('agent', dto.agent);
    const project = dto.project == null ? null : check.text('project', dto.project);
    const tags = dto.tags == null ? [] : check.tags(dto.tags);
    check.throwIfAny();

    const now = new Date();
    const doc: MemoryDoc = {
      id: newMemoryId(now.getTime()),
      title,
      type: dto.type ?? 'note',
      scope: dto.scope ?? 'global',
      tags,
      agent,
      project,
      content,
      createdAt: now,
      updatedAt: now,
    };
    const key = memoryKey(doc.id);
    await this.store.put(key, toMarkdown(doc), MARKDOWN_TYPE);
    try {
      await this.index.insert(doc);
    } catch (e) {
      await this.store.delete(key).catch((err: Error) => this.logger.error(`Could not remove ${key} after a failed index write: ${err.message}`));
      throw e;
    }
    this.embeddings.wake();
    return doc;
  }

  /** Duplicate hints for a new memory (same project): see EmbeddingsService.similar. */
  similarTo(doc: MemoryDoc): Promise<Array<{ id: string; title: string | null; score: number }>> {
    return this.embeddings.similar(doc.title, doc.content, doc.project ? { project: doc.project } : {}, doc.id);
  }

  /** The memory with its content read from the object store. */
  async get(id: string): Promise<MemoryDoc> {
    const doc = await this.indexed(id);
    try {
      const stored = parseMarkdown((await this.store.get(memoryKey(id))).toString('utf8'));
      return { ...doc, content: stored.content };
    } catch (e) {
      if (!(e instanceof NotFoundError) && !(e instanceof MarkdownParseError)) throw e;
      // The file is missing or damaged: serve the index copy rather than fail; reindex reports it.
      this.logger.warn(`Memory ${id}: object ${memoryKey(id)} unreadable (${(e as Error).message}); served the indexed content`);
      return doc;
    }
  }

  async update(id: string, dto: UpdateMemoryDto): Promise<MemoryDoc> {
    const old = await this.indexed(id);
    const check = new InputChecker(this.cfg.limits);
    const next: MemoryDoc = { ...old, tags: [...old.tags] };
    if (dto.content != null) next.content = check.content(dto.content);
    if (dto.title != null) next.title = check.text('title', dto.title);
    if (dto.agent != null) next.agent = check.text('agent', dto.agent);
    if (dto.project != null) next.project = check.text('project', dto.project);
    if (dto.type != null) next.type = dto.type;
    if (dto.scope != null) next.scope = dto.scope;
    if (dto.tags != null) next.tags = check.tags(dto.tags);
    check.throwIfAny();
    if (sameMemory(old, next)) return old;

    // updated_at strictly moves forward, even within the same millisecond.
    next.updatedAt = new Date(Math.max(Date.now(), old.updatedAt.getTime() + 1));
    const key = memoryKey(id);
    // The old file, to put back if the index write fails (a store that cannot be read fails here, before any write).
    const previous = await this.store.get(key).catch((e: unknown) => {
      if (e instanceof NotFoundError) return null;
      throw e;
    });
    await this.store.put(key, toMarkdown(next), MARKDOWN_TYPE);
    let replaced: boolean;
    try {
      replaced = await this.index.replace(next);
    } catch (e) {
      await this.restore(key, previous);
      throw e;
    }
    if (!replaced) {
      // Deleted while we were writing: do not leave a file behind.
      await this.store.delete(key).catch(() => undefined);
      throw new MemoryNotFoundError();
    }
    this.embeddings.wake();
    return next;
  }

  async delete(id: string): Promise<void> {
    if (!isMemoryId(id) || !(await this.index.delete(id))) throw new MemoryNotFoundError();
    await this.deleteObject(id);
  }

  async bulkDelete(ids: string[]): Promise<{ deleted: string[]; missing: string[] }> {
    if (ids.length > this.cfg.limits.bulkDeleteMax) {
      throw RequestValidationError.one(['body', 'ids'], `List should have at most ${this.cfg.limits.bulkDeleteMax} items`, 'too_long', null, {
        max_length: this.cfg.limits.bulkDeleteMax,
      });
    }
    const unique = [...new Set(ids)];
    const valid = unique.filter(isMemoryId);
    const deleted = valid.length > 0 ? await this.index.deleteMany(valid) : [];
    const gone = new Set(deleted);
    for (const id of deleted) await this.deleteObject(id);
    return { deleted, missing: unique.filter((id) => !gone.has(id)) };
  }

  /** The stored markdown file, byte for byte (rebuilt from the index if the file is missing). */
  async download(id: string): Promise<Buffer> {
    const doc = await this.indexed(id);
    try {
      return await this.store.get(memoryKey(id));
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e;
      this.logger.warn(`Memory ${id}: object ${memoryKey(id)} is missing; served markdown rebuilt from the index`);
      return Buffer.from(toMarkdown(doc), 'utf8');
    }
  }

  async signedDownload(id: string, baseUrl: string): Promise<SignedUrl & { ttl: number }> {
    await this.indexed(id);
    const ttl = this.settings.current().objstore_presign_ttl;
    const signed = await this.store.signedUrl(memoryKey(id), ttl, { baseUrl, filename: `${id}.md` });
    return { ...signed, ttl };
  }

  stats(): Promise<MemoryStats> {
    return this.index.stats();
  }

  async list(q: ListMemoriesQueryDto): Promise<MemoryListResponseDto> {
    const limit = q.limit;
    const filter = this.filterOf(q);
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
      const res = await this.index.search({ text, filter, limit, offset, mode, vector: embedded?.vector, vectorKey: embedded?.key });
      const hasNext = offset + res.rows.length < Math.min(res.total, res.reachable ?? res.total);
      return { ...this.page('search', res.rows.map(mapRow), res.total, limit, offset, null, hasNext), search_mode: mode };
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

  private page(
    mode: 'list' | 'search',
    rows: MemoryListResponseDto['rows'],
    total: number,
    limit: number,
    offset: number,
    nextCursor: string | null,
    hasNextKnown: boolean,
  ): MemoryListResponseDto {
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

  private filterOf(q: ListMemoriesQueryDto): MemoryFilter {
    const filter: MemoryFilter = {};
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
  private async indexed(id: string): Promise<MemoryDoc> {
    if (!isMemoryId(id)) throw new MemoryNotFoundError();
    const doc = await this.index.get(id);
    if (!doc) throw new MemoryNotFoundError();
    return doc;
  }

  private async deleteObject(id: string): Promise<void> {
    // The index entry is gone, so the memory is deleted for every reader; a file left behind is
    // logged (a reindex would bring it back, so it is worth knowing about).
    await this.store.delete(memoryKey(id)).catch((e: Error) => this.logger.error(`Memory ${id} deleted from the index but its file was not: ${e.message}`));
  }

  private async restore(key: string, previous: Buffer | null): Promise<void> {
    try {
      if (previous) await this.store.put(key, previous, MARKDOWN_TYPE);
      else await this.store.delete(key);
    } catch (e) {
      this.logger.error(`Could not restore ${key} after a failed index write: ${(e as Error).message}`);
    }
  }
}

function sameMemory(a: MemoryDoc, b: MemoryDoc): boolean {
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
