import { ALL_NAMESPACES } from '../namespaces/namespace';
import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FilesystemObjectStore } from '../backends/filesystem/filesystem-object-store';
import type { ListCursor } from '../backends/ports/memory.model';
import type { ObjectStore } from '../backends/ports/object-store.port';
import { SqliteDocumentDatabase } from '../backends/sqlite/sqlite-database';
import { NotFoundError } from '../common/errors';
import { objectKeyOf } from '../memories/memory-id';
import { MarkdownParseError, parseMarkdown, toMarkdown } from '../memories/memory-markdown';
import { MARKDOWN_TYPE } from '../memories/memories.service';
import { serviceVersion } from './archive-format';
import { memoryDigest } from './migration';

export const BACKUP_MANIFEST = 'backup.json';
const DB_FILE = 'memstore.db';
const OBJECTS_DIR = 'objects';
/** Settings files of a data directory; secret.key decrypts credentials.enc (and keys token hashes). */
const SETTINGS_FILES = ['config.json', 'credentials.enc', 'secret.key'];

export interface BackupManifest {
  format: 'memstore-backup';
  format_version: 1;
  service_version: string;
  /** When the snapshot was taken: every memory acknowledged before this is in the backup. */
  started_at: string;
  finished_at: string;
  memories: number;
  tokens: number;
  /** Files whose stored copy had changed since the snapshot (written from the snapshot instead). */
  rewritten: number;
  settings_files: string[];
  /** true: this backup can decrypt the credential store and forge tokens' hashes: keep it like a password. */
  contains_secret_key: boolean;
}

export interface BackupSource {
  /** The embedded SQLite database file (the data dir's memstore.db). */
  dbFile: string;
  /** The active object store (read only). */
  store: ObjectStore;
  dataDir: string;
}

/**
 * A consistent backup of the embedded default while it serves (issue 12, point 4):
 * 1. SQLite's online backup API copies the database (index, tokens, sessions) as of one moment;
 *    writers are not blocked (WAL).
 * 2. The markdown file of every memory in that snapshot is copied through the ObjectStore port;
 *    a file changed or deleted since the snapshot is written from the snapshot's copy, so the
 *    index and the files of the backup agree.
 * 3. The settings files and the credential store, with secret.key when there is one.
 */
export async function backup(src: BackupSource, dir: string, onProgress?: (done: number, total: number) => void): Promise<BackupManifest> {
  if (fs.existsSync(dir) && fs.readdirSync(dir).length > 0) throw new Error(`${dir} is not empty; back up into a new directory`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const startedAt = new Date();
  const live = new Database(src.dbFile, { readonly: true, fileMustExist: true });
  try {
    // After the first step, the rest in one step: a write between steps would otherwise restart it.
    await live.backup(path.join(dir, DB_FILE), { progress: ({ totalPages }) => Math.max(totalPages, 100) });
  } finally {
    live.close();
  }
  const snapshot = new SqliteDocumentDatabase(path.join(dir, DB_FILE));
  await snapshot.init();
  const out = new FilesystemObjectStore(path.join(dir, OBJECTS_DIR), Buffer.alloc(32));
  let memories = 0;
  let rewritten = 0;
  let tokens: number;
  try {
    tokens = (await snapshot.tokens.list()).length;
    const total = await snapshot.memories.count(ALL_NAMESPACES);
    let after: ListCursor | undefined;
    for (;;) {
      const page = await snapshot.memories.list({ filter: { namespace: ALL_NAMESPACES }, limit: 500, offset: 0, after });
      for (const row of page.rows) {
        const doc = (await snapshot.memories.get(ALL_NAMESPACES, row.id))!;
        const key = objectKeyOf(doc);
        let bytes = await src.store.get(key).catch((e: unknown) => {
          if (e instanceof NotFoundError) return null;
          throw e;
        });
        if (!bytes || !sameAs(bytes, doc)) {
          bytes = Buffer.from(toMarkdown(doc), 'utf8');
          rewritten++;
        }
        await out.put(key, bytes, MARKDOWN_TYPE);
        // The older versions the snapshot's history names (immutable objects: copied as they are).
        for (const entry of (await snapshot.memories.history(ALL_NAMESPACES, doc.id, 1000, 0)).rows) {
          if (entry.objectKey === key) continue;
          const old = await src.store.get(entry.objectKey).catch((e: unknown) => {
            if (e instanceof NotFoundError) return null;
            throw e;
          });
          if (old) await out.put(entry.objectKey, old, MARKDOWN_TYPE);
        }
        memories++;
        onProgress?.(memories, total);
      }
      if (page.rows.length < 500) break;
      const last = page.rows[page.rows.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
  } finally {
    await snapshot.close();
    await out.close();
  }
  const copied: string[] = [];
  for (const f of SETTINGS_FILES) {
    const from = path.join(src.dataDir, f);
    if (!fs.existsSync(from)) continue;
    fs.copyFileSync(from, path.join(dir, f));
    fs.chmodSync(path.join(dir, f), 0o600);
    copied.push(f);
  }
  const manifest: BackupManifest = {
    format: 'memstore-backup',
    format_version: 1,
    service_version: serviceVersion(),
    started_at: startedAt.toISOString(),
    finished_at: new Date().toISOString(),
    memories,
    tokens,
    rewritten,
    settings_files: copied,
    contains_secret_key: copied.includes('secret.key'),
  };
  fs.writeFileSync(path.join(dir, BACKUP_MANIFEST), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  return manifest;
}

function sameAs(bytes: Buffer, doc: Parameters<typeof memoryDigest>[0]): boolean {
  try {
    return memoryDigest(parseMarkdown(bytes.toString('utf8'))) === memoryDigest(doc);
  } catch (e) {
    if (e instanceof MarkdownParseError) return false;
    throw e;
  }
}

/**
 * Restores a backup into a data directory that holds no database and no objects (the service
 * must not be running on it). Then checks that the restored database opens and holds what the
 * backup says. Nothing else is needed: the index and the files come from the same snapshot.
 */
export async function restore(dir: string, dataDir: string): Promise<BackupManifest> {
  const manifestFile = path.join(dir, BACKUP_MANIFEST);
  if (!fs.existsSync(manifestFile)) throw new Error(`${dir} is not a memstore backup (no ${BACKUP_MANIFEST})`);
  const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as BackupManifest;
  if (manifest.format !== 'memstore-backup' || manifest.format_version !== 1) throw new Error(`${manifestFile}: unknown backup format`);
  for (const f of [DB_FILE, OBJECTS_DIR, ...SETTINGS_FILES]) {
    if (fs.existsSync(path.join(dataDir, f))) throw new Error(`${path.join(dataDir, f)} exists: restore into an empty data directory (move the old one away first)`);
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  fs.copyFileSync(path.join(dir, DB_FILE), path.join(dataDir, DB_FILE));
  if (fs.existsSync(path.join(dir, OBJECTS_DIR))) fs.cpSync(path.join(dir, OBJECTS_DIR), path.join(dataDir, OBJECTS_DIR), { recursive: true });
  for (const f of manifest.settings_files) {
    fs.copyFileSync(path.join(dir, f), path.join(dataDir, f));
    fs.chmodSync(path.join(dataDir, f), 0o600);
  }
  const db = new SqliteDocumentDatabase(path.join(dataDir, DB_FILE));
  await db.init();
  try {
    const n = await db.memories.count(ALL_NAMESPACES);
    if (n !== manifest.memories) throw new Error(`the restored database holds ${n} memories, the backup says ${manifest.memories}`);
  } finally {
    await db.close();
  }
  return manifest;
}
