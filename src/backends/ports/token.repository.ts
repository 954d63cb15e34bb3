import type { Scope } from '../../common/auth/principal';

export interface TokenRecord {
  id: string; // 16 lowercase hex
  name: string;
  /** Keyed hash of the secret (never the secret itself). */
  secretHash: string;
  scopes: Scope[];
  /** Namespaces the token may work in (issue 43): names, prefixes `p/*`, or `*`. Tokens from before namespaces read as ['default']. */
  namespaces: string[];
  createdAt: Date;
  expiresAt: Date | null;
  allowedIps: string[];
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  /** Requests per rate-limit window (a minute); 0 = unlimited; null = the service default (tokens made before limits existed). */
  rateLimitPerMinute: number | null;
  /** The manager token that minted it (tokens:manage); null when the administrator did, or for tokens from before this was kept. Revoking a token revokes what it minted. */
  createdBy: string | null;
}

export type TokenPatch = Partial<Pick<TokenRecord, 'name' | 'scopes' | 'namespaces' | 'expiresAt' | 'allowedIps' | 'revokedAt' | 'lastUsedAt' | 'rateLimitPerMinute'>>;

/** API tokens in the document database. */
export abstract class TokenRepository {
  abstract create(record: TokenRecord): Promise<void>;
  abstract findById(id: string): Promise<TokenRecord | null>;
  /** Newest first. */
  abstract list(): Promise<TokenRecord[]>;
  abstract update(id: string, patch: TokenPatch): Promise<TokenRecord | null>;
  abstract delete(id: string): Promise<boolean>;
}
