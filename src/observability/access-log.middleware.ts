import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { requestLogContext } from './json-logger';
import { MetricsService } from './metrics.service';

/**
 * The path of the route Nest registers for middleware bound with `forRoutes('*')`: Express sets
 * it as `req.route` when the middleware runs, and it stays there when no controller route matches.
 */
const MIDDLEWARE_CATCH_ALL = '/{*path}';

/** The route template a request matched (`/api/memories/:memory_id`), never its raw URL. */
export function routeTemplate(req: Request, status: number): string {
  const route: unknown = req.route;
  const path = route !== null && typeof route === 'object' && 'path' in route ? route.path : undefined;
  // A mounted router's own root ('/' under /docs) is its mount path.
  if (typeof path === 'string' && path !== MIDDLEWARE_CATCH_ALL) return req.baseUrl && path === '/' ? req.baseUrl : `${req.baseUrl ?? ''}${path}`;
  return status === 404 ? 'unmatched' : 'other';
}

/**
 * Counts every request for /metrics and, with MEMSTORE_LOG_FORMAT=json, writes one access-log line
 * per request: request_id (= the X-Request-Id response header), method, route template, status,
 * duration_ms, token_id (when a token was used), remote_addr. Never the query string, a header
 * value, a cookie or a body. Lines logged while the request is served carry its request_id too.
 * Install after the request-id middleware.
 */
export function accessLog(metrics: MetricsService, writeLog: boolean) {
  const logger = new Logger('http');
  return (req: Request, res: Response, next: NextFunction): void => {
    const start = process.hrtime.bigint();
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const status = res.headersSent ? res.statusCode : 499; // 499: the client went away before an answer
      const route = routeTemplate(req, status);
      const labels = { method: req.method, route, status: String(status) };
      metrics.httpRequests.inc(labels);
      metrics.httpDuration.observe(labels, seconds);
      if (status === 429) metrics.throttled.inc({ route });
      if (status === 401 && req.method === 'POST' && route === '/api/login') metrics.loginFailures.inc();
      if (req.method === 'GET' && route === '/api/memories' && status < 400 && typeof req.query?.q === 'string' && req.query.q !== '') {
        metrics.observeSearch((res.locals.searchMode as string | undefined) ?? (typeof req.query.mode === 'string' ? req.query.mode : undefined), seconds);
      }
      if (!writeLog) return;
      const principal = req.principal;
      const line = {
        message: `${req.method} ${route} ${status} ${(seconds * 1000).toFixed(1)} ms`,
        request_id: req.id,
        method: req.method,
        route,
        status,
        duration_ms: Math.round(seconds * 1e4) / 10,
        token_id: principal?.kind === 'token' ? principal.tokenId : undefined,
        admin: principal?.kind === 'admin' ? true : undefined,
        remote_addr: req.ip,
      };
      if (status >= 500) logger.error(line);
      else logger.log(line);
    };
    res.once('finish', finish);
    res.once('close', finish);
    requestLogContext.run({ request_id: req.id, request: req }, next);
  };
}
