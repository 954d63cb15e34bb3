import { DynamicModule, INestApplicationContext, LogLevel, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BackendsModule } from '../backends/backends.module';
import { BackendsService } from '../backends/backends.service';
import { AppConfig, loadAppConfig } from '../config/app-config';
import { ConfigModule } from '../config/config.module';
import { EmbeddingsModule } from '../embeddings/embeddings.module';
import { MemoriesModule } from '../memories/memories.module';
import { PortabilityModule } from '../portability/portability.module';
import type { CliIo } from './io';

/**
 * What the command line needs: configuration, the backends and the memory services. Not the
 * whole AppModule: no HTTP pipeline, and no admin sign-in start-up (which would generate and
 * print an admin password on a fresh data directory).
 */
@Module({})
export class CliModule {
  static register(cfg: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.forRoot(cfg), BackendsModule, EmbeddingsModule, MemoriesModule, PortabilityModule] };
  }
}

/** Which command opens the store, where it says so, and whether it only works on a store that exists. */
export interface StoreUse {
  command: string;
  io: CliIo;
  /**
   * The command reads what is there (export, backup, migrate, reindex, embed): opening a data
   * directory that holds no store would create an empty one and report on nothing, so it is
   * refused instead.
   */
  existing: boolean;
}

/** The files that make a data directory hold a store (the embedded database, or saved settings that may name MongoDB). */
const STORE_FILES = ['memstore.db', 'credentials.enc', 'config.json'];

/** Thrown before anything is opened when a command that reads a store finds none (exit code 1). */
export class NoStoreError extends Error {}

function assertStoreExists(cfg: AppConfig, command: string): void {
  // MongoDB named by the environment: the data directory need not exist.
  if (cfg.settingsEnv.docdb_uri) return;
  if (STORE_FILES.some((f) => fs.existsSync(path.join(cfg.dataDir, f)))) return;
  const what = fs.existsSync(cfg.dataDir) ? `${cfg.dataDir} holds no Memory Store data` : `there is no data directory at ${cfg.dataDir}`;
  throw new NoStoreError(
    `${what}, so there is nothing to ${command} (nothing was created). Run memstore from the directory the service runs in, or set MEMSTORE_DATA_DIR (or MEMSTORE_DOCDB_URI for MongoDB).`,
  );
}

/**
 * Runs `fn` with the service's backends opened from the same settings as the server, then closes
 * them. With `use`, it first names the data directory and the backends the command acts on (on
 * stderr, so `export --out -` keeps stdout for the archive) and, for a command that reads an
 * existing store, refuses a data directory that holds none.
 */
export async function withApp<T>(env: NodeJS.ProcessEnv, fn: (app: INestApplicationContext, cfg: AppConfig) => Promise<T>, use?: StoreUse): Promise<T> {
  // The background embedding worker is the server's; `memstore embed` drives the queue itself.
  // No command searches by meaning: the vectors stay on disk.
  const cfg = loadAppConfig(env, { embeddingWorker: false, loadVectorsAtStart: false });
  if (use?.existing) assertStoreExists(cfg, use.command);
  if (use && !use.existing && !fs.existsSync(cfg.dataDir)) use.io.err(`memstore ${use.command}: creating a new data directory at ${cfg.dataDir}`);
  const levels: LogLevel[] | false = cfg.logLevel === 'silent' ? false : ['error', 'warn'];
  const app = await NestFactory.createApplicationContext(CliModule.register(cfg), { logger: levels });
  try {
    if (use) {
      const { docdb, objstore } = app.get(BackendsService);
      use.io.err(`memstore ${use.command}: data directory ${cfg.dataDir}; ${docdb.describe()} + ${objstore.describe()}`);
    }
    return await fn(app, cfg);
  } finally {
    await app.close();
  }
}
