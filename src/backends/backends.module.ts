import { Global, Module } from '@nestjs/common';
import { BackendFactory } from './backend-factory';
import { BackendsService } from './backends.service';
import { DefaultBackendFactory } from './default-backend-factory';
import { delegateTo } from './delegate';
import { MemoryIndex } from './ports/memory-index.port';
import { ObjectStore } from './ports/object-store.port';
import { SessionRepository } from './ports/session.repository';
import { TokenRepository } from './ports/token.repository';

/** The ports, bound to delegates of the active adapters held by BackendsService. */
@Global()
@Module({
  providers: [
    { provide: BackendFactory, useClass: DefaultBackendFactory },
    BackendsService,
    { provide: MemoryIndex, useFactory: (b: BackendsService) => delegateTo(() => b.docdb?.memories), inject: [BackendsService] },
    { provide: TokenRepository, useFactory: (b: BackendsService) => delegateTo(() => b.docdb?.tokens), inject: [BackendsService] },
    { provide: SessionRepository, useFactory: (b: BackendsService) => delegateTo(() => b.docdb?.sessions), inject: [BackendsService] },
    { provide: ObjectStore, useFactory: (b: BackendsService) => delegateTo(() => b.objstore), inject: [BackendsService] },
  ],
  exports: [BackendsService, MemoryIndex, TokenRepository, SessionRepository, ObjectStore],
})
export class BackendsModule {}
