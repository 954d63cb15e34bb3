import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import { ApiBearerAuth, ApiCookieAuth, ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import type { Principal, Scope } from './principal';

export const ACCESS_KEY = 'memstore:access';

/** What a route needs. The global guard denies any route that does not declare one. */
export type AccessRule =
  | { kind: 'public' }
  | { kind: 'admin' }
  | { kind: 'authenticated' } // admin session or any valid token (e.g. /api/status)
  | { kind: 'token' } // a valid Bearer token only; an admin session does not count (e.g. /mcp)
  | { kind: 'scopes'; scopes: Scope[] } // a token with every scope, or an admin session
  | { kind: 'metrics' }; // an admin session, a token with metrics:read, or (without credentials) a MEMSTORE_METRICS_ALLOWED_IPS address

export const ADMIN_COOKIE = 'memstore.sid';

/** No credentials needed. */
export const Public = () => SetMetadata(ACCESS_KEY, { kind: 'public' } satisfies AccessRule);

/** Signed-in admin session only; a token gets 403. */
export const AdminOnly = () =>
  applyDecorators(
    SetMetadata(ACCESS_KEY, { kind: 'admin' } satisfies AccessRule),
    ApiCookieAuth('session'),
    ApiUnauthorizedResponse({ description: 'Not signed in' }),
    ApiForbiddenResponse({ description: 'API tokens cannot use admin routes' }),
  );

/** A signed-in admin or any valid API token. */
export const Authenticated = () =>
  applyDecorators(
    SetMetadata(ACCESS_KEY, { kind: 'authenticated' } satisfies AccessRule),
    ApiBearerAuth('bearer'),
    ApiCookieAuth('session'),
    ApiUnauthorizedResponse({ description: 'Missing, invalid, expired or revoked token' }),
  );

/**
 * A valid API token (Bearer) and nothing else: a signed-in admin session is not enough. For
 * machine endpoints that check scopes per operation themselves (the MCP endpoint).
 */
export const TokenOnly = () => SetMetadata(ACCESS_KEY, { kind: 'token' } satisfies AccessRule);

/** A token carrying every listed scope, or a signed-in admin. Also documents the security in OpenAPI. */
export const RequireScopes = (...scopes: Scope[]) =>
  applyDecorators(
    SetMetadata(ACCESS_KEY, { kind: 'scopes', scopes } satisfies AccessRule),
    ApiBearerAuth('bearer'),
    ApiCookieAuth('session'),
    ApiUnauthorizedResponse({ description: 'Missing, invalid, expired or revoked token' }),
    ApiForbiddenResponse({ description: `Token lacks scope ${scopes.join(', ')} or the client address is not allowed` }),
  );

/**
 * The token routes (issue 43, decision 0105): a signed-in admin (every token) or a token with
 * `tokens:manage` (only tokens inside its own namespaces, granting only what it holds; the service
 * enforces that). A scopes rule, so the guard's 403 names the missing scope.
 */
export const TokenManagers = () =>
  applyDecorators(
    SetMetadata(ACCESS_KEY, { kind: 'scopes', scopes: ['tokens:manage'] } satisfies AccessRule),
    ApiBearerAuth('bearer'),
    ApiCookieAuth('session'),
    ApiUnauthorizedResponse({ description: 'Not signed in, or a missing, invalid, expired or revoked token' }),
    ApiForbiddenResponse({
      description: 'Token lacks scope tokens:manage, or asks for namespaces outside its own, scopes it does not hold, a rate limit above its own or a later expiry (the answer names which)',
    }),
  );

/** GET /metrics: a signed-in admin, a token with `metrics:read`, or a client address in MEMSTORE_METRICS_ALLOWED_IPS. */
export const MetricsAccess = () =>
  applyDecorators(
    SetMetadata(ACCESS_KEY, { kind: 'metrics' } satisfies AccessRule),
    ApiBearerAuth('bearer'),
    ApiCookieAuth('session'),
    ApiUnauthorizedResponse({ description: 'No credentials, and the client address is not in MEMSTORE_METRICS_ALLOWED_IPS' }),
    ApiForbiddenResponse({ description: 'Token lacks scope metrics:read or the client address is not allowed for it' }),
  );

/** The authenticated caller (undefined on public routes without credentials). */
export const CurrentPrincipal = createParamDecorator((_: unknown, ctx: ExecutionContext): Principal | undefined => {
  return ctx.switchToHttp().getRequest<Request>().principal;
});
