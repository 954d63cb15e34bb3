import { DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import { backfillContentSizes } from './mongo-namespace-usage';
import { Logger } from '@nestjs/common';
import mongoose, { Connection, Model } from 'mongoose';
import { BackendUnavailableError } from '../../common/errors';
import { DocumentDatabase } from '../ports/document-database.port';
import {
  MEMORY_INDEXES,
  MEMORY_TEXT_INDEX,
  MemoryRecord,
  MemoryRecordSchema,
  ProbeRecord,
  ProbeRecordSchema,
  RATE_LIMIT_INDEX,
  RateLimitRecord,
  RateLimitRecordSchema,
  SessionRecord,
  SessionRecordSchema,
  TokenDocRecord,
  TokenDocRecordSchema,
} from './mongo.schemas';
import { redactMongoUri, toAppError } from './mongo-errors';
import { IDEMPOTENCY_TTL_SECONDS, MongoIdempotencyRepository } from './mongo-idempotency.repository';
import { IdempotencyKeyRecord, IdempotencyKeyRecordSchema, VERSION_INDEX, VersionRecord, VersionRecordSchema, WriteIntentRecord, WriteIntentRecordSchema } from './mongo-integrity.schemas';
import { MongoAuditRepository } from './mongo-audit.repository';
import { MongoMemoryIndex } from './mongo-memory-index';
import { MongoRateLimitRepository, RATE_LIMIT_GRACE_SECONDS } from './mongo-rate-limit.repository';
import { MongoSessionRepository } from './mongo-session.repository';
import { MongoTokenRepository } from './mongo-token.repository';
import { MongoWriteIntentRepository } from './mongo-write-intent.repository';
import type { MongoExec, MongoModels } from './mongo-models';

export interface MongoOptions {
  uri: string;
  /** Database name; when null, the one in the URI (or "memstore"). */
  dbName: string | null;
  /** Collection of memories (default "memories"). */
  memoryCollection: string | null;
  /** Fail fast instead of hanging: server selection / connect timeout. */
  timeoutMs?: number;
  /** Where connection news goes (default: the Nest logger). */
  logger?: Pick<Logger, 'log' | 'warn'>;
  /**
   * A serving process with an embedding provider: on connecting, loads the vector copy of the
   * space in use in the background (mongo-vector-cache.ts), so the first vector search after a
   * start does not pay for it. Commands and migrations leave it out.
   */
  preloadVectors?: boolean;
}

/**
 * After a failed connection attempt, or a network error on an open connection, further
 * operations fail at once for this long (then one tries again): while MongoDB is down a request
 * costs nothing instead of a server-selection timeout per operation.
 */
const RETRY_AFTER_MS = 2_000;

/**
 * After this long of nothing but network errors the connection is replaced by a new one. The
 * driver recovers by itself when its monitor next reaches the server, but its monitor can wedge:
 * in the outage drill (issue 46) a heartbeat started as the server went down never ended, so the
 * server stayed "Unknown" and every operation failed long after it was back.
 */
const REPLACE_AFTER_MS = 10_000;

/**
 * The MongoDB document database: one mongoose connection it opens (and closes) itself, with the
 * memories, tokens, sessions and rate_limits collections and their indexes. init() never throws
 * when the server is down: every operation (re)connects on demand, failing with a 503 in the
 * meantime, and the driver reconnects by itself once a connection has been made.
 */
export class MongoDocumentDatabase extends DocumentDatabase {
  readonly kind = 'mongodb';
  readonly memories: MongoMemoryIndex;
  /** The embedding queue and vectors: the same adapter object as `memories` (EmbeddingQueue port). */
  get embeddings(): MongoMemoryIndex {
    return this.memories;
  }
  readonly tokens: MongoTokenRepository;
  readonly sessions: MongoSessionRepository;
  readonly rateLimits: MongoRateLimitRepository;
  readonly writeIntents: MongoWriteIntentRepository;
  readonly idempotency: MongoIdempotencyRepository;
  readonly audit: MongoAuditRepository;
  private readonly logger: Pick<Logger, 'log' | 'warn'>;
  private readonly where: string;
  private conn?: Connection;
  private models?: MongoModels;
  private connecting?: Promise<MongoModels>;
  private lastFailure?: { at: number; error: Error };
  /** When the current run of network errors began (none: the last operation reached the server). */
  private failingSince?: number;
  private closed = false;
  /** The start-up load of the vectors (preloadVectors), once connected. */
  private preloading: Promise<void> = Promise.resolve();

  constructor(private readonly opts: MongoOptions) {
    super();
    this.where = redactMongoUri(opts.uri);
    this.logger = opts.logger ?? new Logger('MongoDB');
    const exec: MongoExec = (fn) => this.exec(fn);
    this.memories = new MongoMemoryIndex(exec, () => this.models);
    this.tokens = new MongoTokenRepository(exec);
    this.sessions = new MongoSessionRepository(exec);
    this.rateLimits = new MongoRateLimitRepository(exec);
    this.writeIntents = new MongoWriteIntentRepository(exec);
    this.idempotency = new MongoIdempotencyRepository(exec);
    this.audit = new MongoAuditRepository(exec);
  }

  override async init(): Promise<void> {
    try {
      await this.ready();
    } catch (e) {
      this.logger.warn(`MongoDB at ${this.where} is not reachable yet: ${(e as Error).message}`);
    }
  }

  /** Runs an operation; a network error starts a short fail-fast window (RETRY_AFTER_MS). */
  async exec<T>(fn: (m: MongoModels) => Promise<T>): Promise<T> {
    const m = await this.ready();
    try {
      const result = await fn(m);
      this.failingSince = undefined;
      return result;
    } catch (e) {
      const error = toAppError(e, this.where);
      if (isNetworkError(e)) {
        const now = Date.now();
        this.lastFailure = { at: now, error };
        this.failingSince ??= now;
        if (now - this.failingSince >= REPLACE_AFTER_MS) this.replaceConnection();
      } else this.failingSince = undefined;
      throw error;
    }
  }

  /** Drops the connection (in-flight operations fail); the next operation after the fail-fast window connects anew. */
  private replaceConnection(): void {
    const conn = this.conn;
    if (!conn || this.models === undefined) return;
    this.logger.warn(`MongoDB at ${this.where}: no operation has reached the server for ${REPLACE_AFTER_MS / 1000} s; replacing the connection`);
    this.conn = undefined;
    this.models = undefined;
    this.failingSince = undefined;
    void conn.close(true).catch(() => undefined);
  }

  /** The models on an open connection; connects (once at a time) when there is none yet. */
  ready(): Promise<MongoModels> {
    if (this.closed) return Promise.reject(new BackendUnavailableError('Document database', 'the MongoDB connection is closed'));
    if (this.lastFailure && Date.now() - this.lastFailure.at < RETRY_AFTER_MS) return Promise.reject(this.lastFailure.error);
    if (this.models) return Promise.resolve(this.models);
    if (this.connecting) return this.connecting;
    this.connecting = this.connect()
      .then((m) => {
        this.models = m;
        this.lastFailure = undefined;
        if (this.opts.preloadVectors === true) this.preloadVectors();
        return m;
      })
      .catch((e: unknown) => {
        const error = toAppError(e, this.where);
        this.lastFailure = { at: Date.now(), error };
        throw error;
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }

  /** Resolves once the start-up load of the vectors is over (tests; it never rejects). */
  whenVectorsLoaded(): Promise<void> {
    return this.preloading;
  }

  /** On a (re)connection: a failed load is only logged (the first vector search loads them then). */
  private preloadVectors(): void {
    this.preloading = this.memories.preloadVectors().catch((e: unknown) => {
      if (!this.closed) this.logger.warn(`Vectors at ${this.where} not loaded at start (the first vector search loads them): ${(e as Error).message}`);
    });
  }

  private async connect(): Promise<MongoModels> {
    const t = this.opts.timeoutMs ?? 2_500;
    const conn = mongoose.createConnection(this.opts.uri, {
      dbName: this.opts.dbName ?? undefined,
      bufferCommands: false,
      autoIndex: false,
      autoCreate: false,
      serverSelectionTimeoutMS: t,
      connectTimeoutMS: t,
      socketTimeoutMS: 20_000,
      heartbeatFrequencyMS: 5_000,
      maxPoolSize: 20,
      appName: 'memory-store',
    });
    try {
      await conn.asPromise();
      if (this.closed) throw new BackendUnavailableError('Document database', 'the MongoDB connection is closed');
      const memories = conn.model(MemoryRecord.name, MemoryRecordSchema, this.opts.memoryCollection || 'memories');
      const tokens = conn.model(TokenDocRecord.name, TokenDocRecordSchema, 'tokens');
      const sessions = conn.model(SessionRecord.name, SessionRecordSchema, 'sessions');
      const rateLimits = conn.model(RateLimitRecord.name, RateLimitRecordSchema, 'rate_limits');
      const probe = conn.model(ProbeRecord.name, ProbeRecordSchema, 'memstore_probe');
      const existing = await existingIndexes(memories);
      const missing = MEMORY_INDEXES.filter((i) => !existing.has(i.name));
      if (missing.length > 0) await memories.collection.createIndexes(missing.map((i) => ({ key: i.key, name: i.name })));
      await setUpExpiry(sessions, 'expiresAt', 'session_expiry');
      if (!(await existingIndexes(rateLimits)).has(RATE_LIMIT_INDEX.name)) await rateLimits.collection.createIndex(RATE_LIMIT_INDEX.key, { name: RATE_LIMIT_INDEX.name });
      await setUpExpiry(rateLimits, 'resetAt', 'rate_limit_expiry', RATE_LIMIT_GRACE_SECONDS);
      // Issue 9: version claims (history), write intents, Idempotency-Key records (a TTL index removes them after a day).
      const versions = conn.model(VersionRecord.name, VersionRecordSchema, `${this.opts.memoryCollection || 'memories'}_versions`);
      const writeIntents = conn.model(WriteIntentRecord.name, WriteIntentRecordSchema, 'write_intents');
      const idempotency = conn.model(IdempotencyKeyRecord.name, IdempotencyKeyRecordSchema, 'idempotency_keys');
      if (!(await existingIndexes(versions)).has(VERSION_INDEX.name)) await versions.collection.createIndex(VERSION_INDEX.key, { name: VERSION_INDEX.name });
      await setUpExpiry(idempotency, 'createdAt', 'idempotency_expiry', IDEMPOTENCY_TTL_SECONDS);
      // Namespaces (issue 43, decision 0100): memories and versions of an earlier version move to
      // 'default' in place, once (later starts find none to move). Idempotency keys of 'default'
      // keep their form, so nothing to move there.
      await memories.collection.updateMany({ namespace: { $exists: false } }, { $set: { namespace: DEFAULT_NAMESPACE } });
      await versions.collection.updateMany({ namespace: { $exists: false } }, { $set: { namespace: DEFAULT_NAMESPACE } });
      await backfillContentSizes(memories);
      const textSearch = await this.setUpTextSearch(memories);
      this.conn = conn;
      return { memories, tokens, sessions, rateLimits, probe, versions, writeIntents, idempotency, textSearch };
    } catch (e) {
      await conn.close(true).catch(() => undefined);
      throw e;
    }
  }

  /** Creates the text index and checks once that $text works; false on servers without text indexes (FerretDB 1.x). */
  private async setUpTextSearch(memories: Model<MemoryRecord>): Promise<boolean> {
    const { key, ...options } = MEMORY_TEXT_INDEX;
    try {
      if (!(await existingIndexes(memories)).has(options.name)) await memories.collection.createIndex(key, options);
      await memories.collection
        .find({ $text: { $search: 'probe' } }, { projection: { _id: 1 } })
        .limit(1)
        .toArray();
      return true;
    } catch (e) {
      if (isNetworkError(e)) throw e;
      this.logger.log(`MongoDB at ${this.where} has no text indexes (${(e as Error).message.split('\n')[0]}): using the regex fallback search`);
      return false;
    }
  }

  override async ping(): Promise<void> {
    await this.exec((m) => m.memories.db.db!.command({ ping: 1 }));
  }

  override async probe(): Promise<void> {
    const id = `probe-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
    await this.exec(async (m) => {
      await m.probe.create({ _id: id, at: new Date() });
      const back = await m.probe.findById(id).lean().exec();
      await m.probe.deleteOne({ _id: id }).exec();
      if (!back) throw new BackendUnavailableError('Document database', `the probe document written to MongoDB at ${this.where} was not read back`);
    });
  }

  /** Whether search uses $text (true), the regex fallback (false), or is not known yet (null: never connected). */
  textSearch(): boolean | null {
    return this.models ? this.models.textSearch : null;
  }

  override describe(): string {
    const db = this.opts.dbName ?? this.conn?.name ?? 'from the URI';
    return `MongoDB database '${db}' at ${this.where}`;
  }

  override async close(): Promise<void> {
    this.closed = true;
    this.memories.vectorCache.reset();
    const pending = this.connecting;
    if (pending) await pending.catch(() => undefined);
    this.models = undefined;
    const conn = this.conn;
    this.conn = undefined;
    if (conn) await conn.close(true).catch(() => undefined);
  }
}

type HasCollection = Pick<Model<unknown>, 'collection'>;

/**
 * Names of the indexes a collection has (none when it does not exist yet). Indexes are created
 * only when missing: cheaper at start-up, and FerretDB 1.24 drops the connection when asked to
 * create an index that already exists.
 */
async function existingIndexes(model: HasCollection): Promise<Set<string>> {
  try {
    const list = (await model.collection.listIndexes().toArray()) as { name?: unknown }[];
    return new Set(list.map((i) => String(i.name)));
  } catch (e) {
    if ((e as { code?: number }).code === 26) return new Set(); // NamespaceNotFound
    throw e;
  }
}

/**
 * A TTL index (`name`) on a date field removes expired documents (sessions, ended rate-limit
 * windows) `expireAfterSeconds` after that date; servers without TTL indexes get a plain index
 * (`name`_plain): reads skip expired documents anyway.
 */
async function setUpExpiry(model: HasCollection, field: string, name: string, expireAfterSeconds = 0): Promise<void> {
  const existing = await existingIndexes(model);
  if (existing.has(name) || existing.has(`${name}_plain`)) return;
  try {
    await model.collection.createIndex({ [field]: 1 }, { name, expireAfterSeconds });
  } catch (e) {
    if (isNetworkError(e)) throw e;
    await model.collection.createIndex({ [field]: 1 }, { name: `${name}_plain` });
  }
}

function isNetworkError(e: unknown): boolean {
  const name = (e as { name?: string })?.name ?? '';
  return /Network|ServerSelection|NotConnected|TopologyClosed|PoolCleared/.test(name);
}
