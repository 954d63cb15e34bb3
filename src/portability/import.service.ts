import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as yauzl from 'yauzl';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { Author, MemoryDoc } from '../backends/ports/memory.model';
import { AppError, ConflictError, PayloadTooLargeError, RequestValidationError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { QuotaExceededError } from '../namespaces/namespace-quotas';
import { MemoriesService, sameMemory } from '../memories/memories.service';
import { InputChecker } from '../memories/memory-input';
import { MarkdownParseError, parseMarkdown } from '../memories/memory-markdown';
import { CHECKSUMS_FILE, HISTORY_DIR, MANIFEST_FILE, MEMORIES_DIR, sha256 } from './archive-format';
import { Candidate, derivedId, ImportInvalid, memoryFromJson, memoryFromMarkdown } from './import-parser';
import { checkZipEntry, countLines, ImportAbortedError, ImportSlots, ItemBudget, makeUploadDir, Pacer, removeStaleUploads, removeUploadDir, tempDirError } from './import-bounds';

export const ON_CONFLICT = ['skip', 'overwrite', 'new_id'] as const;
export type OnConflict = (typeof ON_CONFLICT)[number];
export const IMPORT_FORMATS = ['auto', 'zip', 'jsonl', 'markdown'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];
export type ImportStatus = 'created' | 'updated' | 'skipped' | 'invalid';

export interface ImportItem {
  /** File in the archive (or `<upload>:<line>` for JSONL). */
  file: string;
  status: ImportStatus;
  id: string | null;
  reason: string | null;
}

export interface ImportReport {
  ok: true;
  dry_run: boolean;
  on_conflict: OnConflict;
  format: Exclude<ImportFormat, 'auto'>;
  /** Files or lines looked at. */
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  invalid: number;
  /** Earlier versions restored into memories' history (`history/<id>/<n>.md` of an export; not counted in created). */
  versions: number;
  /** One entry per file, in order (at most ITEMS_IN_REPORT; the NDJSON progress stream has every one). */
  items: ImportItem[];
  items_omitted: number;
}

export interface ImportOptions {
  onConflict: OnConflict;
  dryRun: boolean;
  format: ImportFormat;
  /** Name of the upload (used for file-name titles of a single markdown file and in reasons). */
  filename: string;
  onItem?(item: ImportItem, processed: number): void | Promise<void>;
  /** Files written at once (default IMPORT_CONCURRENCY; 1 = one after the other). */
  concurrency?: number;
  /** Stops the import between two items (the client left, or MEMSTORE_IMPORT_MAX_SECONDS): importFile rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Who imports (the token or admin): the author of every version written; the file's claim is kept beside it (issue 46). */
  importer?: Author | null;
  /** The namespace every memory and version goes into (the request's; issue 43). Ids are looked up there only. */
  namespace: string;
}

const ITEMS_IN_REPORT = 1000;
/** Files written at once by an import (see importFile). */
export const IMPORT_CONCURRENCY = 8;

interface LastMemory {
  id: string;
  item: Promise<ImportItem | null>;
}
/** Front matter and slack allowed beyond the content limit in one markdown file. */
const FILE_SLACK = 64 * 1024;

interface Entry {
  file: string;
  text?: string;
  json?: { value: unknown; line: number };
  mtime: Date | null;
  invalid?: string;
  skip?: string;
  /** An earlier version from an export's `history/<id>/<version>.md`. */
  history?: { id: string; version: number };
}

const HISTORY_FILE = /^history\/([0-9a-f]{24})\/([1-9][0-9]{0,9})\.md$/;

/**
 * Imports memories (issue 12, point 2) from an export zip, a zip of plain markdown notes, a
 * single markdown file or JSONL. Files are read one at a time and written a few at once (bounded,
 * so memory stays flat); each memory is written through MemoriesService.putExact (object + index,
 * rolled back together), so a bad file is reported and skipped, never half-written, and never
 * stops the rest.
 */
@Injectable()
export class ImportService implements OnModuleInit {
  private readonly logger = new Logger('Import');
  /** Imports running now, per token and in all (MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN, MEMSTORE_IMPORT_CONCURRENT). */
  readonly slots: ImportSlots;

  constructor(
    private readonly index: MemoryIndex,
    private readonly memories: MemoriesService,
    private readonly cfg: AppConfig,
  ) {
    this.slots = new ImportSlots(cfg.importLimits);
  }

  /** Uploads a crashed run left in the temp directory are removed at start. */
  async onModuleInit(): Promise<void> {
    const removed = await removeStaleUploads(this.cfg.importLimits.tmpDir);
    if (removed > 0) this.logger.log(`Removed ${removed} upload(s) an earlier run left in MEMSTORE_IMPORT_TMP_DIR`);
  }

  /**
   * Streams an upload into a temp file, refusing more than MEMSTORE_IMPORT_MAX_BYTES. The caller
   * removes it. A temp directory that cannot take it is a 503 (ImportTempDirError); an upload the
   * client cut off is an ImportAbortedError (the partial file is removed).
   */
  async receive(body: Readable): Promise<string> {
    let dir: string;
    try {
      dir = await makeUploadDir(this.cfg.importLimits.tmpDir);
    } catch (e) {
      throw tempDirError(e) ?? e;
    }
    const file = path.join(dir, 'upload');
    let seen = 0;
    const limit = this.cfg.importMaxBytes;
    const guard = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        seen += chunk.length;
        cb(seen > limit ? new PayloadTooLargeError(`The upload is larger than the import limit of ${limit} bytes (MEMSTORE_IMPORT_MAX_BYTES)`) : null, chunk);
      },
    });
    let writeError = null as Error | null;
    const out = fs.createWriteStream(file, { mode: 0o600 });
    out.on('error', (e) => (writeError = e));
    try {
      await pipeline(body, guard, out);
      return file;
    } catch (e) {
      await discard(file);
      if (e instanceof PayloadTooLargeError) throw e;
      if (writeError) throw tempDirError(writeError) ?? writeError;
      if ((body as { aborted?: boolean }).aborted || (e as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' || (e as NodeJS.ErrnoException).code === 'ECONNRESET') {
        throw new ImportAbortedError('upload');
      }
      throw new AppError(400, `The upload could not be read: ${(e as Error).message}`);
    }
  }

  /**
   * Refuses, before anything is written, an upload over the bounds of decision 0070: more items
   * (files, JSONL lines) than MEMSTORE_IMPORT_MAX_ITEMS, a zip that unpacks to more than
   * MEMSTORE_IMPORT_MAX_UNPACKED_BYTES or with an entry packed more than MEMSTORE_IMPORT_MAX_RATIO
   * times. The zip's sizes come from its central directory (yauzl's validateEntrySizes stops an
   * entry that unpacks to more than it declares); JSONL lines are counted.
   */
  private async survey(file: string, format: Exclude<ImportFormat, 'auto'>, pacer: Pacer): Promise<void> {
    const limits = this.cfg.importLimits;
    const budget = new ItemBudget(limits.maxItems);
    if (format === 'markdown') return;
    if (format === 'jsonl') return countLines(fs.createReadStream(file), budget, pacer);
    const zip = await openZip(file);
    try {
      let total = 0;
      const jsonl: yauzl.Entry[] = [];
      for await (const entry of walk(zip)) {
        budget.add();
        // Only what the import unpacks counts (markdown, JSONL, the checksum list); other files are skipped unread.
        if (/\.(md|markdown|jsonl|ndjson)$/i.test(entry.fileName) || entry.fileName === CHECKSUMS_FILE) {
          total += entry.uncompressedSize;
          checkZipEntry(limits, entry.fileName, entry.compressedSize, entry.uncompressedSize, total, this.cfg.limits.contentMaxBytes + FILE_SLACK);
        }
        if (/\.jsonl$|\.ndjson$/i.test(entry.fileName)) jsonl.push(entry);
        await pacer.step();
      }
      for (const entry of jsonl) {
        budget.add(-1); // the entry's lines are its items
        await countLines((await openEntry(zip, entry)) as AsyncIterable<Buffer>, budget, pacer);
      }
    } finally {
      zip.close();
    }
  }

  async importFile(file: string, opts: ImportOptions): Promise<ImportReport> {
    const format = opts.format === 'auto' ? await sniff(file, opts.filename) : opts.format;
    const pacer = new Pacer(opts.signal);
    await this.survey(file, format, pacer);
    const report: ImportReport = {
      ok: true,
      dry_run: opts.dryRun,
      on_conflict: opts.onConflict,
      format,
      processed: 0,
      created: 0,
      updated: 0,
      skipped: 0,
      invalid: 0,
      versions: 0,
      items: [],
      items_omitted: 0,
    };
    const now = new Date();
    const entries =
      format === 'zip' ? this.zipEntries(file, pacer) : format === 'jsonl' ? this.jsonlEntries(fs.createReadStream(file), opts.filename, pacer) : this.singleMarkdown(file, opts.filename);
    // Up to `concurrency` files are written at once (object puts and index writes overlap);
    // the report and the progress stream still list them in archive order. Two files of the same
    // memory id never run at the same time (a per-id lock), so a duplicate in one archive is
    // seen as imported, never raced; an earlier version waits for its memory.
    const width = Math.max(1, opts.concurrency ?? IMPORT_CONCURRENCY);
    const locks = new Map<string, Promise<void>>();
    const inFlight: Array<{ e: Entry; item: Promise<ImportItem> }> = [];
    // The memory last dispatched: an export writes a memory's history right after it.
    let last: LastMemory = { id: '', item: Promise.resolve(null) };
    const emit = async ({ e, item: pending }: { e: Entry; item: Promise<ImportItem> }) => {
      const item = await pending;
      report.processed++;
      if (e.history && item.status === 'created') report.versions++;
      else report[item.status]++;
      if (report.items.length < ITEMS_IN_REPORT) report.items.push(item);
      else report.items_omitted++;
      await opts.onItem?.(item, report.processed);
    };
    try {
      for await (const e of entries) {
        await pacer.step(); // the event loop turns every few hundred items; stops here when the signal is aborted
        let item: Promise<ImportItem>;
        if (e.history && !e.invalid) {
          const h = e.history;
          const memory = last;
          item = this.locked(locks, h.id, () => this.oneVersion(e, h, opts, memory));
        } else {
          const parsed = this.parse(e, now);
          item = 'status' in parsed ? Promise.resolve(parsed) : this.locked(locks, parsed.doc.id, () => this.apply(e, parsed, opts));
          if (!('status' in parsed) && e.file.startsWith(MEMORIES_DIR)) last = { id: parsed.doc.id, item };
        }
        item.catch(() => undefined);
        inFlight.push({ e, item });
        if (inFlight.length >= width) await emit(inFlight.shift()!);
      }
      while (inFlight.length > 0) await emit(inFlight.shift()!);
    } catch (err) {
      // A backend failure: let the writes already started finish (each is whole or rolled back).
      await Promise.allSettled(inFlight.map((f) => f.item));
      // A namespace quota stops the import at the first memory over it (decision 0156): what came before stays, counted in the answer.
      if (err instanceof QuotaExceededError) {
        for (const f of inFlight)
          if (
            await f.item.then(
              () => true,
              () => false,
            )
          )
            await emit(f); // written before the stop: counted
        err.extra.report = { processed: report.processed, created: report.created, updated: report.updated, skipped: report.skipped, invalid: report.invalid };
      }
      throw err;
    }
    return report;
  }

  /** Runs fn after every earlier task of the same id has settled. */
  private locked<T>(locks: Map<string, Promise<void>>, id: string, fn: () => Promise<T>): Promise<T> {
    const prev = locks.get(id);
    const run = prev ? prev.then(fn) : fn();
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    locks.set(id, settled);
    void settled.then(() => {
      if (locks.get(id) === settled) locks.delete(id);
    });
    return run;
  }

  /** The memory a file holds, or its report item when it is skipped or invalid as it stands. */
  private parse(e: Entry, now: Date): Candidate | ImportItem {
    const item = (status: ImportStatus, reason: string): ImportItem => ({ file: e.file, status, id: null, reason });
    if (e.skip) return item('skipped', e.skip);
    if (e.invalid) return item('invalid', e.invalid);
    try {
      const c = e.json ? memoryFromJson(e.json.value, now, e.file) : memoryFromMarkdown(e.file, e.text ?? '', e.mtime, now);
      const problem = this.check(c.doc);
      if (problem) throw new ImportInvalid(problem);
      return c;
    } catch (err) {
      if (err instanceof ImportInvalid) return item('invalid', err.message);
      throw err;
    }
  }

  /** Writes one parsed memory (or reports why not). */
  private async apply(e: Entry, c: Candidate, opts: ImportOptions): Promise<ImportItem> {
    const item = (status: ImportStatus, id: string | null, reason: string | null): ImportItem => ({ file: e.file, status, id, reason });
    let doc: MemoryDoc = { ...c.doc, namespace: opts.namespace };
    let existing = await this.index.get(opts.namespace, doc.id);
    if (existing && same(existing, doc, c.exact)) return item('skipped', doc.id, 'unchanged: already imported');
    let replace = false;
    if (existing) {
      if (opts.onConflict === 'skip') return item('skipped', doc.id, 'a different memory with this id exists (on_conflict=skip)');
      if (opts.onConflict === 'overwrite') replace = true;
      else {
        // new_id: a deterministic new id, so importing the same archive again finds the copy.
        doc = { ...doc, id: derivedId(doc.createdAt, `new_id\n${doc.id}\n${doc.updatedAt.toISOString()}\n${doc.content}`) };
        existing = await this.index.get(opts.namespace, doc.id);
        if (existing && same(existing, doc, c.exact)) return item('skipped', doc.id, `unchanged: already imported as a copy of ${c.doc.id}`);
        replace = existing !== null;
      }
    }
    if (!c.exact && existing) doc = { ...doc, createdAt: existing.createdAt, updatedAt: new Date(Math.max(Date.now(), existing.updatedAt.getTime() + 1)) };
    if (!opts.dryRun) {
      try {
        await this.memories.putExact(doc, replace, opts.importer ?? null);
      } catch (err) {
        if (err instanceof ConflictError && !replace && !(await this.index.get(opts.namespace, doc.id))) {
          // The id is taken outside this namespace (ids are unique store-wide): a copy under a
          // deterministic new id, as for new_id, and nothing said about the other memory.
          doc = { ...doc, id: derivedId(doc.createdAt, `namespace\n${opts.namespace}\n${doc.id}\n${doc.content}`) };
          if (await this.index.get(opts.namespace, doc.id)) return item('skipped', doc.id, `unchanged: already imported as a copy of ${c.doc.id}`);
          try {
            await this.memories.putExact(doc, false, opts.importer ?? null);
          } catch (again) {
            if (again instanceof ConflictError) return item('skipped', doc.id, 'created by someone else during the import');
            throw again;
          }
          return item('created', doc.id, `new id (the archive's ${c.doc.id} is taken)`);
        }
        if (err instanceof ConflictError) return item('skipped', doc.id, 'created by someone else during the import');
        if (err instanceof RequestValidationError) return item('invalid', doc.id, err.message);
        throw err;
      }
    }
    const copied = doc.id !== c.doc.id ? `new id (the archive's ${c.doc.id} exists)` : null;
    return item(replace ? 'updated' : 'created', doc.id, copied);
  }

  /**
   * An earlier version (`history/<id>/<n>.md`): restored into the history of memory <id> when that
   * memory exists and does not keep version n yet; idempotent like the memories themselves.
   */
  private async oneVersion(e: Entry, h: { id: string; version: number }, opts: ImportOptions, memory: LastMemory): Promise<ImportItem> {
    const item = (status: ImportStatus, reason: string | null): ImportItem => ({ file: e.file, status, id: h.id, reason });
    let past: MemoryDoc;
    try {
      past = { ...parseMarkdown(e.text ?? ''), namespace: opts.namespace };
    } catch (err) {
      if (err instanceof MarkdownParseError) return item('invalid', `version ${h.version}: ${err.message}`);
      throw err;
    }
    if (past.id !== h.id || past.version !== h.version) return item('invalid', `the file is version ${past.version} of ${past.id}, not what its path says`);
    const problem = this.check({ ...past, updatedAt: past.updatedAt, createdAt: past.updatedAt });
    if (problem) return item('invalid', problem);
    // Restored only when this import created its memory or found it unchanged (an updated memory
    // keeps the store's own history; a new_id copy starts its own).
    const m = memory.id === h.id ? await memory.item.catch(() => null) : null;
    const asArchived = m !== null && m.id === h.id && ((m.status === 'created' && m.reason === null) || (m.status === 'skipped' && m.reason?.startsWith('unchanged:') === true));
    if (!asArchived) return item('skipped', `its memory (memories/${h.id}.md) was not imported as it is in this archive`);
    if (opts.dryRun) {
      const current = await this.index.get(opts.namespace, h.id);
      if (!current) return item('created', `earlier version ${h.version}`);
      if (h.version >= current.version) return item('skipped', `version ${h.version} is not earlier than the current version ${current.version}`);
      const kept = await this.index.history(opts.namespace, h.id, 1000, 0);
      return kept.rows.some((r) => r.version === h.version) ? item('skipped', `unchanged: version ${h.version} is already kept`) : item('created', `earlier version ${h.version}`);
    }
    const res = await this.memories.putPastVersion(past, opts.importer ?? null);
    if (res === 'added') return item('created', `earlier version ${h.version}`);
    if (res === 'kept') return item('skipped', `unchanged: version ${h.version} is already kept`);
    if (res === 'current') return item('skipped', `version ${h.version} is not earlier than the memory's current version`);
    return item('skipped', 'its memory is not in the store');
  }

  /** The create limits (content size, title, tags), as a reason; null when fine. */
  private check(doc: Omit<MemoryDoc, 'namespace'>): string | null {
    const check = new InputChecker(this.cfg.limits);
    check.content(doc.content);
    if (doc.title !== null) check.text('title', doc.title);
    if (doc.agent !== null) check.text('agent', doc.agent);
    if (doc.project !== null) check.text('project', doc.project);
    check.tags(doc.tags);
    if (doc.updatedAt.getTime() < doc.createdAt.getTime()) return 'updated_at is before created_at';
    if (check.issues.length === 0) return null;
    return check.issues.map((i) => `${i.loc.slice(1).join('.')}: ${i.msg}`).join('; ');
  }

  private async *singleMarkdown(file: string, filename: string): AsyncIterable<Entry> {
    const stat = await fs.promises.stat(file);
    if (stat.size > this.cfg.limits.contentMaxBytes + FILE_SLACK) {
      yield { file: filename, mtime: null, invalid: 'the file is larger than the content limit' };
      return;
    }
    const text = await readUtf8(await fs.promises.readFile(file));
    yield text === null ? { file: filename, mtime: null, invalid: 'not UTF-8 text' } : { file: filename, text, mtime: null };
  }

  /** JSONL: one memory per line; blank lines ignored; an overlong line is reported, not read into memory. */
  private async *jsonlEntries(stream: Readable, name: string, pacer: Pacer): AsyncIterable<Entry> {
    const max = this.cfg.limits.contentMaxBytes * 6 + FILE_SLACK; // JSON escapes can grow text up to 6×
    for await (const l of lines(stream, max, pacer)) {
      const file = `${name}:${l.line}`;
      if (l.tooLong) {
        yield { file, mtime: null, invalid: `the line is longer than ${max} bytes` };
        continue;
      }
      if (l.text.trim() === '') continue;
      try {
        yield { file, json: { value: JSON.parse(l.text), line: l.line }, mtime: null };
      } catch (e) {
        yield { file, mtime: null, invalid: `not valid JSON: ${(e as Error).message}` };
      }
    }
  }

  private async *zipEntries(file: string, pacer: Pacer): AsyncIterable<Entry> {
    // First pass: find the checksum list, if the archive has one (an export of ours). It is read
    // alongside the entries (an export lists them in the same order), so it is never held whole.
    const sumsZip = await openZip(file);
    let sums: ChecksumList | null = null;
    try {
      for await (const entry of walk(sumsZip)) {
        if (entry.fileName === CHECKSUMS_FILE && entry.uncompressedSize <= 64 * 1024 * 1024) sums = new ChecksumList(() => openEntry(sumsZip, entry));
      }
    } catch (e) {
      sumsZip.close();
      throw e;
    }
    const zip = await openZip(file).catch((e: unknown) => {
      sumsZip.close();
      throw e;
    });
    const max = this.cfg.limits.contentMaxBytes + FILE_SLACK;
    try {
      for await (const entry of walk(zip)) {
        const name = entry.fileName;
        if (name.endsWith('/') || name === CHECKSUMS_FILE || name === MANIFEST_FILE) continue;
        const base = name.split('/').pop()!;
        if (name.split('/').some((s) => s.startsWith('.') || s === '__MACOSX')) continue; // .obsidian/, .git/, macOS resource forks
        const mtime = entry.getLastModDate();
        let history: Entry['history'];
        if (name.startsWith(HISTORY_DIR)) {
          const m = HISTORY_FILE.exec(name);
          if (!m) {
            yield { file: name, mtime, skip: `not a memory version (${HISTORY_DIR}<id>/<version>.md)` };
            continue;
          }
          history = { id: m[1], version: Number(m[2]) };
        }
        if (/\.jsonl$|\.ndjson$/i.test(base)) {
          const stream = await openEntry(zip, entry);
          yield* this.jsonlEntries(stream, name, pacer);
          continue;
        }
        if (!/\.(md|markdown)$/i.test(base)) {
          yield { file: name, mtime, skip: 'not a markdown or JSONL file' };
          continue;
        }
        if (entry.uncompressedSize > max) {
          yield { file: name, mtime, invalid: `the file is larger than the content limit (${entry.uncompressedSize} bytes)` };
          continue;
        }
        let bytes: Buffer;
        try {
          bytes = await readEntry(zip, entry);
        } catch (e) {
          yield { file: name, mtime, invalid: `cannot be read from the archive: ${(e as Error).message}` };
          continue;
        }
        const expected = await sums?.digest(name);
        if (expected && expected !== sha256(bytes)) {
          yield { file: name, mtime, invalid: `checksum does not match ${CHECKSUMS_FILE}` };
          continue;
        }
        const text = await readUtf8(bytes);
        yield text === null ? { file: name, mtime, invalid: 'not UTF-8 text' } : { file: name, text, mtime, history };
      }
    } finally {
      zip.close();
      await sums?.close();
      sumsZip.close();
    }
  }
}

