import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { ForbiddenError, UnauthorizedError } from '../errors';
import { ACCESS_KEY, AccessRule } from './decorators';
import type { Principal } from './principal';
import { TokenAuthenticator } from './token-authenticator';

/**
 * The global guard (APP_GUARD). Deny by default: a route without an access rule is refused.
 * A Bearer header wins over a session cookie. Rules (CONTRACT §4):
 * - no / bad credentials on a protected route: 401;
 * - a token on an admin-only route, a token lacking a scope, or from a disallowed address: 403.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokenAuthenticator,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const rule = this.reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, [context.getHandler(), context.getClass()]);
    const req = context.switchToHttp().getRequest<Request>();
    if (!rule) throw new ForbiddenError('This route declares no access rule');

    if (rule.kind === 'public') {
      // Public routes still learn who is calling (for /api/me), but never fail on bad credentials.
      req.principal = await this.resolve(req).catch(() => undefined);
      return true;
    }

    const principal = await this.resolve(req);
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
      case 'scopes': {
        const missing = rule.scopes.filter((s) => !principal.scopes.includes(s));
        if (missing.length > 0) throw new ForbiddenError(`Token lacks the required scope: ${missing.join(', ')}`);
        return true;
      }
    }
  }

  private async resolve(req: Request): Promise<Principal | undefined> {
    const header = req.headers.authorization;
    if (header !== undefined) {
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) throw new UnauthorizedError('Malformed Authorization header: expected "Bearer <token>"');
      return this.tokens.authenticate(m[1], req.ip ?? req.socket.remoteAddress ?? '');
    }
    const admin = req.session?.admin;
    if (admin) return { kind: 'admin', username: admin.username };
    return undefined;
  }
}
