import { Controller, Get, HttpCode, Logger, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import * as fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { RequireScopes } from '../common/auth/decorators';
import { AppError, RequestValidationError } from '../common/errors';
import { sendError } from '../common/http-exception.filter';
import { MemoriesService } from '../memories/memories.service';
import { ExportQueryDto } from './dto/export-query.dto';
import { ImportQueryDto } from './dto/import-query.dto';
import { ImportReportDto } from './dto/import-report.dto';
import { ExportService } from './export.service';
import { discard, ImportService } from './import.service';
import { AuditService } from '../audit/audit.service';
import { authorOf } from '../memories/write-headers';

const UPLOAD_TYPES = ['application/zip', 'application/x-ndjson', 'application/jsonl', 'text/markdown', 'text/plain', 'application/octet-stream'];

@ApiTags('portability')
@Controller('api')
export class PortabilityController {
  private readonly logger = new Logger('Portability');

  constructor(
    private readonly exporter: ExportService,
    private readonly importer: ImportService,
    private readonly memories: MemoriesService,
    private readonly audit: AuditService,
  ) {}

  /** An import that changed memories is an audit entry (counts only; a dry run changes nothing). */
  private async audited(req: Request, dryRun: boolean | undefined, r: { created: number; updated: number; skipped: number; invalid: number }): Promise<void> {
    if (dryRun) return;
    await this.audit.record('memory.import', { req, detail: { created: r.created, updated: r.updated, skipped: r.skipped, invalid: r.invalid } });
  }

  /**
   * An import that failed or was cut short (the client left, the upload broke) is an audit entry too
   * (issue 46): its status and message, and whether the client had gone. A dry run changes nothing.
   */
  private async auditFailed(req: Request, res: Response, dryRun: boolean | undefined, e: unknown): Promise<void> {
    if (dryRun) return;
    const status = e instanceof AppError ? e.status : 500;
    const error = e instanceof AppError ? e.message : 'Internal server error';
    await this.audit.record('memory.import', { req, outcome: 'failure', detail: { status, error, aborted: req.destroyed || res.destroyed } }).catch(() => undefined);
  }

  /** A zip of every memory matching the filters: `memories/<id>.md`, `SHA256SUMS`, `manifest.json`. Streamed. */
  @Get('export')
  @RequireScopes('memory:read')
  @ApiOperation({ summary: 'Export memories as a zip archive (markdown files + manifest)' })
  @ApiProduces('application/zip')
  @ApiOkResponse({ description: 'The archive', content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } })
  async export(@Query() q: ExportQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const filters: Record<string, unknown> = {};
    for (const k of ['type', 'scope', 'agent', 'project', 'tag', 'days', 'since'] as const) if (q[k] !== undefined) filters[k] = q[k];
    const filter = this.memories.filterOf(q);
    // A bulk read is audited before it starts; without its entry nothing is read or sent (decision 0051).
    await this.audit.record('memory.export', { req, detail: { filters } });
    const { output, done } = await this.exporter.start({ filter, filters, signal: abort.signal });
    const stamp = new Date().toISOString().replace(/[:.]/g, '-');
    res.status(200);
    res.setHeader('Content-Type', 'application/zip');
    res.setHeader('Content-Disposition', `attachment; filename="memstore-export-${stamp}.zip"`);
    res.setHeader('Cache-Control', 'private, no-store');
    try {
      await Promise.all([pipeline(output, res), done]);
    } catch (e) {
      // Headers are out: the only honest signal left is a cut connection (the zip has no central directory).
      if (!abort.signal.aborted) this.logger.error(`Export failed mid-stream for request ${req.id ?? ''}: ${(e as Error).message}`);
      res.destroy();
    }
  }

  /**
   * The raw request body is the file: an export zip, a zip of markdown notes, a single markdown
   * file, or JSONL (one memory object per line). It is streamed to a temp file first (limit
   * MEMSTORE_IMPORT_MAX_BYTES), then imported one file at a time.
   */
  @Post('import')
  @HttpCode(200)
  @RequireScopes('memory:write')
  @ApiOperation({ summary: 'Import memories from a zip, markdown or JSONL (raw request body)' })
  @ApiConsumes(...UPLOAD_TYPES)
  @ApiBody({ schema: { type: 'string', format: 'binary' } })
  @ApiProduces('application/json', 'application/x-ndjson')
  @ApiOkResponse({ type: ImportReportDto, description: 'The report (progress=true: NDJSON lines `{"type":"item",…}` then `{"type":"report",…}`)' })
  async import(@Query() q: ImportQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (req.readableEnded || type === 'application/json' || type.startsWith('multipart/') || type === 'application/x-www-form-urlencoded') {
      throw new AppError(415, `Send the file itself as the request body with Content-Type ${UPLOAD_TYPES.join(', ')}`);
    }
    const file = await this.importer.receive(req).catch(async (e: unknown) => {
      await this.auditFailed(req, res, q.dry_run, e);
      throw e;
    });
    try {
      if ((await fs.promises.stat(file)).size === 0) {
        throw RequestValidationError.one(['body'], 'The request body is empty: send the file to import as the body', 'missing', null);
      }
      const opts = { onConflict: q.on_conflict, dryRun: q.dry_run, format: q.format, filename: q.filename ?? 'upload', importer: authorOf(req) };
      if (!q.progress) {
        const report = await this.importer.importFile(file, opts);
        await this.audited(req, q.dry_run, report);
        res.status(200).json(report);
        return;
      }
      res.status(200);
      res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      const write = async (o: unknown) => {
        if (!res.write(JSON.stringify(o) + '\n')) await new Promise((r) => res.once('drain', r));
      };
      try {
        const report = await this.importer.importFile(file, { ...opts, onItem: (item, processed) => write({ type: 'item', processed, ...item }) });
        await this.audited(req, q.dry_run, report);
        await write({ type: 'report', ...report });
      } catch (e) {
        const status = e instanceof AppError ? e.status : 500;
        const message = e instanceof AppError ? e.message : 'Internal server error';
        if (!(e instanceof AppError)) this.logger.error(`Import failed: ${(e as Error).stack ?? e}`);
        await this.auditFailed(req, res, q.dry_run, e);
        await write({ type: 'error', status, error: message });
      }
      res.end();
    } catch (e) {
      if (res.headersSent) throw e;
      await this.auditFailed(req, res, q.dry_run, e);
      sendError(e, req, res);
    } finally {
      await discard(file);
    }
  }
}
