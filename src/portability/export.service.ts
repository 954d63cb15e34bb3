import { Injectable, Logger, Optional } from '@nestjs/common';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import type { ListCursor, MemoryFilter } from '../backends/ports/memory.model';
import { MemoriesService } from '../memories/memories.service';
import { ARCHIVE_FORMAT, ARCHIVE_FORMAT_VERSION, CHECKSUMS_FILE, ExportManifest, HISTORY_DIR, MANIFEST_FILE, MEMORIES_DIR, serviceVersion, sha256 } from './archive-format';
import { ZipStreamWriter } from './zip-writer';

/**
 * Hook for the version history (issue 9): the export writes each memory's earlier versions as
 * `history/<id>/<version>.md` (right after `memories/<id>.md`) and fills the manifest's `history`.
 * Bound to the store's history (StoredHistorySource) in PortabilityModule; without a binding the
 * manifest says `history: null`.
 */
export abstract class MemoryHistorySource {
  /** Earlier versions of memory `id` (whose current version is `current`), oldest first. */
  abstract versions(ns: string, id: string, current: number): AsyncIterable<{ version: number | string; markdown: Buffer; at: Date }>;
}

export interface ExportRequest {
  filter: MemoryFilter;
  /** The filters as the caller gave them (recorded in the manifest). */
  filters: Record<string, unknown>;
  signal?: AbortSignal;
  onProgress?(exported: number, total: number): void;
}

const PAGE = 200;

/**
 * Streams a zip of memories (issue 12, point 1): `memories/<id>.md` (the stored markdown, byte
 * for byte), `SHA256SUMS`, and `manifest.json` last (it knows the count and checksums). Walks the
 * index newest first with the list cursor, one page at a time; checksum lines go to a temp file,
 * so memory stays flat however many memories there are.
 */
@Injectable()
export class ExportService {
  private readonly logger = new Logger('Export');

  constructor(
    private readonly index: MemoryIndex,
    private readonly memories: MemoriesService,
    @Optional() private readonly history?: MemoryHistorySource,
  ) {}

  /**
   * Starts the export; the archive flows out of `output` as it is written. Counts first, so a
   * backend that is down fails here (a clean 503) rather than in the middle of the stream.
   */
  async start(req: ExportRequest): Promise<{ output: NodeJS.ReadableStream; done: Promise<ExportManifest>; total: number }> {
    const total = (await this.index.list({ filter: req.filter, limit: 1, offset: 0 })).total;
    const zip = new ZipStreamWriter(req.signal);
    const done = this.write(zip, req, total);
    done.catch(() => undefined);
    return { output: zip.output, done, total };
  }

  private async write(zip: ZipStreamWriter, req: ExportRequest, total: number): Promise<ExportManifest> {
    const tmp = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'memstore-export-'));
    const sumsFile = path.join(tmp, CHECKSUMS_FILE);
    const sums = fs.createWriteStream(sumsFile);
    const sumsHash = createHash('sha256');
    let files = 0;
    const line = async (digest: string, name: string) => {
      const l = `${digest}  ${name}\n`;
      sumsHash.update(l);
      files++;
      if (!sums.write(l)) await once(sums, 'drain');
    };
    try {
      let count = 0;
      let versions = 0;
      let after: ListCursor | undefined;
      for (;;) {
        const page = await this.index.list({ filter: req.filter, limit: PAGE, offset: 0, after });
        for (const row of page.rows) {
          let bytes: Buffer;
          try {
            bytes = await this.memories.download(req.filter.namespace, row.id);
          } catch (e) {
            if ((e as { status?: number }).status === 404) continue; // deleted while we were exporting
            throw e;
          }
          const name = `${MEMORIES_DIR}${row.id}.md`;
          await zip.add(name, bytes, row.updatedAt);
          await line(sha256(bytes), name);
          count++;
          if (this.history) {
            for await (const v of this.history.versions(req.filter.namespace, row.id, row.version)) {
              const vname = `${HISTORY_DIR}${row.id}/${v.version}.md`;
              await zip.add(vname, v.markdown, v.at);
              await line(sha256(v.markdown), vname);
              versions++;
            }
          }
          req.onProgress?.(count, total);
        }
        if (page.rows.length < PAGE) break;
        const last = page.rows[page.rows.length - 1];
        after = { createdAt: last.createdAt, id: last.id };
      }
      sums.end();
      await once(sums, 'finish');
      const now = new Date();
      await zip.addFile(sumsFile, CHECKSUMS_FILE, now);
      const manifest: ExportManifest = {
        format: ARCHIVE_FORMAT,
        format_version: ARCHIVE_FORMAT_VERSION,
        service: 'memory-store',
        service_version: serviceVersion(),
        exported_at: now.toISOString(),
        filters: req.filters,
        count,
        checksums: { algorithm: 'sha256', file: CHECKSUMS_FILE, files, sha256: sumsHash.digest('hex') },
        history: this.history ? { dir: HISTORY_DIR, versions } : null,
      };
      await zip.add(MANIFEST_FILE, Buffer.from(JSON.stringify(manifest, null, 2) + '\n'), now);
      await zip.end();
      await fs.promises.rm(tmp, { recursive: true, force: true });
      return manifest;
    } catch (e) {
      sums.destroy();
      zip.destroy(e as Error);
      await fs.promises.rm(tmp, { recursive: true, force: true });
      this.logger.warn(`Export stopped: ${(e as Error).message}`);
      throw e;
    }
  }
}
