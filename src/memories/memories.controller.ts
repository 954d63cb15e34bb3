import { Audited } from '../audit/audited.decorator';
import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res, StreamableFile, UseInterceptors } from '@nestjs/common';
import {
  ApiCreatedResponse,
  ApiExtraModels,
  ApiHeader,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiParam,
  ApiOperation,
  ApiPreconditionFailedResponse,
  ApiProduces,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { RequireScopes } from '../common/auth/decorators';
import { RequestNamespace } from '../namespaces/request-namespace';
import { RequestValidationError } from '../common/errors';
import { baseUrl } from '../common/base-url';
import { AppConfig } from '../config/app-config';
import { BulkDeleteDto } from './dto/bulk-delete.dto';
import { CreateMemoryDto } from './dto/create-memory.dto';
import { updateHint } from './supersession';
import { DownloadQueryDto } from './dto/download-query.dto';
import { ListMemoriesQueryDto } from './dto/list-memories-query.dto';
import {
  BulkDeleteResponseDto,
  CreatedMemoryResponseDto,
  DeleteMemoryResponseDto,
  DownloadUrlResponseDto,
  MemoryListResponseDto,
  MemoryDto,
  MemoryResponseDto,
  StatsResponseDto,
  WrittenMemoryDto,
} from './dto/memory-response.dto';
import { VersionListQueryDto, VersionListResponseDto, VersionResponseDto } from './dto/memory-versions.dto';
import { UpdateMemoryDto } from './dto/update-memory.dto';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { MARKDOWN_TYPE, MemoriesService } from './memories.service';
import { canRead, mapMemory, mapStats, mapVersion, mapWritten, sentFields } from './memory.mapper';
import { authorOf, ifMatchVersion, setEtag } from './write-headers';

const NOT_FOUND = { description: 'Memory not found (also for an id that is not 24 lowercase hex characters)' };
const IF_MATCH = {
  name: 'If-Match',
  required: false,
  // What ifMatchVersion accepts: *, or a version's ETag ("3", or 3), first of a list; a weak tag is well formed but never matches.
  schema: { type: 'string', pattern: '^\\s*(\\*|(W/)?"?[1-9][0-9]{0,14}"?)\\s*(,.*)?$' },
  description:
    'The strong ETag of the version the change is based on (e.g. "3"), or *. Another current version → 412 with current_version; a weak tag (W/"3") never matches (RFC 9110 strong comparison) → 412',
};
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  required: false,
  // What the interceptor accepts (idempotency.interceptor.ts KEY): 1 to 255 printable ASCII characters, no spaces.
  schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x21-\\x7e]+$' },
  description: 'Same key + same body within 24 h replays the first response (header Idempotent-Replayed: true); same key + another body → 422',
};
/** PATCH and restore: the whole memory for a caller that may read it, else only what it wrote (decision 0050). */
const WRITE_ANSWER = {
  description: 'The memory as written. A token without memory:read gets only id, version, created_at, updated_at and the fields it sent (decision 0050).',
  schema: {
    type: 'object',
    required: ['ok', 'memory'],
    properties: { ok: { type: 'boolean', example: true }, memory: { anyOf: [{ $ref: getSchemaPath(MemoryDto) }, { $ref: getSchemaPath(WrittenMemoryDto) }] } },
  },
};
const PRECONDITION = { description: 'If-Match does not name the current version; the body has current_version' };

/** A version number in a path (1, 2, …); anything else is a 422. */
function versionParam(raw: string): number {
  if (!/^[1-9][0-9]{0,9}$/.test(raw)) throw RequestValidationError.one(['path', 'version'], 'Input should be a positive integer', 'int_parsing', raw);
  return Number(raw);
}

@ApiTags('memories')
@Controller('api')
export class MemoriesController {
  constructor(
    private readonly memories: MemoriesService,
    private readonly cfg: AppConfig,
  ) {}

