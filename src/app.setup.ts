import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { sendError } from './common/http-exception.filter';
import { requestId } from './common/request-id.middleware';
import { AppConfig } from './config/app-config';
import { mcpJsonBody, mcpOriginCheck } from './mcp/mcp-http';
import { setupOpenApi } from './meta/openapi';
import { accessLog } from './observability/access-log.middleware';
import { MetricsService } from './observability/metrics.service';

/**
 * Everything about the HTTP pipeline that is not a Nest provider. Used by main.ts and by every
 * end-to-end test, so tests exercise the production pipeline. Create the app with
 * `{ bodyParser: false }`: the JSON parser is installed here so its errors use our envelope.
 */
export function configureApp(app: NestExpressApplication): NestExpressApplication {
  const cfg = app.get(AppConfig);
  app.disable('x-powered-by');
  // One hop: behind a single reverse proxy req.ip is the address that proxy saw; a client-sent X-Forwarded-For
  // cannot spoof it (it would defeat token IP allow-lists and login throttling).
  app.set('trust proxy', cfg.trustProxy ? 1 : false);
  app.set('etag', false);
  app.use(requestId);
  app.use(accessLog(app.get(MetricsService), cfg.logFormat === 'json'));
  app.use(
    helmet({
      contentSecurityPolicy: {
        useDefaults: true,
        directives: {
          'default-src': ["'self'"],
          'script-src': ["'self'"],
          'style-src': ["'self'", "'unsafe-inline'"],
          'img-src': ["'self'", 'data:'],
          'font-src': ["'self'", 'data:'],
          'worker-src': ["'self'", 'blob:'],
          'connect-src': ["'self'"],
          'upgrade-insecure-requests': null,
        },
      },
      hsts: false,
    }),
  );
  // /mcp: Origin check, then its own parser (same limit) whose errors are JSON-RPC errors.
  app.use('/mcp', mcpOriginCheck(cfg), mcpJsonBody(cfg.bodyLimitBytes));
  const json = express.json({ limit: cfg.bodyLimitBytes, strict: true });
  app.use((req: Request, res: Response, next: NextFunction) => {
    json(req, res, (err?: unknown) => (err ? sendError(err, req, res) : next()));
  });
  setupOpenApi(app);
  return app;
}
