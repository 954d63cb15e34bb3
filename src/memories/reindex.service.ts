import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { ListCursor, MemoryDoc, VersionEntry } from '../backends/ports/memory.model';
import { ObjectStore } from '../backends/ports/object-store.port';
import { WriteIntentRepository } from '../backends/ports/write-intent.repository';
import { MEMORY_KEY_PREFIX, parseMemoryKey } from './memory-id';
import { parseMarkdown } from './memory-markdown';
import { indexReferences, WriteSweeper } from './write-sweeper.service';

const BATCH = 500;
/** Intents read at most (a store with more pending writes than this has bigger problems). */
const MAX_INTENTS = 1_000_000;

export interface ReindexOptions {
  /** Read and report only; the index is not touched. */
  dryRun?: boolean;
  /** Also index objects of writes that were never acknowledged (default: left out). */
  includeUnacknowledged?: boolean;
  /** Called as files are listed (total null) and then read (total known), for a progress bar. */
  onProgress?: (done: number, total: number | null, what: string) => void;
}

export interface ReindexReport {
  /** Memory files found in the object store (every version, both layouts). */
  files: number;
  /** Memories in the index after the rebuild (with dryRun: that it would hold). */
  indexed: number;
  /** Ids that were in the index but have no file (dropped by the rebuild). */
  orphans: string[];
  /** Files that could not be read back into a memory, with the reason. */
  unreadable: Array<{ key: string; reason: string }>;
  /** Files of writes that were never acknowledged (a pending write intent); left out unless asked. */
  unacknowledged: string[];
  /** Index rows before the rebuild (null when the old index could not be read). */
  previous: number | null;
  dryRun: boolean;
}

/**
 * Rebuilds the index from the object store alone (issue 3 point 5, issue 9 point 5). The store
 * is listed and every file read and parsed BEFORE the index is touched: a store that fails
 * while listing or reading leaves the old index as it was. Each memory's newest readable version
 * becomes its index entry; older version files become its history. Objects of writes that were
 * never acknowledged (write intents still pending) are reported and left out by default.
 */
@Injectable()
export class ReindexService {
  private readonly logger = new Logger('Reindex');

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
    private readonly intents: WriteIntentRepository,
    private readonly sweeper?: WriteSweeper,
  ) {}

  /** Never at the same time as the sweep of unacknowledged writes (see WriteSweeper.exclusive). */
  reindex(opts: ReindexOptions = {}): Promise<ReindexReport> {
    return this.sweeper ? this.sweeper.exclusive(() => this.rebuild(opts)) : this.rebuild(opts);
  }

  private async rebuild(opts: ReindexOptions): Promise<ReindexReport> {
    const before = await this.indexedIds().catch((e: Error) => {
      this.logger.warn(`The old index could not be read (${e.message}); orphans cannot be reported`);
      return null;
    });
    const pending = await this.pendingKeys();

    // 1. List the whole store (a failure here throws: nothing has been changed).
    const unreadable: ReindexReport['unreadable'] = [];
    const unacknowledged: string[] = [];
    const byId = new Map<string, string[]>();
    let files = 0;
    for await (const key of this.store.list(MEMORY_KEY_PREFIX)) {
      const parsed = parseMemoryKey(key);
      if (!parsed) {
        unreadable.push({ key, reason: 'not a memory file name (memories/<24 hex>.md or memories/<24 hex>.v<n>-<12 hex>.md)' });
        continue;
      }
      files += 1;
      opts.onProgress?.(files, null, 'files listed');
      if (pending.has(key) && !opts.includeUnacknowledged && !(await this.referenced(parsed.id, key))) {
        unacknowledged.push(key);
        continue;
      }
      const keys = byId.get(parsed.id) ?? [];
      keys.push(key);
      byId.set(parsed.id, keys);
    }

    // 2. Read every file (a failure of the store throws: nothing has been changed).
    const docs: MemoryDoc[] = [];
    const history = new Map<string, VersionEntry[]>();
    let read = 0;
    for (const [id, keys] of byId) {
      opts.onProgress?.(read++, byId.size, 'memories read');
      const versions: Array<{ key: string; doc: MemoryDoc }> = [];
      for (const key of keys) {
        try {
          const doc = parseMarkdown((await this.store.get(key)).toString('utf8'));
          if (doc.id !== id) throw new Error(`front matter id ${doc.id} does not match the file name`);
          const kv = parseMemoryKey(key)!.version;
          if (kv !== null && kv !== doc.version) throw new Error(`front matter version ${doc.version} does not match the file name`);
          versions.push({ key, doc: { ...doc, objectKey: kv === null ? null : key } });
        } catch (e) {
          if ((e as { status?: number }).status === 503) throw e;
          unreadable.push({ key, reason: (e as Error).message });
        }
      }
      if (versions.length === 0) continue;
      versions.sort((a, b) => b.doc.version - a.doc.version || a.key.localeCompare(b.key));
      const current = versions[0].doc;
      docs.push(current);
      const entries = versions
        .filter((v) => v.doc.version !== current.version || v.key === versions[0].key)
        .map((v) => ({
          version: v.doc.version,
          objectKey: v.key,
          title: v.doc.title,
          size: Buffer.byteLength(v.doc.content, 'utf8'),
          updatedAt: v.doc.updatedAt,
          author: v.doc.author ?? null,
        }));
      history.set(id, entries);
    }
    docs.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));

    const restored = new Set(docs.map((d) => d.id));
    const orphans = before ? [...before].filter((id) => !restored.has(id)) : [];
    const report = { files, orphans, unreadable, unacknowledged, previous: before ? before.size : null };
    if (opts.dryRun) return { ...report, indexed: docs.length, dryRun: true };

    // 3. Swap: only now is the old index replaced.
    await this.index.clear();
    for (let i = 0; i < docs.length; i += BATCH) await this.index.insertMany(docs.slice(i, i + BATCH));
    // History rows for memories with earlier versions, or whose one file is the legacy layout (no objectKey).
    const current = new Map(docs.map((d) => [d.id, d]));
    for (const [id, entries] of history) if (entries.length > 1 || !current.get(id)?.objectKey) await this.index.addHistory(id, entries);
    return { ...report, indexed: await this.index.count(), dryRun: false };
  }

  /**
   * Whether the old index points at the object (current version or history): then its write was
   * acknowledged and only the intent's removal had not happened yet. False when the index cannot say.
   */
  private referenced(id: string, key: string): Promise<boolean> {
    return indexReferences(this.index, id, key).catch(() => false);
  }

  /** Object keys of pending writes (none when the document database cannot say). */
  private async pendingKeys(): Promise<Set<string>> {
    try {
      const all = await this.intents.olderThan(new Date(Date.now() + 86_400_000), MAX_INTENTS);
      return new Set(all.map((i) => i.objectKey));
    } catch (e) {
      this.logger.warn(`Pending writes could not be read (${(e as Error).message}); unacknowledged files cannot be told apart`);
      return new Set();
    }
  }

  /** Every id in the index, walked newest first with the cursor. */
  private async indexedIds(): Promise<Set<string>> {
    const ids = new Set<string>();
    let after: ListCursor | undefined;
    for (;;) {
      const page = await this.index.list({ filter: {}, limit: 1000, offset: 0, after });
      for (const r of page.rows) ids.add(r.id);
      if (page.rows.length < 1000) return ids;
      const last = page.rows[page.rows.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
  }
}