  /** List (q empty: newest first, offset or cursor pages) or search (q non-empty: relevance first). */
  @Get('memories')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'List or search memories' })
  @ApiOkResponse({ type: MemoryListResponseDto })
  async list(@RequestNamespace() ns: string, @Query() query: ListMemoriesQueryDto, @Res({ passthrough: true }) res: Response): Promise<MemoryListResponseDto> {
    const page = await this.memories.list(ns, query);
    // The mode the search really ran in (hybrid falls back to keyword without a model): /metrics labels by it.
    if (page.search_mode) res.locals.searchMode = page.search_mode;
    return page;
  }

  @Post('memories')
  @HttpCode(201)
  @RequireScopes('memory:write')
  @ApiOperation({
    summary: 'Create a memory',
    description:
      'Answers the memory and `similar`: up to 3 stored memories of the same project that look like near-copies (update one of them instead of adding another). `supersedes` names older memories this one replaces (they drop out of searches and lists); a hint with `likely_update` suggests it.',
  })
  @ApiCreatedResponse({ type: CreatedMemoryResponseDto })
  @ApiHeader(IDEMPOTENCY_KEY)
  @UseInterceptors(IdempotencyInterceptor)
  async create(@RequestNamespace() ns: string, @Body() body: CreateMemoryDto, @Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<CreatedMemoryResponseDto> {
    const doc = await this.memories.create(ns, body, { author: authorOf(req) });
    setEtag(res, doc.version);
    // Everything in `memory` is what the caller sent; `similar` names stored memories, so only a reader gets it (decision 0050).
    const similar = canRead(req.principal) ? await this.memories.similarTo(doc) : [];
    const hint = updateHint(similar);
    return { ok: true, memory: mapMemory(doc), similar, ...(hint ? { hint } : {}) };
  }

  /** Deletes each id; unknown ids are listed in `missing`. */
  @Post('memories/bulk-delete')
  @HttpCode(200)
  @Audited('memory.bulk_delete', {
    target: () => null,
    detail: (req, r) => ({ requested: (req.body as Partial<BulkDeleteDto>).ids?.length ?? 0, deleted: (r as BulkDeleteResponseDto).deleted, ids: (r as BulkDeleteResponseDto).ids }),
  })
  @RequireScopes('memory:delete')
  @ApiOperation({ summary: 'Delete many memories (at most 1000 ids)' })
  @ApiHeader(IDEMPOTENCY_KEY)
  @UseInterceptors(IdempotencyInterceptor)
  async bulkDelete(@RequestNamespace() ns: string, @Body() body: BulkDeleteDto): Promise<BulkDeleteResponseDto> {
    const { deleted, missing } = await this.memories.bulkDelete(ns, body.ids);
    return { ok: true, deleted: deleted.length, ids: deleted, missing };
  }

  @Get('memories/:memory_id')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'Fetch a memory with its full content' })
  @ApiNotFoundResponse(NOT_FOUND)
  async get(@RequestNamespace() ns: string, @Param('memory_id') id: string, @Res({ passthrough: true }) res: Response): Promise<MemoryResponseDto> {
    const doc = await this.memories.get(ns, id);
    setEtag(res, doc.version);
    return { ok: true, memory: mapMemory(doc) };
  }

  /** Absent or null fields are left as they are; "" clears title, agent and project; [] clears tags. */
  @Patch('memories/:memory_id')
  @RequireScopes('memory:write')
  @ApiOperation({ summary: 'Update some fields of a memory' })
  @ApiExtraModels(MemoryDto, WrittenMemoryDto)
  @ApiOkResponse(WRITE_ANSWER)
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiHeader(IF_MATCH)
  @ApiPreconditionFailedResponse(PRECONDITION)
  async update(
    @RequestNamespace() ns: string,
    @Param('memory_id') id: string,
    @Body() body: UpdateMemoryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ ok: true; memory: MemoryDto | WrittenMemoryDto }> {
    const doc = await this.memories.update(ns, id, body, { author: authorOf(req), ifMatch: ifMatchVersion(req) });
    setEtag(res, doc.version);
    return { ok: true, memory: mapWritten(doc, canRead(req.principal), sentFields(body)) };
  }

  @Delete('memories/:memory_id')
  @Audited('memory.delete')
  @RequireScopes('memory:delete')
  @ApiOperation({ summary: 'Delete a memory' })
  @ApiNotFoundResponse(NOT_FOUND)
  @ApiHeader(IF_MATCH)
  @ApiPreconditionFailedResponse(PRECONDITION)
  async delete(@RequestNamespace() ns: string, @Param('memory_id') id: string, @Req() req: Request): Promise<DeleteMemoryResponseDto> {
    await this.memories.delete(ns, id, { ifMatch: ifMatchVersion(req) });
    return { ok: true, deleted: true, id };
  }

  /** url=false: the stored markdown file; url=true: a time-limited URL that works without a token. */
  @Get('memories/:memory_id/download')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'Download the markdown file, or get a signed download URL' })
  @ApiProduces('text/markdown', 'application/json')
  @ApiExtraModels(DownloadUrlResponseDto)
  @ApiOkResponse({
    description: 'The markdown file (url=false) or a signed URL (url=true)',
    content: {
      'text/markdown': { schema: { type: 'string' } },
      'application/json': { schema: { $ref: getSchemaPath(DownloadUrlResponseDto) } },
    },
  })
  @ApiNotFoundResponse(NOT_FOUND)
  async download(
    @RequestNamespace() ns: string,
    @Param('memory_id') id: string,
    @Query() query: DownloadQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile | DownloadUrlResponseDto> {
    if (query.url) {
      const p = req.principal;
      const signed = await this.memories.signedDownload(ns, id, baseUrl(this.cfg, req), p?.kind === 'token' ? p.tokenId : undefined);
      return { ok: true, url: signed.url, expires_in: signed.ttl, expires_at: signed.expiresAt.toISOString() };
    }
    const body = await this.memories.download(ns, id);
    res.setHeader('Cache-Control', 'private, no-store');
    return new StreamableFile(body, { type: MARKDOWN_TYPE, disposition: `attachment; filename="${id}.md"`, length: body.length });
  }

  /** Kept versions, newest first (how many are kept: the memory_history_keep setting, default 20). */
  @Get('memories/:memory_id/versions')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'List the kept versions of a memory (newest first)' })
  @ApiNotFoundResponse(NOT_FOUND)
  async versions(@RequestNamespace() ns: string, @Param('memory_id') id: string, @Query() q: VersionListQueryDto): Promise<VersionListResponseDto> {
    const offset = (q.page - 1) * q.limit;
    const { rows, total, current } = await this.memories.versions(ns, id, q.limit, offset);
    return {
      ok: true,
      rows: rows.map((r) => mapVersion(r, current)),
      count: rows.length,
      total,
      page: q.page,
      page_size: q.limit,
      has_next: offset + rows.length < total,
      current_version: current,
    };
  }

  @Get('memories/:memory_id/versions/:version')
  @ApiParam({ name: 'version', schema: { type: 'integer', minimum: 1, maximum: 9999999999 }, description: 'A kept version number' })
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'Fetch one kept version of a memory' })
  @ApiNotFoundResponse({ description: 'Memory not found, or that version is not kept' })
  async version(@RequestNamespace() ns: string, @Param('memory_id') id: string, @Param('version') version: string): Promise<VersionResponseDto> {
    const n = versionParam(version);
    const { doc, entry } = await this.memories.version(ns, id, n);
    const current = (await this.memories.versions(ns, id, 1, 0)).current;
    return { ok: true, version: mapVersion(entry, current), memory: mapMemory(doc) };
  }

  /** Makes a kept version current again, as a new version (the versions in between stay in the history). */
  @Post('memories/:memory_id/versions/:version/restore')
  @ApiParam({ name: 'version', schema: { type: 'integer', minimum: 1, maximum: 9999999999 }, description: 'A kept version number' })
  @HttpCode(200)
  @Audited('memory.restore', { detail: (req) => ({ version: Number(req.params.version) }) })
  @RequireScopes('memory:write')
  @ApiOperation({ summary: 'Restore a kept version (as a new version)' })
  @ApiExtraModels(MemoryDto, WrittenMemoryDto)
  @ApiOkResponse(WRITE_ANSWER)
  @ApiNotFoundResponse({ description: 'Memory not found, or that version is not kept' })
  @ApiHeader(IF_MATCH)
  @ApiPreconditionFailedResponse(PRECONDITION)
  async restore(
    @RequestNamespace() ns: string,
    @Param('memory_id') id: string,
    @Param('version') version: string,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ ok: true; memory: MemoryDto | WrittenMemoryDto }> {
    const doc = await this.memories.restore(ns, id, versionParam(version), { author: authorOf(req), ifMatch: ifMatchVersion(req) });
    setEtag(res, doc.version);
    return { ok: true, memory: mapWritten(doc, canRead(req.principal)) };
  }

  @Get('stats')
  @RequireScopes('memory:read')
  @ApiTags('memories')
  @ApiOperation({ summary: 'Counts by type, scope, project and agent' })
  async stats(@RequestNamespace() ns: string): Promise<StatsResponseDto> {
    return { ok: true, stats: mapStats(await this.memories.stats(ns)) };
  }
}
