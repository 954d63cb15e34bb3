/**
 * Persistence records of the MongoDB adapter, as @nestjs/mongoose schema classes. The `_id` of
 * each record is our own identifier (memory id, token id, session id, rate-limit key), so no ObjectId or
 * mongoose internals ever reach a response: the repositories map records to port models.
 */
import { Prop, Schema, SchemaFactory } from '@nestjs/mongoose';
import { MEMORY_SCOPES, MEMORY_TYPES } from '../ports/memory.model';

/** Mongoose options shared by every schema: no buffering, no implicit index builds, no __v. */
const COMMON = { versionKey: false, autoIndex: false, autoCreate: false, bufferCommands: false, strict: true } as const;

@Schema({ ...COMMON, collection: 'memories' })
export class MemoryRecord {
  @Prop({ type: String, required: true })
  _id!: string;

  /** The tenant (issue 43); set to 'default' on memories of an earlier version when the database is opened. */
  @Prop({ type: String, required: true })
  namespace!: string;

  @Prop({ type: String, default: null })
  title!: string | null;

  @Prop({ type: String, required: true, enum: MEMORY_TYPES })
  type!: string;

  @Prop({ type: String, required: true, enum: MEMORY_SCOPES })
  scope!: string;

  @Prop({ type: [String], default: [] })
  tags!: string[];

  @Prop({ type: String, default: null })
  agent!: string | null;

  @Prop({ type: String, default: null })
  project!: string | null;

  @Prop({ type: String, required: true })
  content!: string;

  /** UTF-8 bytes of content (decision 0155: summed per namespace); filled in at connection for memories from before it. */
  @Prop({ type: Number })
  size?: number;

  @Prop({ type: Date, required: true })
  createdAt!: Date;

  @Prop({ type: Date, required: true })
  updatedAt!: Date;

  /** Write counter (issue 9); absent on memories from before versions (= 1). */
  @Prop({ type: Number, default: 1 })
  version?: number;

  /** Key of the current version's object; absent/null: memories/<id>.md (from before versions). */
  @Prop({ type: String, default: null })
  objectKey?: string | null;

  @Prop({ type: Object, default: null })
  author?: { kind: 'token' | 'admin'; id: string; name: string | null } | null;

  /** Set when a newer memory replaced this one (decision 0130); absent/null otherwise. */
  @Prop({ type: String, default: null })
  supersededBy?: string | null;

  @Prop({ type: Date, default: null })
  validTo?: Date | null;
}
export const MemoryRecordSchema = SchemaFactory.createForClass(MemoryRecord);

/** Listing order (newest first, id as tie-breaker) and one index per filter, each ending in the listing order. */
export const MEMORY_INDEXES: Array<{ key: Record<string, 1 | -1>; name: string }> = [
  { key: { createdAt: -1, _id: -1 }, name: 'listing_order' },
  { key: { type: 1, createdAt: -1, _id: -1 }, name: 'by_type' },
  { key: { scope: 1, createdAt: -1, _id: -1 }, name: 'by_scope' },
  { key: { project: 1, createdAt: -1, _id: -1 }, name: 'by_project' },
  { key: { agent: 1, createdAt: -1, _id: -1 }, name: 'by_agent' },
  { key: { tags: 1, createdAt: -1, _id: -1 }, name: 'by_tag' },
  // Namespace-first (issue 43, decision 0100): a request's queries always name one namespace.
  { key: { namespace: 1, createdAt: -1, _id: -1 }, name: 'ns_listing_order' },
  { key: { namespace: 1, type: 1, createdAt: -1, _id: -1 }, name: 'ns_by_type' },
  { key: { namespace: 1, scope: 1, createdAt: -1, _id: -1 }, name: 'ns_by_scope' },
  { key: { namespace: 1, project: 1, createdAt: -1, _id: -1 }, name: 'ns_by_project' },
  { key: { namespace: 1, agent: 1, createdAt: -1, _id: -1 }, name: 'ns_by_agent' },
  { key: { namespace: 1, tags: 1, createdAt: -1, _id: -1 }, name: 'ns_by_tag' },
  // Superseded memories (decision 0130): whether there are any, and which ones as of a moment.
  { key: { validTo: 1 }, name: 'by_valid_to' },
  // The embedding queue (mongo-vectors.ts): due jobs, and the count of memories per vector space.
  { key: { emb_pending: 1, emb_next_at: 1 }, name: 'embedding_queue' },
  { key: { vec_model: 1 }, name: 'by_vector_space' },
  // The vectors stored since a search's last refresh of the in-process copy (mongo-vector-cache.ts).
  { key: { vec_at: 1 }, name: 'by_vector_time' },
];

