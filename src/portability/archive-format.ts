import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Export archive layout (issue 12). Readers accept any later minor change that keeps these names. */
export const ARCHIVE_FORMAT = 'memstore-export';
export const ARCHIVE_FORMAT_VERSION = 1;
export const MANIFEST_FILE = 'manifest.json';
/** `sha256sum` format (`<hex>  <path>`), so `sha256sum -c SHA256SUMS` verifies an unpacked archive. */
export const CHECKSUMS_FILE = 'SHA256SUMS';
/** Memories: `memories/<id>.md`, the same markdown (front matter + body) the object store keeps. */
export const MEMORIES_DIR = 'memories/';
/** Version history (where the store keeps one): `history/<id>/<version>.md`. */
export const HISTORY_DIR = 'history/';

export interface ExportManifest {
  format: typeof ARCHIVE_FORMAT;
  format_version: number;
  service: 'memory-store';
  service_version: string;
  exported_at: string;
  /** The filters the export was made with (as given; absent = not filtered). */
  filters: Record<string, unknown>;
  /** Memories in the archive (`memories/*.md`). */
  count: number;
  checksums: { algorithm: 'sha256'; file: typeof CHECKSUMS_FILE; files: number; sha256: string };
  /**
   * The version history, where the store keeps one: `{ dir, versions }`. null when the store
   * keeps only the current version of each memory.
   */
  history: { dir: string; versions: number } | null;
}

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

let version: string | null = null;

/** The service's version (package.json), found from this file upwards (works from src/ and dist/). */
export function serviceVersion(): string {
  if (version !== null) return version;
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'memory-store' && pkg.version) return (version = pkg.version);
    } catch {
      // not here
    }
    dir = path.dirname(dir);
  }
  return (version = 'unknown');
}
