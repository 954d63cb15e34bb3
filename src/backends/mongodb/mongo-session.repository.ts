import { Logger } from '@nestjs/common';
import { BackendUnavailableError } from '../../common/errors';
import { SessionRepository, StoredSession } from '../ports/session.repository';
import type { MongoExec, MongoModels } from './mongo-models';
import type { SessionRecord } from './mongo.schemas';

function toStored(r: SessionRecord): StoredSession {
  return { sid: r._id, data: r.data, expiresAt: new Date(r.expiresAt) };
}

/** Sessions this instance remembers for outages (the admin's, a few at most in practice). */
const MAX_CACHED_SESSIONS = 10_000;

/**
 * Admin sessions in the `sessions` collection (`_id` = session id). A TTL index removes expired
 * ones on MongoDB; reads ignore expired sessions either way (servers without TTL monitors too).
 *
 * MongoDB is the source of truth, but this instance remembers the sessions it has seen so that
 * the admin stays signed in (and can sign in) while MongoDB is unreachable: the admin routes must
 * keep working so that the settings can be fixed. Writes made during an outage are replayed
 * once MongoDB answers again, deletions (sign-outs) included.
 */
export class MongoSessionRepository extends SessionRepository {
  private readonly cache = new Map<string, StoredSession>();
  private readonly pendingSet = new Map<string, StoredSession>();
  private readonly pendingDestroy = new Set<string>();
  private readonly logger = new Logger('MongoDB');
  private lastWarning = 0;

  constructor(private readonly exec: MongoExec) {
    super();
  }

  private run<T>(fn: (m: MongoModels) => Promise<T>): Promise<T> {
    return this.exec(async (m) => {
      await this.flush(m);
      return fn(m);
    });
  }

  /** Replays the writes made while MongoDB was unreachable. */
  private async flush(m: MongoModels): Promise<void> {
    for (const sid of [...this.pendingDestroy]) {
      await m.sessions.deleteOne({ _id: sid }).exec();
      this.pendingDestroy.delete(sid);
    }
    for (const [sid, s] of [...this.pendingSet]) {
      await m.sessions.replaceOne({ _id: sid }, { _id: sid, data: s.data, expiresAt: s.expiresAt }, { upsert: true }).exec();
      this.pendingSet.delete(sid);
    }
  }

  private remember(s: StoredSession): void {
    this.cache.delete(s.sid);
    this.cache.set(s.sid, s);
    if (this.cache.size > MAX_CACHED_SESSIONS) this.cache.delete(this.cache.keys().next().value!);
  }

  private degraded(e: unknown): boolean {
    if (!(e instanceof BackendUnavailableError)) return false;
    if (Date.now() - this.lastWarning > 60_000) {
      this.lastWarning = Date.now();
      this.logger.warn(`Admin sessions are kept in memory until MongoDB answers again: ${e.reason}`);
    }
    return true;
  }

  override async get(sid: string): Promise<StoredSession | null> {
    try {
      const r = await this.run((m) =>
        m.sessions
          .findOne({ _id: String(sid), expiresAt: { $gt: new Date() } })
          .lean<SessionRecord>()
          .exec(),
      );
      const s = r ? toStored(r) : null;
      if (s) this.remember(s);
      else this.cache.delete(String(sid));
      return s;
    } catch (e) {
      if (!this.degraded(e)) throw e;
      const cached = this.cache.get(String(sid));
      return cached && !this.pendingDestroy.has(cached.sid) && cached.expiresAt.getTime() > Date.now() ? { ...cached } : null;
    }
  }

  override async set(s: StoredSession): Promise<void> {
    const copy = { sid: String(s.sid), data: s.data, expiresAt: new Date(s.expiresAt) };
    this.remember(copy);
    this.pendingDestroy.delete(copy.sid);
    try {
      await this.run(async (m) => {
        await m.sessions.replaceOne({ _id: copy.sid }, { _id: copy.sid, data: copy.data, expiresAt: copy.expiresAt }, { upsert: true }).exec();
      });
    } catch (e) {
      if (!this.degraded(e)) throw e;
      this.pendingSet.set(copy.sid, copy);
    }
  }

  override async destroy(sid: string): Promise<void> {
    this.cache.delete(String(sid));
    this.pendingSet.delete(String(sid));
    try {
      await this.run(async (m) => {
        await m.sessions.deleteOne({ _id: String(sid) }).exec();
      });
    } catch (e) {
      if (!this.degraded(e)) throw e;
      this.pendingDestroy.add(String(sid));
    }
  }

  override all(): Promise<StoredSession[]> {
    return this.run(async (m) => {
      const rows = await m.sessions
        .find({ expiresAt: { $gt: new Date() } })
        .lean<SessionRecord[]>()
        .exec();
      return rows.map(toStored);
    });
  }
}
