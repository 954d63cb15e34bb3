import 'express-session';

/** `tokens:manage` (issue 43): create, list, change and revoke tokens inside the token's own namespaces and scopes. */
export const SCOPES = ['memory:read', 'memory:write', 'memory:delete', 'metrics:read', 'tokens:manage'] as const;
export type Scope = (typeof SCOPES)[number];

export interface AdminPrincipal {
  kind: 'admin';
  username: string;
}

export interface TokenPrincipal {
  kind: 'token';
  tokenId: string;
  /** The token's name (recorded as the author of the memory versions it writes). */
  name?: string;
  scopes: Scope[];
  /** The namespaces the token is bound to (issue 43): names, prefixes `p/*`, or `*`; tokens from before namespaces: ['default']. */
  namespaces: string[];
  /** The token's rate-limit state after this request (absent for unlimited tokens): sent as RateLimit-* headers. */
  rateLimit?: { limit: number; remaining: number; resetSeconds: number };
}

export type Principal = AdminPrincipal | TokenPrincipal;

declare module 'express-session' {
  interface SessionData {
    admin?: { username: string; signedInAt: number };
  }
}

declare module 'express-serve-static-core' {
  interface Request {
    id?: string;
    principal?: Principal;
  }
}