/** Full-text index: title and tags weigh more than content, English stemming. */
export const MEMORY_TEXT_INDEX = {
  key: { title: 'text', tags: 'text', content: 'text' } as Record<string, 'text'>,
  name: 'memory_text',
  weights: { title: 10, tags: 5, content: 1 },
  default_language: 'english',
  // Our documents have no per-document language; keep the default override field out of the way.
  language_override: 'text_language',
};

@Schema({ ...COMMON, collection: 'tokens' })
export class TokenDocRecord {
  /** The token id (16 hex); `_id` is unique by construction. */
  @Prop({ type: String, required: true })
  _id!: string;

  /** May be empty (a token without a name). */
  @Prop({ type: String, default: '' })
  name!: string;

  @Prop({ type: String, required: true })
  secretHash!: string;

  @Prop({ type: [String], default: [] })
  scopes!: string[];

  /** Issue 43; absent on tokens from before namespaces (read as ['default']). */
  @Prop({ type: [String], default: undefined })
  namespaces?: string[];

  @Prop({ type: Date, required: true })
  createdAt!: Date;

  @Prop({ type: Date, default: null })
  expiresAt!: Date | null;

  @Prop({ type: [String], default: [] })
  allowedIps!: string[];

  @Prop({ type: Date, default: null })
  lastUsedAt!: Date | null;

  @Prop({ type: Date, default: null })
  revokedAt!: Date | null;

  /** Requests per minute; 0 = unlimited; null = the service default. */
  @Prop({ type: Number, default: null })
  rateLimitPerMinute!: number | null;

  /** The manager token that minted it; null (or absent, on tokens from before) when the administrator did. */
  @Prop({ type: String, default: null })
  createdBy!: string | null;
}
export const TokenDocRecordSchema = SchemaFactory.createForClass(TokenDocRecord);

@Schema({ ...COMMON, collection: 'sessions' })
export class SessionRecord {
  /** The express-session id. */
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: String, required: true })
  data!: string;

  @Prop({ type: Date, required: true })
  expiresAt!: Date;
}
export const SessionRecordSchema = SchemaFactory.createForClass(SessionRecord);

/**
 * One counted hit of a rate-limit key. Hits of one window share `gen` (the window's number for
 * that key); the first hit of a window has `_id` "<key>#<gen>", so only one instance can start
 * a given window; further hits have random ids.
 */
@Schema({ ...COMMON, collection: 'rate_limits' })
export class RateLimitRecord {
  @Prop({ type: String, required: true })
  _id!: string;

  /** The counter's key (limiter prefix + client address). */
  @Prop({ type: String, required: true })
  key!: string;

  /** Window number for this key (1, 2, …). */
  @Prop({ type: Number, required: true })
  gen!: number;

  /** When the window ends (a TTL index removes the hit a little later). */
  @Prop({ type: Date, required: true })
  resetAt!: Date;
}
export const RateLimitRecordSchema = SchemaFactory.createForClass(RateLimitRecord);

/** Finds a key's newest window and counts its hits. */
export const RATE_LIMIT_INDEX = { key: { key: 1, gen: -1 } as Record<string, 1 | -1>, name: 'rate_limit_window' };

@Schema({ ...COMMON, collection: 'memstore_probe' })
export class ProbeRecord {
  @Prop({ type: String, required: true })
  _id!: string;

  @Prop({ type: Date, required: true })
  at!: Date;
}
export const ProbeRecordSchema = SchemaFactory.createForClass(ProbeRecord);