/**
 * The digests of an archive's SHA256SUMS, read line by line as the entries come: an export writes
 * both in the same order, so each lookup is the next line and memory stays flat. An archive in
 * another order (or a name the list lacks) makes it read the whole list into a map once.
 */
class ChecksumList {
  private stream: Readable | null = null;
  private lines: AsyncIterator<{ line: number; text: string; tooLong: boolean }> | null = null;
  private ahead: { name: string; digest: string } | null = null;
  private ended = false;
  private all: Map<string, string> | null = null;

  constructor(private readonly open: () => Promise<Readable>) {}

  async digest(name: string): Promise<string | undefined> {
    if (this.all) return this.all.get(name);
    const next = await this.peek();
    if (next && next.name === name) {
      this.ahead = null;
      return next.digest;
    }
    this.all = new Map();
    for await (const l of lines(await this.open(), 4096)) {
      const m = CHECKSUM_LINE.exec(l.text);
      if (m) this.all.set(m[2], m[1]);
    }
    await this.close();
    return this.all.get(name);
  }

  async close(): Promise<void> {
    this.stream?.destroy();
    this.stream = null;
    this.lines = null;
  }

  private async peek(): Promise<{ name: string; digest: string } | null> {
    if (this.ahead || this.ended) return this.ahead;
    if (!this.lines) {
      this.stream = await this.open();
      this.lines = lines(this.stream, 4096)[Symbol.asyncIterator]();
    }
    for (;;) {
      const r = await this.lines.next();
      if (r.done) {
        this.ended = true;
        return null;
      }
      const m = CHECKSUM_LINE.exec(r.value.text);
      if (m) return (this.ahead = { name: m[2], digest: m[1] });
    }
  }
}

