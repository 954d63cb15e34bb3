import * as path from 'node:path';
import { DefaultBackendFactory } from '../backends/default-backend-factory';
import { AppConfig, SETTING_KEYS, SettingKey } from '../config/app-config';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { checkSetting, MEMORY_COLLECTION_DEFAULT, parsePresignTtl } from '../config/setting-rules';
import type { BackendPair } from './migration';

/** One backend pair as settings: which document database and object store, and the data dir of embedded parts. */
export interface PairSpec {
  settings: ResolvedSettings;
  dataDir: string;
}

export interface MigrationPlan {
  source: PairSpec;
  target: PairSpec;
  copyDocdb: boolean;
  copyObjects: boolean;
}

/**
 * The target of `memstore migrate`: each part defaults to the source's (then it is not copied).
 * `to` holds target settings (docdb_uri → MongoDB, objstore_bucket → S3); `embeddedDocdb` /
 * `filesystem` choose the embedded parts in `dataDir`.
 */
export function planMigration(source: PairSpec, to: Partial<Record<SettingKey, string>>, opts: { embeddedDocdb?: boolean; filesystem?: boolean; dataDir?: string }): MigrationPlan {
  for (const k of SETTING_KEYS) {
    const v = to[k];
    if (v === undefined || v === '') continue;
    const problem = checkSetting(k, v);
    if (problem) throw new Error(`target ${k} ${problem}`);
  }
  const dataDir = path.resolve(opts.dataDir ?? source.dataDir);
  const s: ResolvedSettings = { ...source.settings };
  if (to.docdb_uri) {
    s.docdb_uri = to.docdb_uri;
    s.docdb_db = to.docdb_db || null;
    s.memory_collection = to.memory_collection || MEMORY_COLLECTION_DEFAULT;
  } else if (opts.embeddedDocdb) {
    s.docdb_uri = null;
  }
  if (to.objstore_bucket) {
    s.objstore_bucket = to.objstore_bucket;
    s.objstore_endpoint = to.objstore_endpoint || null;
    s.objstore_account_id = to.objstore_account_id || null;
    s.objstore_access_key_id = to.objstore_access_key_id || null;
    s.objstore_secret_access_key = to.objstore_secret_access_key || null;
    s.objstore_public_base = to.objstore_public_base || null;
    if (to.objstore_presign_ttl) s.objstore_presign_ttl = parsePresignTtl(to.objstore_presign_ttl);
  } else if (opts.filesystem) {
    s.objstore_bucket = null;
  }
  const target: PairSpec = { settings: s, dataDir };
  return { source, target, copyDocdb: docdbId(source) !== docdbId(target), copyObjects: storeId(source) !== storeId(target) };
}

/** Identity of a pair's document database: its settings, or the embedded file. */
export function docdbId(p: PairSpec): string {
  const s = p.settings;
  return s.docdb_uri ? JSON.stringify(['mongodb', s.docdb_uri, s.docdb_db, s.memory_collection]) : `sqlite:${path.resolve(p.dataDir)}`;
}

export function storeId(p: PairSpec): string {
  const s = p.settings;
  return s.objstore_bucket ? JSON.stringify(['s3', s.objstore_bucket, s.objstore_endpoint, s.objstore_account_id]) : `fs:${path.resolve(p.dataDir)}`;
}

/** Opens the adapters of a pair (the caller closes them). */
export async function openPair(cfg: AppConfig, settings: SettingsService, spec: PairSpec): Promise<BackendPair> {
  const factory = new DefaultBackendFactory({ ...cfg, dataDir: spec.dataDir, searchWorkers: 0, loadVectorsAtStart: false }, settings);
  const db = factory.createDocumentDatabase(spec.settings);
  await db.init();
  try {
    await db.ping();
  } catch (e) {
    await db.close().catch(() => undefined);
    throw e;
  }
  const store = factory.createObjectStore(spec.settings);
  return { db, store };
}

export async function closePair(p: BackendPair | null | undefined): Promise<void> {
  if (!p) return;
  await Promise.allSettled([p.db.close(), p.store.close()]);
}
