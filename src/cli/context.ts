import { DynamicModule, INestApplicationContext, LogLevel, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BackendsModule } from '../backends/backends.module';
import { AppConfig, loadAppConfig } from '../config/app-config';
import { ConfigModule } from '../config/config.module';
import { EmbeddingsModule } from '../embeddings/embeddings.module';
import { MemoriesModule } from '../memories/memories.module';
import { PortabilityModule } from '../portability/portability.module';

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

/** Runs `fn` with the service's backends opened from the same settings as the server, then closes them. */
export async function withApp<T>(env: NodeJS.ProcessEnv, fn: (app: INestApplicationContext, cfg: AppConfig) => Promise<T>): Promise<T> {
  // The background embedding worker is the server's; `memstore embed` drives the queue itself.
  // No command searches by meaning: the vectors stay on disk.
  const cfg = loadAppConfig(env, { embeddingWorker: false, loadVectorsAtStart: false });
  const levels: LogLevel[] | false = cfg.logLevel === 'silent' ? false : ['error', 'warn'];
  const app = await NestFactory.createApplicationContext(CliModule.register(cfg), { logger: levels });
  try {
    return await fn(app, cfg);
  } finally {
    await app.close();
  }
}
