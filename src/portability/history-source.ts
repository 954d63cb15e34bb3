import { Injectable, Logger } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { ObjectStore } from '../backends/ports/object-store.port';
import { NotFoundError } from '../common/errors';
import { MemoryHistorySource } from './export.service';

/** Most versions a memory keeps (memory_history_keep is far below this). */
const MAX_VERSIONS = 1000;

/**
 * The store's version history (issue 9) as the export's history: every kept version below the
 * current one, oldest first, as its stored object byte for byte (the current version is the
 * archive's `memories/<id>.md`). A version whose object is gone is left out and logged.
 */
@Injectable()
export class StoredHistorySource extends MemoryHistorySource {
  private readonly logger = new Logger('Export');

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
  ) {
    super();
  }

  async *versions(ns: string, id: string, current: number): AsyncIterable<{ version: number; markdown: Buffer; at: Date }> {
    const { rows } = await this.index.history(ns, id, MAX_VERSIONS, 0);
    for (const e of rows.filter((r) => r.version < current).reverse()) {
      let markdown: Buffer;
      try {
        markdown = await this.store.get(e.objectKey);
      } catch (err) {
        if (err instanceof NotFoundError) {
          this.logger.warn(`Memory ${id}: the object of version ${e.version} (${e.objectKey}) is missing; not exported`);
          continue;
        }
        throw err;
      }
      yield { version: e.version, markdown, at: e.updatedAt };
    }
  }
}
