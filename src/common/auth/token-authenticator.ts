import type { TokenPrincipal } from './principal';

/**
 * Port the auth guard uses to check a Bearer token (implemented by TokensModule).
 * Throws UnauthorizedError (missing/malformed/unknown/wrong secret/revoked/expired) or
 * ForbiddenError (client address outside the token's allow-list).
 */
export abstract class TokenAuthenticator {
  abstract authenticate(bearer: string, clientIp: string): Promise<TokenPrincipal>;
}
