import { Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiConflictResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Audited } from '../audit/audited.decorator';
import { AdminOnly } from '../common/auth/decorators';
import { MigrationJob, MigrationJobService, MigrationOffer } from './migration-job.service';

@ApiTags('admin')
@Controller('api/migrate')
export class MigrationController {
  constructor(private readonly jobs: MigrationJobService) {}

  /** What the earlier backends hold and the state of the last copy. */
  @Get()
  @AdminOnly()
  @ApiOperation({ summary: 'After a backend change: how many memories the earlier backends hold, and the copy job' })
  offer(): Promise<MigrationOffer> {
    return this.jobs.offer();
  }

  /** Copies memories, files, tokens and sessions from the earlier backends into the active ones (background job; poll GET). */
  @Post()
  @HttpCode(202)
  @AdminOnly()
  @Audited('backend.migrate', { target: () => null })
  @ApiOperation({ summary: 'Copy the memories of the earlier backends to the active ones' })
  @ApiConflictResponse({ description: 'Nothing to copy (the backends have not changed), or a copy is already running' })
  async start(): Promise<{ ok: true; job: MigrationJob }> {
    return { ok: true, job: await this.jobs.start() };
  }
}
