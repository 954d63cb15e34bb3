import { SessionRepository, StoredSession } from '../ports/session.repository';
import type { MongoModels } from './mongo-document-database';
import type { SessionRecord } from './mongo.schemas';
import { toAppError } from './mongo-errors';

function toStored(r: SessionRecord): StoredSession {
  return { sid: r._id, data: r.data, expiresAt: new Date(r.expiresAt) };
}

/**
 * Admin sessions in the `sessions` collection (`_id` = session id). A TTL index removes expired
 * ones on MongoDB; reads ignore expired sessions either way (servers without TTL monitors too).
 */
export class MongoSessionRepository extends SessionRepository {
  constructor(
    private readonly models: () => Promise<MongoModels>,
    private readonly where: string,
  ) {
    super();
  }

  private async run<T>(fn: (m: MongoModels) => Promise<T>): Promise<T> {
    const m = await this.models();
    try {
      return await fn(m);
    } catch (e) {
      throw toAppError(e, this.where);
    }
  }

  override get(sid: string): Promise<StoredSession | null> {
    return this.run(async (m) => {
      const r = await m.sessions.findOne({ _id: String(sid), expiresAt: { $gt: new Date() } }).lean<SessionRecord>().exec();
      return r ? toStored(r) : null;
    });
  }

  override set(s: StoredSession): Promise<void> {
    return this.run(async (m) => {
      await m.sessions.replaceOne({ _id: String(s.sid) }, { _id: String(s.sid), data: s.data, expiresAt: s.expiresAt }, { upsert: true }).exec();
    });
  }

  override touch(sid: string, expiresAt: Date): Promise<void> {
    return this.run(async (m) => {
      await m.sessions.updateOne({ _id: String(sid) }, { $set: { expiresAt } }).exec();
    });
  }

  override destroy(sid: string): Promise<void> {
    return this.run(async (m) => {
      await m.sessions.deleteOne({ _id: String(sid) }).exec();
    });
  }

  override all(): Promise<StoredSession[]> {
    return this.run(async (m) => {
      const rows = await m.sessions.find({ expiresAt: { $gt: new Date() } }).lean<SessionRecord[]>().exec();
      return rows.map(toStored);
    });
  }
}
