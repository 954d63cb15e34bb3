import { ConsoleLogger, Logger, LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AdminPasswordService } from './admin/auth/admin-password.service';
import { AppModule } from './app.module';
import { configureApp } from './app.setup';
import { loadAppConfig, requestedLogFormat, withDotEnv } from './config/app-config';
import { EmbeddingsService } from './embeddings/embeddings.service';
import { JsonLogger } from './observability/json-logger';

const LEVELS: Record<string, LogLevel[] | false> = {
  silent: false,
  error: ['error', 'fatal'],
  info: ['log', 'warn', 'error', 'fatal'],
};

/** Nest's start-up detail (a line per module and per route, ~80 lines): debug level, not on the console. */
const STARTUP_DETAIL = new Set(['InstanceLoader', 'RoutesResolver', 'RouterExplorer']);

class ConsoleLoggerQuietStart extends ConsoleLogger {
  override log(message: unknown, ...rest: unknown[]): void {
    const context = rest[rest.length - 1];
    if (typeof context === 'string' && STARTUP_DETAIL.has(context)) this.debug(message, ...rest);
    else super.log(message, ...rest);
  }
}

/** How long SIGTERM waits for requests in flight before closing anyway. */
const SHUTDOWN_GRACE_MS = 10_000;

async function bootstrap(): Promise<void> {
  const cfg = loadAppConfig(withDotEnv(), { holdAdminBanner: true });
  const levels = LEVELS[cfg.logLevel];
  const app = await NestFactory.create<NestExpressApplication>(AppModule.register(cfg), {
    bodyParser: false,
    // MEMSTORE_LOG_FORMAT=json: one JSON object per line (and an access log); text: Nest's console.
    logger: cfg.logFormat === 'json' ? new JsonLogger(levels || []) : levels && new ConsoleLoggerQuietStart({ logLevels: levels }),
  });
  configureApp(app);
  await app.listen(cfg.port, cfg.host);
  const logger = new Logger('Memory Store');
  const bound = app.getHttpServer().address();
  const port = typeof bound === 'object' && bound ? bound.port : cfg.port;
  const url = `http://${cfg.host.includes(':') ? `[${cfg.host}]` : cfg.host}:${port}`;
  logger.log(`Listening on ${url} (admin page ${url}/, API docs ${url}/docs)${cfg.publicUrl ? `, public URL ${cfg.publicUrl}` : ''}`);
  // A generated admin password: its box is the last thing on the console, with the next step.
  app.get(AdminPasswordService).printHeldBanner(cfg.publicUrl ?? url);
  // The model loads now, while nobody waits, not during the first searches.
  app.get(EmbeddingsService).warmUp();

  // SIGTERM/SIGINT: stop accepting, let requests in flight finish, close the backends, exit 0.
  // (Nest's enableShutdownHooks re-raises the signal, which would exit 143.)
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.log(`${signal} received: finishing requests in flight, then stopping`);
    const server = app.getHttpServer();
    server.closeIdleConnections?.();
    const force = setTimeout(() => server.closeAllConnections?.(), SHUTDOWN_GRACE_MS);
    force.unref();
    app
      .close()
      .then(() => process.exit(0))
      .catch((err: Error) => {
        logger.error(`Shutdown failed: ${err.message}`);
        process.exit(1);
      });
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

bootstrap().catch((err: Error) => {
  // A boot failure (bad environment, unreadable data dir) is a message, not a stack dump.
  if (requestedLogFormat() === 'json') {
    process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'fatal', message: `Memory Store failed to start: ${err.message}` })}\n`);
  } else console.error(`Memory Store failed to start: ${err.message}`);
  process.exit(1);
});
