import { randomBytes } from 'node:crypto';
import { BackendUnavailableError } from '../../common/errors';
import { RateLimitHits, RateLimitRepository } from '../ports/rate-limit.repository';
import type { MongoExec, MongoModels } from './mongo-models';
import type { RateLimitRecord } from './mongo.schemas';

/** Ended windows are kept this long before the TTL index (or the pruning below) removes them. */
export const RATE_LIMIT_GRACE_SECONDS = 60;
/** Ended windows are pruned at most this often (on an increment), for servers without a TTL monitor. */
const PRUNE_EVERY_MS = 60_000;
/** Hits stored per key and window at most: further hits are counted, reported, and not kept (an attacker cannot fill the collection). */
const MAX_STORED_HITS = 2_000;
/** Attempts to start a window when other instances keep starting it first (each loss means a live window now exists). */
const MAX_ROUNDS = 5;

type Window = Pick<RateLimitRecord, 'gen' | 'resetAt'>;

/**
 * Rate-limit counters in the `rate_limits` collection, as one document per counted hit (see
 * RateLimitRecord): a window is started by inserting its first hit under the unique id
 * "<key>#<gen>" (only one instance can win; the others join it), a hit is an insert, and the
 * count is a countDocuments on the key's window.
 *
 * Why not a counter document with `$inc`: on FerretDB 1.x an update is a read-modify-write in
 * FerretDB itself, so concurrent `$inc`s on one document lose hits (in the contract test, 20
 * parallel increments ended at 9). Inserts with a unique `_id` are atomic on every
 * MongoDB-wire server, so this design counts every hit, on MongoDB and FerretDB alike. The
 * k-th concurrent hit sees at least k, which is what a limiter needs: no more than `limit`
 * concurrent attempts ever see a count within the limit.
 *
 * Ended windows are removed by a TTL index (RATE_LIMIT_GRACE_SECONDS after they end) and, for
 * servers without TTL monitors, pruned once a minute.
 */
export class MongoRateLimitRepository extends RateLimitRepository {
  private lastPrune = 0;

  constructor(private readonly exec: MongoExec) {
    super();
  }

  override increment(key: string, windowMs: number): Promise<RateLimitHits> {
    key = String(key);
    return this.exec(async (m) => {
      await this.prune(m);
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const now = Date.now();
        const latest = await this.latestWindow(m, key);
        if (latest && latest.resetAt.getTime() > now) {
          const id = `${key}#${latest.gen}#${randomBytes(9).toString('base64url')}`;
          await m.rateLimits.collection.insertOne({ _id: id, key, gen: latest.gen, resetAt: latest.resetAt } as never);
          const totalHits = await m.rateLimits.countDocuments({ key, gen: latest.gen }).exec();
          if (totalHits > MAX_STORED_HITS) await m.rateLimits.deleteOne({ _id: id }).exec();
          return { totalHits, resetTime: new Date(latest.resetAt) };
        }
        const gen = (latest?.gen ?? 0) + 1;
        const resetAt = new Date(now + windowMs);
        try {
          await m.rateLimits.collection.insertOne({ _id: `${key}#${gen}`, key, gen, resetAt } as never);
        } catch (e) {
          if ((e as { code?: number }).code === 11000) continue; // another instance started this window: join it
          throw e;
        }
        // Others may have joined already.
        return { totalHits: await m.rateLimits.countDocuments({ key, gen }).exec(), resetTime: resetAt };
      }
      throw new BackendUnavailableError('Document database', `could not start a rate-limit window for '${key}' (kept losing to other instances)`);
    });
  }

  override async decrement(key: string): Promise<void> {
    key = String(key);
    await this.exec(async (m) => {
      const latest = await this.latestWindow(m, key);
      // Any hit of the live window will do (its first hit too: later hits carry the window on).
      if (latest && latest.resetAt.getTime() > Date.now()) await m.rateLimits.deleteOne({ key, gen: latest.gen }).exec();
    });
  }

  override async reset(key: string): Promise<void> {
    await this.exec((m) => m.rateLimits.deleteMany({ key: String(key) }).exec());
  }

  private latestWindow(m: MongoModels, key: string): Promise<Window | null> {
    return m.rateLimits.findOne({ key }, { _id: 0, gen: 1, resetAt: 1 }).sort({ gen: -1 }).lean<Window>().exec();
  }

  private async prune(m: MongoModels): Promise<void> {
    const now = Date.now();
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await m.rateLimits.deleteMany({ resetAt: { $lte: new Date(now - RATE_LIMIT_GRACE_SECONDS * 1000) } }).exec();
  }
}
