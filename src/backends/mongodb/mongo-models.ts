import type { Model } from 'mongoose';
import type { MemoryRecord, ProbeRecord, RateLimitRecord, SessionRecord, TokenDocRecord } from './mongo.schemas';
import type { IdempotencyKeyRecord, VersionRecord, WriteIntentRecord } from './mongo-integrity.schemas';

/**
 * The mongoose models of one connection, and how a repository runs an operation on them. Apart
 * from mongo-document-database.ts (which creates the repositories) so the repositories can name
 * these types without importing the file that imports them.
 */
export interface MongoModels {
  memories: Model<MemoryRecord>;
  tokens: Model<TokenDocRecord>;
  sessions: Model<SessionRecord>;
  rateLimits: Model<RateLimitRecord>;
  probe: Model<ProbeRecord>;
  versions: Model<VersionRecord>;
  writeIntents: Model<WriteIntentRecord>;
  idempotency: Model<IdempotencyKeyRecord>;
  /** Whether the server supports text indexes ($text search); detected once per connection. */
  textSearch: boolean;
}

/** Runs one operation on the models, translating driver errors into our own. */
export type MongoExec = <T>(fn: (m: MongoModels) => Promise<T>) => Promise<T>;
