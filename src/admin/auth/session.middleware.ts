import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import session from 'express-session';
import { createHmac } from 'node:crypto';
import { SessionRepository } from '../../backends/ports/session.repository';
import { ADMIN_COOKIE } from '../../common/auth/decorators';
import { sendError } from '../../common/http-exception.filter';
import { AppConfig } from '../../config/app-config';
import { SettingsService } from '../../config/settings.service';
import { RepositorySessionStore } from './repository-session.store';

const SESSION_ROUTES = new Set(['/api/login', '/api/logout']);
const HEALTH_ROUTE = '/api/health';

/**
 * express-session on every route, stored through the SessionRepository port. Cookie
 * `memstore.sid`: HttpOnly, SameSite=Lax, Secure per MEMSTORE_COOKIE_SECURE ('auto' = when the
 * request came over HTTPS), lifetime MEMSTORE_SESSION_TTL_SECONDS. No cookie until sign-in.
 */
@Injectable()
export class SessionMiddleware implements NestMiddleware {
  private handler?: RequestHandler;

  constructor(
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly sessions: SessionRepository,
  ) {}

  /** Built on first use: the service key is available once the settings are loaded. */
  private build(): RequestHandler {
    const ttlMs = this.cfg.sessionTtlSeconds * 1000;
    const secret = createHmac('sha256', this.settings.serviceKey()).update('memstore admin session cookie v1').digest('base64url');
    return session({
      name: ADMIN_COOKIE,
      secret,
      store: new RepositorySessionStore(this.sessions, ttlMs),
      resave: false,
      saveUninitialized: false,
      rolling: false,
      unset: 'destroy',
      cookie: { path: '/', httpOnly: true, sameSite: 'lax', secure: this.cfg.cookieSecure, maxAge: ttlMs },
    });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    // A Bearer request is authenticated by its token alone (the guard ignores the session then),
    // so it skips the session store entirely: no document-database read on the API hot path.
    // Sign-in and sign-out always get their session, whatever headers come along. The liveness
    // probe never touches a backend, not even the session store.
    // Express routes match any casing and a trailing slash (/API/LOGIN/ is /api/login), so compare the same way.
    if (skipsSession(req)) return next();
    this.handler ??= this.build();
    this.handler(req, res, (err?: unknown) => (err ? sendError(err, req, res) : next()));
  }
}

function skipsSession(req: Request): boolean {
  if (req.headers.authorization !== undefined) return !SESSION_ROUTES.has(routePath(req));
  return (req.method === 'GET' || req.method === 'HEAD') && routePath(req) === HEALTH_ROUTE;
}

/** The request path as Express routes compare it: lower case, without the query and trailing slashes. */
export function routePath(req: Request): string {
  const p = req.originalUrl.split('?')[0].toLowerCase().replace(/\/+$/, '');
  return p === '' ? '/' : p;
}
