import { Injectable } from '@nestjs/common';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AppConfig } from '../config/app-config';
import { embeddingChoice } from '../embeddings/local-embedding.provider';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { BackendFactory } from './backend-factory';
import { MongoDocumentDatabase } from './mongodb/mongo-document-database';
import { S3ObjectStore } from './s3/s3-object-store';
import { FilesystemObjectStore } from './filesystem/filesystem-object-store';
import type { DocumentDatabase } from './ports/document-database.port';
import type { ObjectStore } from './ports/object-store.port';
import { SqliteDocumentDatabase } from './sqlite/sqlite-database';

/**
 * CONTRACT §5: the document database is MongoDB when docdb_uri is set, otherwise the embedded
 * SQLite file; the object store is S3-compatible when objstore_bucket is set, otherwise the
 * filesystem under the data directory.
 */
@Injectable()
export class DefaultBackendFactory extends BackendFactory {
  constructor(
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
  ) {
    super();
  }

  override docdbKey(s: ResolvedSettings): string {
    return s.docdb_uri ? JSON.stringify(['mongodb', s.docdb_uri, s.docdb_db, s.memory_collection]) : 'sqlite';
  }

  override objstoreKey(s: ResolvedSettings): string {
    return s.objstore_bucket
      ? JSON.stringify(['s3', s.objstore_bucket, s.objstore_endpoint, s.objstore_account_id, s.objstore_access_key_id, s.objstore_secret_access_key, s.objstore_public_base])
      : 'filesystem';
  }

  override createDocumentDatabase(s: ResolvedSettings): DocumentDatabase {
    // A serving process with an embedding provider loads the vectors at start, on either backend.
    const preloadVectors = this.cfg.loadVectorsAtStart && embeddingChoice(s, this.cfg.embeddingModelDir) !== 'none';
    if (s.docdb_uri) return new MongoDocumentDatabase({ uri: s.docdb_uri, dbName: s.docdb_db, memoryCollection: s.memory_collection, preloadVectors });
    return new SqliteDocumentDatabase(path.join(this.cfg.dataDir, 'memstore.db'), { searchWorkers: this.cfg.searchWorkers, preloadVectors });
  }

  override openInactiveEmbedded(): DocumentDatabase | null {
    const file = path.join(this.cfg.dataDir, 'memstore.db');
    return fs.existsSync(file) ? new SqliteDocumentDatabase(file) : null;
  }

  override createObjectStore(s: ResolvedSettings): ObjectStore {
    if (s.objstore_bucket) {
      return new S3ObjectStore({
        bucket: s.objstore_bucket,
        endpoint: s.objstore_endpoint,
        accountId: s.objstore_account_id,
        accessKeyId: s.objstore_access_key_id,
        secretAccessKey: s.objstore_secret_access_key,
        publicBase: s.objstore_public_base,
      });
    }
    return new FilesystemObjectStore(path.join(this.cfg.dataDir, 'objects'), this.settings.serviceKey());
  }
}
