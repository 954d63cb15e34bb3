import { randomBytes } from 'node:crypto';

/**
 * Pending writes and deletes (issue 9, issue 46; decision 0060). Before a memory's object is
 * written, its key is recorded here (kind 'write'); the record is removed once the index holds
 * the write, or once the write is known not to have happened and its object is deleted. Before a
 * memory's index row is removed, a 'delete' record naming the memory is added; it is removed once
 * the memory's objects are deleted. An object named by a pending record is therefore never
 * trusted on its own: the sweep (after the grace period) and reindex ask the index whether it
 * holds the write, and finish or undo what a crash, an outage or an unknown outcome left.
 */
export interface WriteIntent {
  /** 'write': the object key. 'delete': a key of its own (deleteIntentKey), never an object's. */
  objectKey: string;
  memoryId: string;
  createdAt: Date;
  /** Default 'write'. */
  kind?: 'write' | 'delete';
}

/** The prefix every object of a memory starts with ("memories/<id>."; both key layouts). */
export function memoryObjectPrefix(memoryId: string, namespacePrefix = ''): string {
  return `${namespacePrefix}memories/${memoryId}.`;
}

/**
 * A new delete intent's key: unique per delete (two deletes of one memory at once keep their own).
 * It starts with the memory's object prefix (its namespace's `ns/<namespace>/` included), which is
 * what the sweep lists to finish an interrupted delete (deleteIntentPrefix).
 */
export function deleteIntentKey(memoryId: string, namespacePrefix = ''): string {
  return `${memoryObjectPrefix(memoryId, namespacePrefix)}delete-${randomBytes(6).toString('hex')}`;
}

/** The object prefix a delete intent's key names (see deleteIntentKey). */
export function deleteIntentPrefix(intentKey: string, memoryId: string): string {
  const i = intentKey.lastIndexOf(`memories/${memoryId}.delete-`);
  return i > 0 ? memoryObjectPrefix(memoryId, intentKey.slice(0, i)) : memoryObjectPrefix(memoryId);
}

export abstract class WriteIntentRepository {
  abstract add(intent: WriteIntent): Promise<void>;
  /** Adds several (a bulk delete); adapters may override with one write. */
  async addMany(intents: WriteIntent[]): Promise<void> {
    for (const i of intents) await this.add(i);
  }
  /** Idempotent. */
  abstract remove(objectKey: string): Promise<void>;
  /** Intents recorded before `before`, oldest first (at most `limit`). */
  abstract olderThan(before: Date, limit: number): Promise<WriteIntent[]>;
}
