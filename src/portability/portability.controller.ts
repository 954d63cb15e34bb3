import { Controller, Get, HttpCode, Logger, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import * as fs from 'node:fs';
import { once } from 'node:events';
import { pipeline } from 'node:stream/promises';
import { RequireScopes } from '../common/auth/decorators';
import { RequestNamespace } from '../namespaces/request-namespace';
import { AppError, RequestValidationError } from '../common/errors';
import { sendError } from '../common/http-exception.filter';
import { MemoriesService } from '../memories/memories.service';
import { ExportQueryDto } from './dto/export-query.dto';
import { ImportQueryDto } from './dto/import-query.dto';
import { ImportReportDto } from './dto/import-report.dto';
import { ExportService } from './export.service';
import { discard, ImportService } from './import.service';
import { ImportAbortedError, ImportTooLargeError } from './import-bounds';
import { AppConfig } from '../config/app-config';
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
    private readonly cfg: AppConfig,
  ) {}

  /**
   * The one place an import is known to have been abandoned by its client (during the upload or
   * while importing; `processed` items were done by then, each whole). The temp file is removed
   * and the slot given back by the caller.
   */
  private async aborted(req: Request, e: ImportAbortedError, processed: number): Promise<void> {
    this.logger.log(`Import ${req.id ?? ''} stopped: ${e.message} (${processed} items done)`);
    await this.audit.record('memory.import', { req, outcome: 'failure', detail: { error: e.message, aborted: true, processed } }).catch(() => undefined);
  }

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
  async export(@RequestNamespace() ns: string, @Query() q: ExportQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const abort = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) abort.abort();
    });
    const filters: Record<string, unknown> = {};
    for (const k of ['type', 'scope', 'agent', 'project', 'tag', 'days', 'since'] as const) if (q[k] !== undefined) filters[k] = q[k];
    const filter = this.memories.filterOf(ns, q);
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
  @ApiBody({ required: true, description: 'The file itself (not empty)', schema: { type: 'string', format: 'binary', minLength: 1 } })
  @ApiProduces('application/json', 'application/x-ndjson')
  @ApiOkResponse({ type: ImportReportDto, description: 'The report (progress=true: NDJSON lines `{"type":"item",…}` then `{"type":"report",…}`)' })
  async import(@RequestNamespace() ns: string, @Query() q: ImportQueryDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
    if (req.readableEnded || type === 'application/json' || type.startsWith('multipart/') || type === 'application/x-www-form-urlencoded') {
      throw new AppError(415, `Send the file itself as the request body with Content-Type ${UPLOAD_TYPES.join(', ')}`);
    }
    const p = req.principal;
    const release = this.importer.slots.take(p?.kind === 'token' ? `token:${p.tokenId}` : 'admin');
    // Stopped between two items when the client leaves (the response closes unfinished) or after MEMSTORE_IMPORT_MAX_SECONDS.
    const stop = new AbortController();
    let file: string | undefined;
    let processed = 0;
    const onClose = () => {
      if (!res.writableFinished) stop.abort(new ImportAbortedError(file === undefined ? 'upload' : 'import'));
    };
    res.on('close', onClose);
    const maxSeconds = this.cfg.importLimits.maxSeconds;
    const timer = setTimeout(
      () =>
        stop.abort(
          new ImportTooLargeError(
            `The import ran longer than ${maxSeconds} s (MEMSTORE_IMPORT_MAX_SECONDS) and was stopped; what was imported before stays (importing the file again continues where it stopped)`,
          ),
        ),
      maxSeconds * 1000,
    );
    try {
      file = await this.importer.receive(req);
    } catch (e) {
      clearTimeout(timer);
      res.off('close', onClose);
      release();
      if (e instanceof ImportAbortedError) return this.aborted(req, e, 0);
      await this.auditFailed(req, res, q.dry_run, e);
      throw e;
    }
    // What to send once the upload is removed and the slot given back (so a client that sends its next import on the answer finds both free).
    let answer: (() => void) | undefined;
    try {
      if ((await fs.promises.stat(file)).size === 0) {
        throw RequestValidationError.one(['body'], 'The request body is empty: send the file to import as the body', 'missing', null);
      }
      const count = () => void processed++;
      const opts = { onConflict: q.on_conflict, dryRun: q.dry_run, format: q.format, filename: q.filename ?? 'upload', signal: stop.signal, importer: authorOf(req), namespace: ns };
      if (!q.progress) {
        const report = await this.importer.importFile(file, { ...opts, onItem: count });
        await this.audited(req, q.dry_run, report);
        answer = () => res.status(200).json(report);
        return;
      }
      res.status(200);
      res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
      res.setHeader('Cache-Control', 'no-store');
      // A client that stops reading leaves `drain` unsent: the wait ends when the import is stopped (the client left, or the time bound).
      const write = async (o: unknown) => {
        if (!res.write(JSON.stringify(o) + '\n')) await once(res, 'drain', { signal: stop.signal }).catch(() => stop.signal.throwIfAborted());
      };
      try {
        const report = await this.importer.importFile(file, {
          ...opts,
          onItem: async (item, n) => {
            count();
            await write({ type: 'item', processed: n, ...item });
          },
        });
        await this.audited(req, q.dry_run, report);
        await write({ type: 'report', ...report });
      } catch (e) {
        if (e instanceof ImportAbortedError) throw e;
        const status = e instanceof AppError ? e.status : 500;
        const message = e instanceof AppError ? e.message : 'Internal server error';
        if (!(e instanceof AppError)) this.logger.error(`Import failed: ${(e as Error).stack ?? String(e)}`);
        await this.auditFailed(req, res, q.dry_run, e);
        // The error's own fields too (a quota: code, quota, report), as in the JSON answer.
        await write({ type: 'error', status, error: message, ...(e instanceof AppError ? (e as AppError & { extra?: Record<string, unknown> }).extra : {}) });
      }
      answer = () => res.end();
    } catch (e) {
      if (e instanceof ImportAbortedError) return this.aborted(req, e, processed);
      if (stop.signal.aborted && stop.signal.reason instanceof ImportAbortedError) return this.aborted(req, stop.signal.reason, processed);
      await this.auditFailed(req, res, q.dry_run, e);
      answer = () => sendError(e, req, res);
    } finally {
      clearTimeout(timer);
      res.off('close', onClose);
      await discard(file);
      release();
      answer?.();
    }
  }
}
