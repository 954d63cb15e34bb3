import { NamespacesController } from '../namespaces/namespaces.controller';
import { Module } from '@nestjs/common';
import { NamespaceQuotas } from '../namespaces/namespace-quotas';
import { AuditModule } from '../audit/audit.module';
import { FilesController } from './files.controller';
import { MemoriesController } from './memories.controller';
import { MemoriesService } from './memories.service';
import { ReindexService } from './reindex.service';
import { WriteSweeper } from './write-sweeper.service';

/** The memory API (spec §4, CONTRACT §3) over the MemoryIndex and ObjectStore ports. */
@Module({
  imports: [AuditModule], // @Audited on delete and bulk delete (also when the CLI builds this module without AppModule)
  controllers: [MemoriesController, FilesController, NamespacesController],
  providers: [MemoriesService, ReindexService, WriteSweeper, NamespaceQuotas],
  exports: [MemoriesService, ReindexService, WriteSweeper, NamespaceQuotas],
})
export class MemoriesModule {}
