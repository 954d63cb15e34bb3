import { idempotencyAnswerIds, IdempotencyRecord, IdempotencyRepository } from '../ports/idempotency.repository';
import type { MongoExec } from './mongo-models';
import type { IdempotencyKeyRecord } from './mongo-integrity.schemas';

/** Kept this long: the TTL index removes a record a day after it was made. */
export const IDEMPOTENCY_TTL_SECONDS = 86_400;

/**
 * Idempotency-Key records in the `idempotency_keys` collection. A claim is an insert with the key
 * as `_id` (atomic on MongoDB and FerretDB alike): of two concurrent requests only one runs.
 */
export class MongoIdempotencyRepository extends IdempotencyRepository {
  constructor(private readonly exec: MongoExec) {
    super();
  }

  override claim(r: IdempotencyRecord, ttlMs: number): Promise<IdempotencyRecord | null> {
    return this.exec(async (m) => {
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await m.idempotency.collection.insertOne({ _id: String(r.key), fingerprint: r.fingerprint, status: null, body: null, createdAt: r.createdAt } as never);
          return null;
        } catch (e) {
          if ((e as { code?: number }).code !== 11000) throw e;
        }
        const held = await m.idempotency.findById(String(r.key)).lean<IdempotencyKeyRecord>().exec();
        if (!held) continue; // released meanwhile: claim again
        if (new Date(held.createdAt).getTime() >= r.createdAt.getTime() - ttlMs) return toRecord(held);
        await m.idempotency.deleteOne({ _id: held._id, createdAt: held.createdAt }).exec(); // expired, not yet removed by the TTL monitor
      }
      const held = await m.idempotency.findById(String(r.key)).lean<IdempotencyKeyRecord>().exec();
      return held ? toRecord(held) : null;
    });
  }

  override complete(key: string, status: number, body: string): Promise<void> {
    return this.exec(async (m) => {
      await m.idempotency.updateOne({ _id: String(key) }, { $set: { status, body } }).exec();
    });
  }

  override release(key: string): Promise<void> {
    return this.exec(async (m) => {
      await m.idempotency.deleteOne({ _id: String(key), status: null }).exec();
    });
  }

  override get(key: string): Promise<IdempotencyRecord | null> {
    return this.exec(async (m) => {
      const r = await m.idempotency.findById(String(key)).lean<IdempotencyKeyRecord>().exec();
      return r ? toRecord(r) : null;
    });
  }

  override forget(namespace: string, memoryIds?: readonly string[]): Promise<number> {
    if (memoryIds !== undefined && memoryIds.length === 0) return Promise.resolve(0);
    // The namespace as idempotencyKeyNamespace reads it from the key: the part after the caller.
    const ofNamespace = namespace === 'default' ? { _id: { $regex: '^[^|]*\\|(?:[^n]|n[^s]|ns[^:])' } } : { _id: { $regex: `^[^|]*\\|ns:${namespace.replace(/\./g, '\\.')}\\|` } };
    return this.exec(async (m) => {
      if (memoryIds === undefined) return (await m.idempotency.deleteMany(ofNamespace).exec()).deletedCount;
      // Which stored answer is which memory is only in the JSON of the answer: read the namespace's
      // records (a day's worth at most) and delete those that answer one of these memories.
      const wanted = new Set(memoryIds);
      const held = await m.idempotency.find(ofNamespace, { _id: 1, body: 1 }).lean<Array<Pick<IdempotencyKeyRecord, '_id' | 'body'>>>().exec();
      const ids = held.filter((r) => idempotencyAnswerIds(r.body ?? null).some((id) => wanted.has(id))).map((r) => r._id);
      return ids.length === 0 ? 0 : (await m.idempotency.deleteMany({ _id: { $in: ids } }).exec()).deletedCount;
    });
  }
}

function toRecord(r: IdempotencyKeyRecord): IdempotencyRecord {
  return { key: r._id, fingerprint: r.fingerprint, status: r.status ?? null, body: r.body ?? null, createdAt: new Date(r.createdAt) };
}
