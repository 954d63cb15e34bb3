/**
 * Pending writes (issue 9): before a memory's object is written, its key is recorded here; the
 * record is removed once the index points at the object (or the write is given up and the object
 * deleted). A record older than any write can take therefore names an object whose write was
 * never acknowledged (the process died between object and index write): the start-up sweep
 * deletes such objects and reindex leaves them out.
 */
export interface WriteIntent {
  objectKey: string;
  memoryId: string;
  createdAt: Date;
}

export abstract class WriteIntentRepository {
  abstract add(intent: WriteIntent): Promise<void>;
  /** Idempotent. */
  abstract remove(objectKey: string): Promise<void>;
  /** Intents recorded before `before`, oldest first (at most `limit`). */
  abstract olderThan(before: Date, limit: number): Promise<WriteIntent[]>;
}
