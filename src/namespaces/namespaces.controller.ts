import { Body, Controller, HttpCode, Post, Req } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsString, MaxLength, ValidateIf } from 'class-validator';
import type { Request } from 'express';
import { Audited } from '../audit/audited.decorator';
import { RequireScopes } from '../common/auth/decorators';
import { IdempotencyRepository } from '../backends/ports/idempotency.repository';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { MemoryFilter } from '../backends/ports/memory.model';
import { MemoriesService } from '../memories/memories.service';
import { NAMESPACE_HEADER, NAMESPACE_MAX_LENGTH, NAMESPACE_PATTERN, NamespaceRequestError } from './namespace';
import { RequestNamespace } from './request-namespace';

/** What a purge may narrow itself to (the namespace itself comes from the header or a `namespace` field). */
export class PurgeNamespaceDto {
  @ApiPropertyOptional({ description: 'Only the memories of this project', maxLength: 200 })
  @ValidateIf((_o, v) => v !== undefined) // absent: every memory; null is no project/agent name (422)
  @IsString({ message: 'Input should be a valid string' })
  @MaxLength(200)
  project?: string;

  @ApiPropertyOptional({ description: 'Only the memories of this agent', maxLength: 200 })
  @ValidateIf((_o, v) => v !== undefined) // absent: every memory; null is no project/agent name (422)
  @IsString({ message: 'Input should be a valid string' })
  @MaxLength(200)
  agent?: string;
}

export class PurgeReceiptDto {
  @ApiProperty({ example: true })
  ok: true;
  @ApiProperty({ example: 'acme/alice' })
  namespace: string;
  @ApiProperty({ example: 1000, description: 'Memories deleted, each with its versions, vector, embedding job and objects' })
  deleted: number;
  @ApiProperty({ example: '2026-11-27T09:00:00.000Z', format: 'date-time' })
  finished_at: string;
}

/** Memories removed per round (each round one bulk delete; a purge cut short is finished by running it again). */
const ROUND = 500;

/**
 * Issue 43 "forget this tenant": POST /api/namespaces/purge deletes every memory of the chosen
 * namespace (or of a project/agent in it) through the ordinary delete path (its versions, vector,
 * embedding job and objects go with it, the sweep finishing any delete a crash interrupts), in
 * rounds, so a purge cut short is resumed by sending it again. The namespace must be chosen
 * explicitly (header or `namespace` field), never the default resolution; the receipt (counts,
 * who, when) is in the audit log as namespace.purge. The namespace's Idempotency-Key records go
 * too (their stored answers hold whole memories for a day): all of them at the end of a whole
 * purge; in a narrowed one, before each round, those whose answer shows a memory of the round.
 */
@ApiTags('memories')
@Controller('api/namespaces')
export class NamespacesController {
  constructor(
    private readonly memories: MemoriesService,
    private readonly index: MemoryIndex,
    private readonly idempotency: IdempotencyRepository,
  ) {}

  @Post('purge')
  @HttpCode(200)
  @RequireScopes('memory:delete')
  @Audited('namespace.purge', {
    target: (req) => req.namespaceChoice ?? null,
    detail: (req, r) => ({ ...(req.body as PurgeNamespaceDto), deleted: (r as PurgeReceiptDto).deleted, finished_at: (r as PurgeReceiptDto).finished_at }),
  })
  @ApiOperation({ summary: 'Delete every memory of a namespace (or of a project/agent in it); send again to resume' })
  @ApiHeader({
    name: 'X-Memory-Namespace',
    required: true,
    description: "The namespace to purge, named explicitly (a `namespace` body field does the same); outside the caller's namespaces: 403",
    schema: { type: 'string', pattern: NAMESPACE_PATTERN, maxLength: NAMESPACE_MAX_LENGTH, example: 'acme/alice' },
  })
  @ApiOkResponse({ type: PurgeReceiptDto })
  async purge(@RequestNamespace() ns: string, @Body() body: PurgeNamespaceDto, @Req() req: Request): Promise<PurgeReceiptDto> {
    if (req.namespaceChoice === undefined) throw new NamespaceRequestError(`Name the namespace to purge in the ${NAMESPACE_HEADER} header or a "namespace" field`);
    const filter: MemoryFilter = { namespace: ns };
    if (body.project !== undefined) filter.project = body.project;
    if (body.agent !== undefined) filter.agent = body.agent;
    const narrowed = body.project !== undefined || body.agent !== undefined;
    let deleted = 0;
    for (;;) {
      const page = await this.index.list({ filter, limit: ROUND, offset: 0 });
      if (page.rows.length === 0) break;
      const ids = page.rows.map((r) => r.id);
      // Before the memories: a purge cut short between the two would not find these records again.
      if (narrowed) await this.idempotency.forget(ns, ids);
      const res = await this.memories.bulkDelete(ns, ids);
      deleted += res.deleted.length;
      if (res.deleted.length === 0) break; // deleted by someone else meanwhile: the next round sees what is left
    }
    if (!narrowed) await this.idempotency.forget(ns);
    return { ok: true, namespace: ns, deleted, finished_at: new Date().toISOString() };
  }
}
