import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { BackendFactory } from './backend-factory';
import { BackendsService } from './backends.service';
import { DefaultBackendFactory } from './default-backend-factory';
import { delegateTo } from './delegate';
import { PinBackendsMiddleware } from './pin-backends.middleware';
import { AuditRepository } from './ports/audit.repository';
import { IdempotencyRepository } from './ports/idempotency.repository';
import { EmbeddingQueue } from './ports/embedding-queue.port';
import { MemoryIndex } from './ports/memory-index.port';
import { ObjectStore } from './ports/object-store.port';
import { RateLimitRepository } from './ports/rate-limit.repository';
import { SessionRepository } from './ports/session.repository';
import { TokenRepository } from './ports/token.repository';
import { WriteIntentRepository } from './ports/write-intent.repository';

/**
 * The ports, bound to delegates of the adapters held by BackendsService: those pinned for the
 * current request (PinBackendsMiddleware, on every route), else the active ones. A global module's
 * middleware runs before the other modules' (the admin session reads the pinned session store).
 */
@Global()
@Module({
  providers: [
    { provide: BackendFactory, useClass: DefaultBackendFactory },
    BackendsService,
    { provide: MemoryIndex, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.memories), inject: [BackendsService] },
    { provide: EmbeddingQueue, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.embeddings), inject: [BackendsService] },
    { provide: TokenRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.tokens), inject: [BackendsService] },
    { provide: SessionRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.sessions), inject: [BackendsService] },
    { provide: RateLimitRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.rateLimits), inject: [BackendsService] },
    { provide: WriteIntentRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.writeIntents), inject: [BackendsService] },
    { provide: IdempotencyRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.idempotency), inject: [BackendsService] },
    { provide: AuditRepository, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.db.audit), inject: [BackendsService] },
    { provide: ObjectStore, useFactory: (b: BackendsService) => delegateTo(() => b.current()?.store), inject: [BackendsService] },
  ],
  exports: [BackendsService, MemoryIndex, EmbeddingQueue, TokenRepository, SessionRepository, RateLimitRepository, ObjectStore, WriteIntentRepository, IdempotencyRepository, AuditRepository],
})
export class BackendsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(PinBackendsMiddleware).forRoutes('*');
  }
}