const CHECKSUM_LINE = /^([0-9a-f]{64}) [ *](.+)$/;

/** Removes an upload and its temp directory. */
export async function discard(file: string | undefined): Promise<void> {
  if (file !== undefined) await removeUploadDir(path.dirname(file));
}

function same(a: MemoryDoc, b: Omit<MemoryDoc, 'namespace'>, compareTimes: boolean): boolean {
  return sameMemory(a, b) && (!compareTimes || (a.createdAt.getTime() === b.createdAt.getTime() && a.updatedAt.getTime() === b.updatedAt.getTime()));
}

async function readUtf8(bytes: Buffer): Promise<string | null> {
  try {
    let text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    return text;
  } catch {
    return null;
  }
}

async function sniff(file: string, filename: string): Promise<Exclude<ImportFormat, 'auto'>> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const buf = Buffer.alloc(512);
    const { bytesRead } = await fh.read(buf, 0, 512, 0);
    const head = buf.subarray(0, bytesRead);
    if (head.subarray(0, 4).equals(Buffer.from('PK\x03\x04', 'latin1')) || head.subarray(0, 4).equals(Buffer.from('PK\x05\x06', 'latin1'))) return 'zip';
    if (/\.(jsonl|ndjson)$/i.test(filename)) return 'jsonl';
    if (/\.(md|markdown)$/i.test(filename)) return 'markdown';
    return /^\s*\{/.test(head.toString('utf8')) ? 'jsonl' : 'markdown';
  } finally {
    await fh.close();
  }
}

