import type { NestExpressApplication } from '@nestjs/platform-express';
import helmet, { type HelmetOptions } from 'helmet';
import { answerClientErrors } from './common/client-error';
import { jsonBodyParser } from './common/json-body';
import { namespaceChoice } from './namespaces/request-namespace';
import { requestId } from './common/request-id.middleware';
import { AppConfig } from './config/app-config';
import { mcpJsonBody, mcpOriginCheck } from './mcp/mcp-http';
import { OAuthService } from './oauth/oauth.service';
import express from 'express';
import { setupOpenApi } from './meta/openapi';
import { accessLog } from './observability/access-log.middleware';
import { MetricsService } from './observability/metrics.service';

/** The security headers of every response (helmet: CSP for the admin page and the API docs, no HSTS: TLS is the proxy's). */
export const HELMET_OPTIONS: HelmetOptions = {
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
};

/**
 * The HTTP pipeline ahead of the Nest middleware and routes: plain Express middleware and the API
 * docs (the modules bind their own middleware in `configure()`). Used by main.ts and by every
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
  app.use(helmet(HELMET_OPTIONS));
  // /mcp: Origin check, then its own parser (same limit) whose errors are JSON-RPC errors.
  app.use('/mcp', mcpOriginCheck(cfg), mcpJsonBody(cfg.bodyLimitBytes));
  // Bounded work per request before any parsing library: byte limit, Content-Encoding, then one
  // linear pass (depth, keys, values, lone surrogates) before JSON.parse (src/common/json-body.ts).
  // OAuth for MCP connectors (MEMSTORE_OAUTH; src/oauth): oidc-provider reads its own bodies and
  // sets its own cookies, so it sits ahead of the JSON parser and the admin session.
  const oauth = app.get(OAuthService);
  app.use('/oauth', oauth.handler());
  app.use('/.well-known/oauth-authorization-server/oauth', oauth.metadataHandler());
  app.use('/oauth-consent', express.urlencoded({ extended: false, limit: '16kb' }));
  app.use(jsonBodyParser(cfg.bodyLimitBytes));
  // The namespace a REST request chose (header, query or body field), out of the fields the DTOs validate (issue 43).
  app.use(namespaceChoice);
  setupOpenApi(app);
  answerClientErrors(app.getHttpServer());
  return app;
}
