import { Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { loadAppConfig } from './config/app-config';

const LEVELS: Record<string, LogLevel[] | false> = {
  silent: false,
  error: ['error', 'fatal'],
  info: ['log', 'warn', 'error', 'fatal'],
};

async function bootstrap(): Promise<void> {
  const cfg = loadAppConfig();
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(cfg), {
    bodyParser: false,
    logger: LEVELS[cfg.logLevel],
  });
  configureApp(app);
  await app.listen(cfg.port, cfg.host);
  const url = cfg.publicUrl ?? `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${cfg.port}`;
  new Logger('Memory Store').log(`Listening on ${url} (admin page ${url}/, API docs ${url}/docs)`);
}

bootstrap().catch((err: Error) => {
  // A boot failure (bad environment, unreadable data dir) is a message, not a stack dump.
  console.error(`Memory Store failed to start: ${err.message}`);
  process.exit(1);
});
