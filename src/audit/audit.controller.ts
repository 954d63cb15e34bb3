import { Controller, Get, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import type { AuditEntry } from '../backends/ports/audit.repository';
import { AdminOnly } from '../common/auth/decorators';
import { AuditService } from './audit.service';
import { AuditEntryDto, AuditListResponseDto, AuditQueryDto } from './dto/audit.dto';

export function mapAuditEntry(e: AuditEntry): AuditEntryDto {
  return {
    id: e.id,
    at: e.at.toISOString(),
    action: e.action,
    outcome: e.outcome,
    actor: { kind: e.actor.kind, id: e.actor.id, name: e.actor.name },
    target: e.target,
    address: e.address,
    request_id: e.requestId,
    detail: e.detail,
  };
}

@ApiTags('audit')
@AdminOnly()
@Controller('api/audit')
export class AuditController {
  constructor(private readonly audit: AuditService) {}

  @Get()
  @ApiOperation({ summary: 'The audit log, newest first (admin actions and destructive memory actions), paged and filterable' })
  @ApiOkResponse({ type: AuditListResponseDto })
  @ApiUnprocessableEntityResponse({ description: 'Bad limit, cursor, action or since' })
  async list(@Query() q: AuditQueryDto): Promise<AuditListResponseDto> {
    const limit = q.limit ?? 50;
    const { entries, hasMore } = await this.audit.list({ limit, action: q.action, actor: q.actor, since: q.since ? new Date(q.since) : undefined, before: q.cursor });
    return { ok: true, entries: entries.map(mapAuditEntry), next_cursor: hasMore && entries.length > 0 ? entries[entries.length - 1].id : null };
  }
}
