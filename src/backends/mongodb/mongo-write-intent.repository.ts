import { WriteIntent, WriteIntentRepository } from '../ports/write-intent.repository';
import type { MongoExec } from './mongo-models';
import type { WriteIntentRecord } from './mongo-integrity.schemas';

const record = (i: WriteIntent) => ({ _id: String(i.objectKey), memoryId: String(i.memoryId), createdAt: i.createdAt, kind: i.kind === 'delete' ? 'delete' : 'write' });

/** Pending memory writes and deletes in the `write_intents` collection (see WriteIntentRepository). */
export class MongoWriteIntentRepository extends WriteIntentRepository {
  constructor(private readonly exec: MongoExec) {
    super();
  }

  override add(i: WriteIntent): Promise<void> {
    return this.exec(async (m) => {
      await m.writeIntents.collection.replaceOne({ _id: String(i.objectKey) } as never, record(i), { upsert: true });
    });
  }

  override addMany(intents: WriteIntent[]): Promise<void> {
    if (intents.length === 0) return Promise.resolve();
    return this.exec(async (m) => {
      await m.writeIntents.collection.bulkWrite(intents.map((i) => ({ replaceOne: { filter: { _id: String(i.objectKey) }, replacement: record(i), upsert: true } })) as never, { ordered: false });
    });
  }

  override remove(objectKey: string): Promise<void> {
    return this.exec(async (m) => {
      await m.writeIntents.deleteOne({ _id: String(objectKey) }).exec();
    });
  }

  override olderThan(before: Date, limit: number): Promise<WriteIntent[]> {
    return this.exec(async (m) => {
      const rows = await m.writeIntents
        .find({ createdAt: { $lt: before } })
        .sort({ createdAt: 1 })
        .limit(limit)
        .lean<WriteIntentRecord[]>()
        .exec();
      return rows.map((r) => ({ objectKey: r._id, memoryId: r.memoryId, createdAt: new Date(r.createdAt), kind: r.kind === 'delete' ? 'delete' : 'write' }));
    });
  }
}
