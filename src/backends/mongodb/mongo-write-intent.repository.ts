import { WriteIntent, WriteIntentRepository } from '../ports/write-intent.repository';
import type { MongoExec } from './mongo-models';
import type { WriteIntentRecord } from './mongo-integrity.schemas';

/** Pending memory writes in the `write_intents` collection (see WriteIntentRepository). */
export class MongoWriteIntentRepository extends WriteIntentRepository {
  constructor(private readonly exec: MongoExec) {
    super();
  }

  override add(i: WriteIntent): Promise<void> {
    return this.exec(async (m) => {
      await m.writeIntents.collection.insertOne({ _id: String(i.objectKey), memoryId: String(i.memoryId), createdAt: i.createdAt } as never);
    });
  }

  override remove(objectKey: string): Promise<void> {
    return this.exec(async (m) => {
      await m.writeIntents.deleteOne({ _id: String(objectKey) }).exec();
    });
  }

  override olderThan(before: Date, limit: number): Promise<WriteIntent[]> {
    return this.exec(async (m) => {
      const rows = await m.writeIntents.find({ createdAt: { $lt: before } }).sort({ createdAt: 1 }).limit(limit).lean<WriteIntentRecord[]>().exec();
      return rows.map((r) => ({ objectKey: r._id, memoryId: r.memoryId, createdAt: new Date(r.createdAt) }));
    });
  }
}
