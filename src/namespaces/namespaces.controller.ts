import { Body, Controller, Get, HttpCode, Post, Query, Req } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiProperty, ApiPropertyOptional, ApiTags } from '@nestjs/swagger';
import { IsOptional, IsString, MaxLength, ValidateIf } from 'class-validator';
import type { Request } from 'express';
import { Audited } from '../audit/audited.decorator';
import { RequireScopes } from '../common/auth/decorators';
import { IdempotencyRepository } from '../backends/ports/idempotency.repository';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { MemoryFilter } from '../backends/ports/memory.model';
import { MemoriesService } from '../memories/memories.service';
import { NAMESPACE_HEADER, NAMESPACE_MAX_LENGTH, NAMESPACE_PATTERN, NamespaceRequestError } from './namespace';
import { QueryInt } from '../memories/dto/validators';
import { visibleNamespaces } from './namespace-listing';
import { NamespaceQuotas } from './namespace-quotas';
import { bindingOf, RequestNamespace, requestNamespace } from './request-namespace';

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

/** Query of GET /api/namespaces: a page of names, after the last one of the previous page. */
export class ListNamespacesQueryDto {
  /** Page size, 1 to 200. */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 200, default: 100 })
  @IsOptional()
  @QueryInt({ min: 1, max: 200 })
  limit?: number = 100;

  /** The previous page's `next_cursor`: only namespaces sorting after this name. */
  @ApiPropertyOptional({ example: 'acme/alice', maxLength: NAMESPACE_MAX_LENGTH })
  @IsOptional()
  @IsString({ message: 'Input should be a valid string', context: { type: 'string_type', ctx: {} } })
  @MaxLength(NAMESPACE_MAX_LENGTH, { message: `String should have at most ${NAMESPACE_MAX_LENGTH} characters`, context: { type: 'string_too_long', ctx: { max_length: NAMESPACE_MAX_LENGTH } } })
  after?: string;
}

export class NamespaceUsageDto {
  @ApiProperty({ example: 'acme/alice', pattern: NAMESPACE_PATTERN })
  namespace: string;
  @ApiProperty({ example: 1200, description: 'Memories in the namespace' })
  memories: number;
  @ApiProperty({ example: 3400000, description: 'UTF-8 bytes of their current content' })
  bytes: number;
}

export class NamespaceQuotaDto {
  @ApiProperty({ type: 'integer', nullable: true, example: null, description: 'Memories a namespace may hold (MEMSTORE_NAMESPACE_MAX_MEMORIES); null: no quota' })
  max_memories: number | null;
  @ApiProperty({ type: 'integer', nullable: true, example: null, description: 'Bytes of content a namespace may hold (MEMSTORE_NAMESPACE_MAX_BYTES); null: no quota' })
  max_bytes: number | null;
}

export class NamespaceListResponseDto {
  @ApiProperty({ example: true })
  ok: true;
  @ApiProperty({
    type: [NamespaceUsageDto],
    description: "By name. A token sees the namespaces of its binding that hold memories, and its exact names even when empty; the admin and a '*' token see all",
  })
  namespaces: NamespaceUsageDto[];
  @ApiProperty({ example: false })
  has_next: boolean;
  @ApiProperty({ type: String, nullable: true, example: null, description: 'Pass as `after` for the next page; null on the last' })
  next_cursor: string | null;
  @ApiProperty({ type: NamespaceQuotaDto, description: 'The quotas every namespace has' })
  quota: NamespaceQuotaDto;
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
    private readonly quotas: NamespaceQuotas,
    private readonly idempotency: IdempotencyRepository,
  ) {}

  @Get()
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'The namespaces the caller may see, with their memories and bytes (by name, paged); X-Memory-Namespace narrows it to one' })
  @ApiOkResponse({ type: NamespaceListResponseDto })
  async list(@Query() q: ListNamespacesQueryDto, @Req() req: Request): Promise<NamespaceListResponseDto> {
    const limit = q.limit ?? 100;
    // A namespace chosen by header or field narrows the list to it (403 outside the caller's binding).
    const chosen = req.namespaceChoice !== undefined || req.namespaceChoiceProblem !== undefined ? [requestNamespace(req)] : null;
    const rows = await visibleNamespaces(this.index, chosen ?? bindingOf(req.principal), q.after, limit);
    const page = rows.slice(0, limit);
    const hasNext = rows.length > limit;
    const { maxMemories, maxBytes } = this.quotas.limits;
    return {
      ok: true,
      namespaces: page.map((r) => ({ namespace: r.namespace, memories: r.memories, bytes: r.bytes })),
      has_next: hasNext,
      next_cursor: hasNext ? page[page.length - 1].namespace : null,
      quota: { max_memories: maxMemories, max_bytes: maxBytes },
    };
  }

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
