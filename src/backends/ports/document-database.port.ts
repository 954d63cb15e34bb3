import type { IdempotencyRepository } from './idempotency.repository';
import type { AuditRepository } from './audit.repository';
import type { EmbeddingQueue } from './embedding-queue.port';
import type { MemoryIndex } from './memory-index.port';
import type { RateLimitRepository } from './rate-limit.repository';
import type { SessionRepository } from './session.repository';
import type { TokenRepository } from './token.repository';
import type { WriteIntentRepository } from './write-intent.repository';

/**
 * One document database connection (embedded SQLite file, or a MongoDB connection) and the
 * repositories that live in it.
 */
export abstract class DocumentDatabase {
  /** 'sqlite' | 'mongodb' */
  abstract readonly kind: string;
  abstract readonly memories: MemoryIndex;
  /** Vectors and the embedding queue of the same memories (often the same adapter object as `memories`). */
  abstract readonly embeddings: EmbeddingQueue;
  abstract readonly tokens: TokenRepository;
  abstract readonly sessions: SessionRepository;
  abstract readonly rateLimits: RateLimitRepository;
  abstract readonly writeIntents: WriteIntentRepository;
  abstract readonly idempotency: IdempotencyRepository;
  abstract readonly audit: AuditRepository;
  /** Open the connection, create tables/collections and indexes. Must not throw when the server is down (it reconnects later). */
  abstract init(): Promise<void>;
  /** Write, read and delete a probe document; throws BackendUnavailableError with the reason. */
  abstract probe(): Promise<void>;
  /** Cheap health check for /api/status; throws BackendUnavailableError. */
  abstract ping(): Promise<void>;
  abstract describe(): string;
  abstract close(): Promise<void>;
}
