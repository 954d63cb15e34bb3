import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { ListCursor, MemoryDoc } from '../backends/ports/memory.model';
import { ObjectStore } from '../backends/ports/object-store.port';
import { idFromKey, MEMORY_KEY_PREFIX } from './memory-id';
import { parseMarkdown } from './memory-markdown';

const BATCH = 500;

export interface ReindexReport {
  /** Memory files found in the object store. */
  files: number;
  /** Memories now in the index. */
  indexed: number;
  /** Ids that were in the index but have no file (dropped by the rebuild). */
  orphans: string[];
  /** Files that could not be read back into a memory, with the reason. */
  unreadable: Array<{ key: string; reason: string }>;
  /** Index rows before the rebuild (null when the old index could not be read). */
  previous: number | null;
}

/**
 * Rebuilds the index from the object store alone (issue 3, point 5): every `memories/<id>.md`
 * file's front matter and body become an index entry again. Used by `npm run reindex` and tests.
 */
@Injectable()
export class ReindexService {
  private readonly logger = new Logger('Reindex');

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
  ) {}

  async reindex(): Promise<ReindexReport> {
    const before = await this.indexedIds().catch((e: Error) => {
      this.logger.warn(`The old index could not be read (${e.message}); orphans cannot be reported`);
      return null;
    });

    // Files are read and inserted in batches, oldest first within a batch (so the embedded index's
    // row order follows time), without holding the whole store in memory.
    await this.index.clear();
    const restored = new Set<string>();
    const unreadable: ReindexReport['unreadable'] = [];
    let files = 0;
    let batch: MemoryDoc[] = [];
    const flush = async () => {
      batch.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1));
      await this.index.insertMany(batch);
      for (const d of batch) restored.add(d.id);
      batch = [];
    };
    for await (const key of this.store.list(MEMORY_KEY_PREFIX)) {
      const id = idFromKey(key);
      if (!id) {
        unreadable.push({ key, reason: 'not a memory file name (memories/<24 hex>.md)' });
        continue;
      }
      files += 1;
      try {
        const doc = parseMarkdown((await this.store.get(key)).toString('utf8'));
        if (doc.id !== id) throw new Error(`front matter id ${doc.id} does not match the file name`);
        batch.push(doc);
      } catch (e) {
        unreadable.push({ key, reason: (e as Error).message });
      }
      if (batch.length >= BATCH) await flush();
    }
    await flush();

    const orphans = before ? [...before].filter((id) => !restored.has(id)) : [];
    return { files, indexed: await this.index.count(), orphans, unreadable, previous: before ? before.size : null };
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
