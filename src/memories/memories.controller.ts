import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query, Req, Res, StreamableFile } from '@nestjs/common';
import { ApiCreatedResponse, ApiExtraModels, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiProduces, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { RequireScopes } from '../common/auth/decorators';
import { baseUrl } from '../common/base-url';
import { AppConfig } from '../config/app-config';
import { BulkDeleteDto } from './dto/bulk-delete.dto';
import { CreateMemoryDto } from './dto/create-memory.dto';
import { DownloadQueryDto } from './dto/download-query.dto';
import { ListMemoriesQueryDto } from './dto/list-memories-query.dto';
import {
  BulkDeleteResponseDto,
  CreatedMemoryResponseDto,
  DeleteMemoryResponseDto,
  DownloadUrlResponseDto,
  MemoryListResponseDto,
  MemoryResponseDto,
  StatsResponseDto,
} from './dto/memory-response.dto';
import { UpdateMemoryDto } from './dto/update-memory.dto';
import { MARKDOWN_TYPE, MemoriesService } from './memories.service';
import { mapMemory, mapStats } from './memory.mapper';

const NOT_FOUND = { description: 'Memory not found (also for an id that is not 24 lowercase hex characters)' };

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
  list(@Query() query: ListMemoriesQueryDto): Promise<MemoryListResponseDto> {
    return this.memories.list(query);
  }

  @Post('memories')
  @HttpCode(201)
  @RequireScopes('memory:write')
  @ApiOperation({ summary: 'Create a memory', description: 'Answers the memory and `similar`: up to 3 stored memories of the same project that look like near-copies (update one of them instead of adding another).' })
  @ApiCreatedResponse({ type: CreatedMemoryResponseDto })
  async create(@Body() body: CreateMemoryDto): Promise<CreatedMemoryResponseDto> {
    const doc = await this.memories.create(body);
    return { ok: true, memory: mapMemory(doc), similar: await this.memories.similarTo(doc) };
  }

  /** Deletes each id; unknown ids are listed in `missing`. */
  @Post('memories/bulk-delete')
  @HttpCode(200)
  @RequireScopes('memory:delete')
  @ApiOperation({ summary: 'Delete many memories (at most 1000 ids)' })
  async bulkDelete(@Body() body: BulkDeleteDto): Promise<BulkDeleteResponseDto> {
    const { deleted, missing } = await this.memories.bulkDelete(body.ids);
    return { ok: true, deleted: deleted.length, ids: deleted, missing };
  }

  @Get('memories/:memory_id')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'Fetch a memory with its full content' })
  @ApiNotFoundResponse(NOT_FOUND)
  async get(@Param('memory_id') id: string): Promise<MemoryResponseDto> {
    return { ok: true, memory: mapMemory(await this.memories.get(id)) };
  }

  /** Absent or null fields are left as they are; "" clears title, agent and project; [] clears tags. */
  @Patch('memories/:memory_id')
  @RequireScopes('memory:write')
  @ApiOperation({ summary: 'Update some fields of a memory' })
  @ApiNotFoundResponse(NOT_FOUND)
  async update(@Param('memory_id') id: string, @Body() body: UpdateMemoryDto): Promise<MemoryResponseDto> {
    return { ok: true, memory: mapMemory(await this.memories.update(id, body)) };
  }

  @Delete('memories/:memory_id')
  @RequireScopes('memory:delete')
  @ApiOperation({ summary: 'Delete a memory' })
  @ApiNotFoundResponse(NOT_FOUND)
  async delete(@Param('memory_id') id: string): Promise<DeleteMemoryResponseDto> {
    await this.memories.delete(id);
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
    @Param('memory_id') id: string,
    @Query() query: DownloadQueryDto,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<StreamableFile | DownloadUrlResponseDto> {
    if (query.url) {
      const signed = await this.memories.signedDownload(id, baseUrl(this.cfg, req));
      return { ok: true, url: signed.url, expires_in: signed.ttl, expires_at: signed.expiresAt.toISOString() };
    }
    const body = await this.memories.download(id);
    res.setHeader('Cache-Control', 'private, no-store');
    return new StreamableFile(body, { type: MARKDOWN_TYPE, disposition: `attachment; filename="${id}.md"`, length: body.length });
  }

  @Get('stats')
  @RequireScopes('memory:read')
  @ApiTags('memories')
  @ApiOperation({ summary: 'Counts by type, scope, project and agent' })
  async stats(): Promise<StatsResponseDto> {
    return { ok: true, stats: mapStats(await this.memories.stats()) };
  }
}
