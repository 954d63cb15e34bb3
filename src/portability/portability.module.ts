import { Module } from '@nestjs/common';
import { MemoriesModule } from '../memories/memories.module';
import { ExportService, MemoryHistorySource } from './export.service';
import { StoredHistorySource } from './history-source';
import { ImportService } from './import.service';
import { MigrationController } from './migration.controller';
import { MigrationJobService } from './migration-job.service';
import { PortabilityController } from './portability.controller';

/** Export, import, migration between backends, backup and restore (issue 12). */
@Module({
  imports: [MemoriesModule],
  controllers: [PortabilityController, MigrationController],
  providers: [ExportService, ImportService, MigrationJobService, { provide: MemoryHistorySource, useClass: StoredHistorySource }],
  exports: [ExportService, ImportService],
})
export class PortabilityModule {}
