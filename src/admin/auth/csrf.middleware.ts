import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ForbiddenError } from '../../common/errors';
import { sendError } from '../../common/http-exception.filter';
import { AppConfig } from '../../config/app-config';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Cross-site request forgery guard for cookie-authenticated writes. The cookie is already
 * SameSite=Lax; on top, a state-changing request without a Bearer header is refused (403)
 * when the browser says it is cross-site (Sec-Fetch-Site) or its Origin is not this service.
 * Clients that send neither header (curl, SDKs) are not affected.
 */
@Injectable()
export class CsrfMiddleware implements NestMiddleware {
  private readonly publicOrigin: string | null;

  constructor(cfg: AppConfig) {
    this.publicOrigin = cfg.publicUrl ? new URL(cfg.publicUrl).origin : null;
  }

  use(req: Request, res: Response, next: NextFunction): void {
    if (SAFE.has(req.method) || req.headers.authorization !== undefined) return next();
    const site = req.headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') return this.refuse(req, res);
    const origin = req.headers.origin;
    if (origin !== undefined && !this.sameOrigin(origin, req)) return this.refuse(req, res);
    next();
  }

  private sameOrigin(origin: string, req: Request): boolean {
    if (this.publicOrigin !== null && origin === this.publicOrigin) return true;
    const host = req.get('host');
    return host !== undefined && origin === `${req.protocol}://${host}`;
  }

  private refuse(req: Request, res: Response): void {
    sendError(new ForbiddenError('Cross-site request refused'), req, res);
  }
}
