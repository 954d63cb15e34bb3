import type { LoggerService } from '@nestjs/common';
import { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { configureApp } from '../../src/app.setup';
import { AppConfig, loadAppConfig } from '../../src/config/app-config';

export const ADMIN_PASSWORD = 'correct horse battery staple';

export interface TestApp {
  app: NestExpressApplication;
  /** The Node HTTP server, for supertest. */
  http: ReturnType<NestExpressApplication['getHttpServer']>;
  cfg: AppConfig;
  dataDir: string;
  close(): Promise<void>;
}

export function tempDir(prefix = 'memstore-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Boots the real AppModule with the production pipeline on a fresh data directory. */
export async function createTestApp(env: Record<string, string> = {}, opts: { logger?: LoggerService } = {}): Promise<TestApp> {
  const dataDir = env.MEMSTORE_DATA_DIR ?? tempDir();
  const cfg = loadAppConfig({
    MEMSTORE_DATA_DIR: dataDir,
    MEMSTORE_ADMIN_PASSWORD: ADMIN_PASSWORD,
    MEMSTORE_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789abcdef',
    MEMSTORE_LOG_LEVEL: 'silent',
    // Keyword-only unless a spec asks for embeddings (test/e2e/hybrid-search.spec.ts does): the
    // other suites' search expectations are keyword ones, and loading the model in every file
    // would cost time.
    MEMSTORE_EMBEDDING_PROVIDER: 'none',
    ...env,
  });
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.register(cfg)] }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({ bodyParser: false, logger: opts.logger ?? false });
  configureApp(app);
  try {
    await app.init();
  } catch (e) {
    // A start-up that fails half-way (e.g. a bad admin password hash) has already opened the
    // backends: close them, or their sockets keep the test process alive after the run.
    await app.close().catch(() => undefined);
    throw e;
  }
  return {
    app,
    http: app.getHttpServer(),
    cfg,
    dataDir,
    async close() {
      await app.close();
    },
  };
}

/** A supertest agent signed in as the administrator (keeps the session cookie). */
export async function adminAgent(t: TestApp): Promise<ReturnType<typeof request.agent>> {
  const agent = request.agent(t.http);
  await agent.post('/api/login').send({ username: t.cfg.adminUsername, password: ADMIN_PASSWORD }).expect(200);
  return agent;
}

/** Creates an API token through the admin API and returns its plaintext. */
export async function createToken(t: TestApp, body: Record<string, unknown> = { preset: 'full' }): Promise<{ plaintext: string; id: string }> {
  const agent = await adminAgent(t);
  const res = await agent.post('/api/tokens').send(body).expect(201);
  return { plaintext: res.body.plaintext, id: res.body.token.id };
}
