import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { ListCursor, MemoryDoc, VersionEntry } from '../backends/ports/memory.model';
import { ObjectStore } from '../backends/ports/object-store.port';
import { WriteIntentRepository } from '../backends/ports/write-intent.repository';
import { ALL_NAMESPACES } from '../namespaces/namespace';
import { MEMORY_KEY_PREFIX, NAMESPACE_KEY_DIR, objectKeyOf, parseMemoryKey } from './memory-id';
import { parseMarkdown } from './memory-markdown';
import { WriteSweeper } from './write-sweeper.service';

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
  /** Files at or below a memory's version in the old index that it does not hold (lost writes, pruned versions): left out. */
  superseded: string[];
  /** Memories whose delete was under way (a pending delete intent, the memory gone from the index): their files left out. */
  deleted: string[];
  /** Index rows before the rebuild (null when the old index could not be read). */
  previous: number | null;
  dryRun: boolean;
}

/**
 * Rebuilds the index from the object store alone (issue 3 point 5, issue 9 point 5). The store
 * is listed and every file read and parsed BEFORE the index is touched: a store that fails
 * while listing or reading leaves the old index as it was. Each memory's newest readable version
 * becomes its index entry; older version files become its history. What it trusts (decision
 * 0060): a file without a pending intent is an acknowledged version (a write's intent goes only
 * once the index holds it or its object is deleted); a file with a pending write intent only when
 * the old index holds that write; the files of a memory with a pending delete intent only when
 * the old index still has the memory. The rest is reported and left out.
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
    const { writes: pending, deletes } = await this.pendingIntents();
    const deleted = new Set<string>();
    if (!opts.includeUnacknowledged) for (const id of deletes) if (!(await this.stillIndexed(id))) deleted.add(id);

    // 1. List the whole store (a failure here throws: nothing has been changed).
    const unreadable: ReindexReport['unreadable'] = [];
    const unacknowledged: string[] = [];
    const byId = new Map<string, string[]>();
    let files = 0;
    // Every namespace's objects: 'default''s under memories/, the others' under ns/<namespace>/ (decision 0100).
    const listing = async function* (store: ObjectStore): AsyncGenerator<string> {
      yield* store.list(MEMORY_KEY_PREFIX);
      yield* store.list(`${NAMESPACE_KEY_DIR}/`);
    };
    for await (const key of listing(this.store)) {
      const parsed = parseMemoryKey(key);
      if (!parsed) {
        unreadable.push({ key, reason: 'not a memory file name ([ns/<namespace>/]memories/<24 hex>.v<n>-<12 hex>.md or memories/<24 hex>.md)' });
        continue;
      }
      files += 1;
      opts.onProgress?.(files, null, 'files listed');
      if (deleted.has(parsed.id)) continue;
      if (pending.has(key) && !opts.includeUnacknowledged && !(await this.referenced(parsed.id, key))) {
        unacknowledged.push(key);
        continue;
      }
      const keys = byId.get(parsed.id) ?? [];
      keys.push(key);
      byId.set(parsed.id, keys);
    }

    // Versions the old index has decided stay decided (decision 0060).
    const superseded = opts.includeUnacknowledged ? [] : await this.dropSuperseded(byId);

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
          const { version: kv, namespace } = parseMemoryKey(key)!;
          if (kv !== null && kv !== doc.version) throw new Error(`front matter version ${doc.version} does not match the file name`);
          // The namespace comes from where the object is, never from the file's text.
          versions.push({ key, doc: { ...doc, namespace, objectKey: kv === null ? null : key } });
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
    const report = { files, orphans, unreadable, unacknowledged, superseded, deleted: [...deleted], previous: before ? before.size : null };
    if (opts.dryRun) return { ...report, indexed: docs.length, dryRun: true };

    // 3. Swap: only now is the old index replaced.
    await this.index.clear();
    for (let i = 0; i < docs.length; i += BATCH) await this.index.insertMany(docs.slice(i, i + BATCH));
    // History rows for memories with earlier versions, or whose one file is the legacy layout (no objectKey).
    const current = new Map(docs.map((d) => [d.id, d]));
    for (const [id, entries] of history) if (entries.length > 1 || !current.get(id)?.objectKey) await this.index.addHistory(ALL_NAMESPACES, id, entries);
    return { ...report, indexed: await this.index.count(ALL_NAMESPACES), dryRun: false };
  }

  /**
   * Whether the old index points at the object (current version or history): then its write was
   * acknowledged and only the intent's removal had not happened yet. False when the index cannot say.
   */
  private referenced(id: string, key: string): Promise<boolean> {
    return this.index.holds(id, key).catch(() => false);
  }

  /**
   * Where the old index has a memory at version V, it has decided every version up to V: a file
   * at or below V that it holds neither as current nor as history is the object of a write that
   * lost the compare-and-swap (left behind by a store whose delete overtook its put, or by a
   * crash) or of a pruned version, never an acknowledged live version. Those files are taken out
   * of `byId` and returned. Files above V (an index that lags behind the store) are kept, and so
   * is everything when the old index cannot be read.
   */
  private async dropSuperseded(byId: Map<string, string[]>): Promise<string[]> {
    const out: string[] = [];
    const ids = [...byId.keys()];
    for (let i = 0; i < ids.length; i += BATCH) {
      const docs = await this.index.getMany(ALL_NAMESPACES, ids.slice(i, i + BATCH)).catch(() => null);
      if (!docs) return out;
      for (const doc of docs) {
        const keys = byId.get(doc.id) ?? [];
        const current = objectKeyOf(doc);
        const decided = keys.filter((k) => k !== current && (parseMemoryKey(k)?.version ?? 1) <= doc.version);
        if (decided.length === 0) continue;
        const page = await this.index.history(ALL_NAMESPACES, doc.id, 100_000, 0).catch(() => null);
        if (!page) continue;
        const held = new Set(page.rows.map((r) => r.objectKey));
        const drop = new Set(decided.filter((k) => !held.has(k)));
        if (drop.size === 0) continue;
        out.push(...drop);
        byId.set(
          doc.id,
          keys.filter((k) => !drop.has(k)),
        );
      }
    }
    return out.sort();
  }

  /** Whether the old index still has the memory (then its delete did not happen); false when it cannot say. */
  private async stillIndexed(id: string): Promise<boolean> {
    return (await this.index.get(ALL_NAMESPACES, id).catch(() => null)) !== null;
  }

  /** Object keys of pending writes and ids of pending deletes (none when the document database cannot say). */
  private async pendingIntents(): Promise<{ writes: Set<string>; deletes: Set<string> }> {
    try {
      const all = await this.intents.olderThan(new Date(Date.now() + 86_400_000), MAX_INTENTS);
      return {
        writes: new Set(all.filter((i) => i.kind !== 'delete').map((i) => i.objectKey)),
        deletes: new Set(all.filter((i) => i.kind === 'delete').map((i) => i.memoryId)),
      };
    } catch (e) {
      this.logger.warn(`Pending writes could not be read (${(e as Error).message}); unacknowledged files cannot be told apart`);
      return { writes: new Set(), deletes: new Set() };
    }
  }

  /** Every id in the index, walked newest first with the cursor. */
  private async indexedIds(): Promise<Set<string>> {
    const ids = new Set<string>();
    let after: ListCursor | undefined;
    for (;;) {
      const page = await this.index.list({ filter: { namespace: ALL_NAMESPACES }, limit: 1000, offset: 0, after });
      for (const r of page.rows) ids.add(r.id);
      if (page.rows.length < 1000) return ids;
      const last = page.rows[page.rows.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
  }
}
