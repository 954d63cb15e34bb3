import { CanActivate, ExecutionContext, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { AuditService } from '../../audit/audit.service';
import { AppConfig } from '../../config/app-config';
import { parseToken } from '../../tokens/token-secret';
import { IpAllowList } from '../../tokens/ip-allow-list';
import { ForbiddenError, UnauthorizedError } from '../errors';
import { ACCESS_KEY, AccessRule } from './decorators';
import type { Principal, TokenPrincipal } from './principal';
import { TokenAuthenticator } from './token-authenticator';

/**
 * The global guard (APP_GUARD). Deny by default: a route without an access rule is refused.
 * A Bearer header wins over a session cookie. Rules (CONTRACT §4):
 * - no / bad credentials on a protected route: 401;
 * - a token on an admin-only route, a token lacking a scope, or from a disallowed address: 403.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  private readonly metricsAddresses: IpAllowList | null;

  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokenAuthenticator,
    cfg: AppConfig,
    @Optional() private readonly audit?: AuditService,
  ) {
    // An empty MEMSTORE_METRICS_ALLOWED_IPS means no address is trusted (an empty IpAllowList would allow all).
    this.metricsAddresses = cfg.metricsAllowedIps.length > 0 ? new IpAllowList(cfg.metricsAllowedIps) : null;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, [context.getHandler(), context.getClass()]);
    const req = context.switchToHttp().getRequest<Request>();
    if (!rule) throw new ForbiddenError('This route declares no access rule');

    if (rule.kind === 'public') {
      // Public routes still learn who is calling (for /api/me), but never fail on bad credentials.
      req.principal = await this.resolve(req).catch(() => undefined);
      return true;
    }

    if (rule.kind === 'token') {
      // Bearer only: the session cookie is ignored, so a signed-in browser cannot be made to call it.
      const token = await this.bearer(req);
      if (!token) throw new UnauthorizedError('Authentication required: send Authorization: Bearer <token> (an admin session does not open this route)');
      req.principal = token;
      return true;
    }

    const principal = await this.resolve(req);
    if (!principal && rule.kind === 'metrics' && this.metricsAddresses?.allows(req.ip ?? req.socket.remoteAddress ?? '')) return true;
    if (!principal) throw new UnauthorizedError('Authentication required: send Authorization: Bearer <token> or sign in');
    req.principal = principal;
    if (principal.kind === 'token' && principal.rateLimit) {
      const res = context.switchToHttp().getResponse<Response>();
      res.setHeader('RateLimit-Limit', String(principal.rateLimit.limit));
      res.setHeader('RateLimit-Remaining', String(principal.rateLimit.remaining));
      res.setHeader('RateLimit-Reset', String(principal.rateLimit.resetSeconds));
    }

    if (principal.kind === 'admin') return true;
    switch (rule.kind) {
      case 'admin':
        throw new ForbiddenError('API tokens cannot use admin routes; sign in as the administrator');
      case 'authenticated':
        return true;
      case 'metrics':
        if (!principal.scopes.includes('metrics:read')) throw new ForbiddenError('Token lacks the required scope: metrics:read');
        return true;
      case 'scopes': {
        const missing = rule.scopes.filter((s) => !principal.scopes.includes(s));
        if (missing.length > 0) {
          const err = new ForbiddenError(`Token lacks the required scope: ${missing.join(', ')}`);
          this.audit?.recordRefusal(req, err.status, err.message, principal.tokenId);
          throw err;
        }
        return true;
      }
    }
  }

  private async resolve(req: Request): Promise<Principal | undefined> {
    if (req.headers.authorization !== undefined) return this.bearer(req);
    const admin = req.session?.admin;
    if (admin) return { kind: 'admin', username: admin.username };
    return undefined;
  }

  /** The token of the Authorization header (undefined without one; 401 when it is malformed or invalid). */
  private async bearer(req: Request): Promise<TokenPrincipal | undefined> {
    const header = req.headers.authorization;
    if (header === undefined) return undefined;
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw new UnauthorizedError('Malformed Authorization header: expected "Bearer <token>"');
    try {
      return await this.tokens.authenticate(m[1], req.ip ?? req.socket.remoteAddress ?? '');
    } catch (e) {
      // A refused token is an audit entry (aggregated per address, never the secret: AuditService.recordRefusal).
      if (e instanceof UnauthorizedError || e instanceof ForbiddenError) this.audit?.recordRefusal(req, e.status, e.message, parseToken(m[1])?.id ?? null);
      throw e;
    }
  }
}
