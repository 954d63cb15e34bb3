import { ApiProperty } from '@nestjs/swagger';
import { SCOPES, type Scope } from '../../common/auth/principal';
import type { TokenRecord } from '../../backends/ports/token.repository';
import { TOKEN_PREFIX } from '../token-secret';

export const TOKEN_STATUSES = ['active', 'revoked', 'expired'] as const;
export type TokenStatus = (typeof TOKEN_STATUSES)[number];

/** A token as the API shows it: never the secret or its hash. */
export class TokenDto {
  @ApiProperty({ example: '3f9a0c1d2e4b5a69', description: '16 lowercase hex characters' })
  id: string;

  @ApiProperty({ example: 'laptop agent' })
  name: string;

  @ApiProperty({ example: 'mem_tok_3f9a0c1d2e4b5a69', description: 'The public part of the plaintext token' })
  prefix: string;

  @ApiProperty({ enum: SCOPES, isArray: true, example: ['memory:read', 'memory:write'] })
  scopes: Scope[];

  @ApiProperty({ type: [String], example: ['default'], description: 'Namespaces the token may work in (names, prefixes p/*, or *)' })
  namespaces: string[];

  @ApiProperty({ enum: TOKEN_STATUSES, example: 'active', description: 'Computed: revoked wins over expired' })
  status: TokenStatus;

  @ApiProperty({ example: '2026-11-21T09:30:00.000Z', format: 'date-time' })
  created_at: string;

  @ApiProperty({ type: 'integer', nullable: true, example: 1798761600, description: 'Unix epoch seconds, or null for no expiry' })
  expires_at: number | null;

  @ApiProperty({ type: [String], example: ['127.0.0.0/8'], description: 'Empty = any address' })
  allowed_ips: string[];

  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: '2026-11-21T10:02:11.417Z', description: 'Updated at most once a minute' })
  last_used_at: string | null;

  @ApiProperty({ type: String, nullable: true, format: 'date-time', example: null, description: 'Set by a revocation, also when the token that minted it was revoked or deleted' })
  revoked_at: string | null;

  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'The id of the manager token (tokens:manage) that minted it; null when the administrator did. Revoking or deleting that token revokes this one.',
  })
  created_by: string | null;

  @ApiProperty({ type: 'integer', minimum: 0, example: 600, description: 'Requests per minute this token may send; 0 = unlimited' })
  rate_limit_per_minute: number;

  @ApiProperty({ type: 'integer', minimum: 0, example: 12, description: 'Requests per minute recently admitted for this token (as counted by the instance that answers)' })
  recent_requests_per_minute: number;
}

export function tokenStatus(t: TokenRecord, now = Date.now()): TokenStatus {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && t.expiresAt.getTime() <= now) return 'expired';
  return 'active';
}

/** The rate figures of a token record: its effective limit and recent rate. */
export interface TokenRate {
  limit: number;
  recent: number;
}

export function mapToken(t: TokenRecord, rate: TokenRate, now = Date.now()): TokenDto {
  return {
    id: t.id,
    name: t.name,
    prefix: `${TOKEN_PREFIX}${t.id}`,
    scopes: [...t.scopes],
    namespaces: [...t.namespaces],
    status: tokenStatus(t, now),
    created_at: t.createdAt.toISOString(),
    expires_at: t.expiresAt ? Math.floor(t.expiresAt.getTime() / 1000) : null,
    allowed_ips: [...t.allowedIps],
    last_used_at: t.lastUsedAt ? t.lastUsedAt.toISOString() : null,
    revoked_at: t.revokedAt ? t.revokedAt.toISOString() : null,
    created_by: t.createdBy,
    rate_limit_per_minute: rate.limit,
    recent_requests_per_minute: rate.recent,
  };
}

export class TokenResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ type: TokenDto })
  token: TokenDto;
}

export class CreatedTokenResponseDto extends TokenResponseDto {
  @ApiProperty({ example: 'mem_tok_3f9a0c1d2e4b5a69_q9V2w0lH0y3f8m4o1pV7f5bM2aT6sXc9eK0dR3uJ8nA', description: 'Shown once; store it now' })
  plaintext: string;
}

export class TokenListResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ type: [TokenDto], description: 'Newest first' })
  tokens: TokenDto[];
}

export class TokenDeletedResponseDto {
  @ApiProperty({ example: true })
  ok: true;

  @ApiProperty({ example: true })
  deleted: true;

  @ApiProperty({ example: '3f9a0c1d2e4b5a69' })
  id: string;
}