async function* lines(stream: Readable, max: number, pacer?: Pacer): AsyncIterable<{ line: number; text: string; tooLong: boolean }> {
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let n = 0;
  const emit = () => {
    n++;
    const out = { line: n, text: tooLong ? '' : Buffer.concat(parts).toString('utf8'), tooLong };
    parts = [];
    size = 0;
    tooLong = false;
    return out;
  };
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(10, start);
      const piece = chunk.subarray(start, nl === -1 ? chunk.length : nl);
      if (!tooLong) {
        size += piece.length;
        if (size > max) {
          tooLong = true;
          parts = [];
        } else parts.push(piece);
      }
      if (nl === -1) break;
      await pacer?.step(); // blank lines yield nothing, but are work too
      yield emit();
      start = nl + 1;
    }
  }
  if (size > 0 || tooLong) yield emit();
}

function openZip(file: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) =>
    yauzl.open(file, { lazyEntries: true, autoClose: false, strictFileNames: false, validateEntrySizes: true }, (err, zip) => {
      if (err || !zip) reject(RequestValidationError.one(['body'], `The upload is not a readable zip archive: ${err?.message ?? 'unknown error'}`, 'value_error', null));
      else resolve(zip);
    }),
  );
}

async function* walk(zip: yauzl.ZipFile): AsyncIterable<yauzl.Entry> {
  for (;;) {
    const entry = await new Promise<yauzl.Entry | null>((resolve, reject) => {
      const onEntry = (e: yauzl.Entry) => done(null, e);
      const onEnd = () => done(null, null);
      const onError = (e: Error) => done(e, null);
      const done = (err: Error | null, e: yauzl.Entry | null) => {
        zip.off('entry', onEntry);
        zip.off('end', onEnd);
        zip.off('error', onError);
        if (err) reject(new AppError(400, `The zip archive is damaged: ${err.message}`));
        else resolve(e);
      };
      zip.on('entry', onEntry);
      zip.on('end', onEnd);
      zip.on('error', onError);
      zip.readEntry();
    });
    if (!entry) return;
    yield entry;
  }
}

function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Readable> {
  return new Promise((resolve, reject) => zip.openReadStream(entry, (err, s) => (err || !s ? reject(err ?? new Error('no stream')) : resolve(s))));
}

async function readEntry(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of await openEntry(zip, entry)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}
