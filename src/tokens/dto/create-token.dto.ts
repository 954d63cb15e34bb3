import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { SCOPES, type Scope } from '../../common/auth/principal';

export const TOKEN_PRESETS = ['read-only', 'read-write', 'full'] as const;
export type TokenPreset = (typeof TOKEN_PRESETS)[number];

export const PRESET_SCOPES: Record<TokenPreset, Scope[]> = {
  'read-only': ['memory:read'],
  'read-write': ['memory:read', 'memory:write'],
  full: ['memory:read', 'memory:write', 'memory:delete'],
};

/** Largest epoch second we accept (9999-12-31T23:59:59Z). */
export const MAX_EPOCH_SECONDS = 253402300799;
export const TOKEN_NAME_MAX = 200;
export const ALLOWED_IPS_MAX = 100;
/** Entries of a token's namespace binding (issue 43). */
export const NAMESPACES_MAX = 64;

/** `namespaces` of a token create or update: names, prefixes (`acme/*`) or `*`; each entry is checked by the service. */
function NamespacesField(): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({
      type: [String],
      nullable: true,
      example: ['acme/alice'],
      description:
        'Namespaces the token may work in: names (acme/alice), prefixes (acme/*) or * (all, admin only). Default on create: ["default"] (by a tokens:manage token: its own). A tokens:manage token may grant only namespaces inside its own',
    }),
    IsOptional(),
    IsString({ each: true, message: 'Input should be a valid string' }),
    ArrayMinSize(1, { context: { type: 'too_short', ctx: { min_length: 1 } }, message: 'List should have at least 1 item' }),
    ArrayMaxSize(NAMESPACES_MAX, { context: { type: 'too_long', ctx: { max_length: NAMESPACES_MAX } }, message: `List should have at most ${NAMESPACES_MAX} items` }),
    IsArray(),
  );
}
export const RATE_LIMIT_MAX = 1_000_000;

/** rate_limit_per_minute (create and patch): an integer from 0 (unlimited) to RATE_LIMIT_MAX; null or absent = unchanged / the default. */
function RateLimitPerMinute(): PropertyDecorator {
  // Applied in this order, as if stacked bottom-up: the integer check runs first.
  return applyDecorators(
    IsInt({ message: 'Input should be a valid integer' }),
    Min(0, { context: { type: 'greater_than_equal', ctx: { ge: 0 } }, message: 'Input should be greater than or equal to 0' }),
    Max(RATE_LIMIT_MAX, { context: { type: 'less_than_equal', ctx: { le: RATE_LIMIT_MAX } }, message: `Input should be less than or equal to ${RATE_LIMIT_MAX}` }),
    IsOptional(),
    ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: RATE_LIMIT_MAX, nullable: true, example: 600 }),
  );
}

/** Body of POST /api/tokens. */
export class CreateTokenDto {
  /** A label for people (e.g. the agent or machine using the token). */
  @ApiPropertyOptional({ example: 'laptop agent', default: '', maxLength: TOKEN_NAME_MAX })
  @IsOptional()
  @MaxLength(TOKEN_NAME_MAX, { message: `String should have at most ${TOKEN_NAME_MAX} characters`, context: { type: 'string_too_long', ctx: { max_length: TOKEN_NAME_MAX } } })
  @IsString({ message: 'Input should be a valid string' })
  name?: string | null;

  /** Scopes granted; wins over `preset`. */
  @ApiPropertyOptional({ enum: SCOPES, isArray: true, nullable: true, example: ['memory:read', 'memory:write'] })
  @IsOptional()
  @IsIn(SCOPES, { each: true, message: `Input should be ${SCOPES.map((s) => `'${s}'`).join(', ')}`, context: { type: 'enum', ctx: { expected: SCOPES.join(', ') } } })
  @ArrayMinSize(1, { context: { type: 'too_short', ctx: { min_length: 1 } }, message: 'List should have at least 1 item' })
  @IsArray()
  scopes?: Scope[] | null;

  /** The token's namespace binding (issue 43). */
  @NamespacesField()
  namespaces?: string[] | null;

  /** read-only = [memory:read]; read-write = [memory:read, memory:write]; full = all three. Default read-only. */
  @ApiPropertyOptional({ enum: TOKEN_PRESETS, nullable: true, example: 'read-write' })
  @IsOptional()
  @IsIn(TOKEN_PRESETS, { message: `Input should be ${TOKEN_PRESETS.map((s) => `'${s}'`).join(', ')}`, context: { type: 'enum', ctx: { expected: TOKEN_PRESETS.join(', ') } } })
  preset?: TokenPreset | null;

  /** Lifetime in days (1..3650). Exclusive with `expires_at`. */
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 3650, nullable: true, example: 90 })
  @IsOptional()
  @Max(3650, { context: { type: 'less_than_equal', ctx: { le: 3650 } }, message: 'Input should be less than or equal to 3650' })
  @Min(1, { context: { type: 'greater_than_equal', ctx: { ge: 1 } }, message: 'Input should be greater than or equal to 1' })
  @IsInt({ message: 'Input should be a valid integer' })
  expires_in_days?: number | null;

  /** Expiry as Unix epoch seconds, in the future. Exclusive with `expires_in_days`. */
  @ApiPropertyOptional({ type: 'integer', nullable: true, maximum: MAX_EPOCH_SECONDS, description: 'Unix epoch seconds, in the future; exclusive with expires_in_days' })
  @IsOptional()
  @Max(MAX_EPOCH_SECONDS, { context: { type: 'less_than_equal', ctx: { le: MAX_EPOCH_SECONDS } }, message: `Input should be less than or equal to ${MAX_EPOCH_SECONDS}` })
  @IsInt({ message: 'Input should be a valid integer' })
  expires_at?: number | null;

  /** IPv4/IPv6 addresses or CIDR ranges the token may be used from; empty or null = any address. */
  @ApiPropertyOptional({ type: [String], nullable: true, example: ['127.0.0.0/8', '::1'] })
  @IsOptional()
  @IsString({ each: true, message: 'Input should be a valid string' })
  @ArrayMaxSize(ALLOWED_IPS_MAX, { context: { type: 'too_long', ctx: { max_length: ALLOWED_IPS_MAX } }, message: `List should have at most ${ALLOWED_IPS_MAX} items` })
  @IsArray()
  allowed_ips?: string[] | null;

  /** Requests per minute this token may send; 0 = unlimited. Absent: the service default (MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE, 600). */
  @RateLimitPerMinute()
  rate_limit_per_minute?: number | null;
}

/** Body of PATCH /api/tokens/{token_id}. Absent or null fields are left unchanged. The secret is never rotated. */
export class UpdateTokenDto {
  @ApiPropertyOptional({ example: 'renamed agent', nullable: true, maxLength: TOKEN_NAME_MAX })
  @IsOptional()
  @MaxLength(TOKEN_NAME_MAX, { message: `String should have at most ${TOKEN_NAME_MAX} characters`, context: { type: 'string_too_long', ctx: { max_length: TOKEN_NAME_MAX } } })
  @IsString({ message: 'Input should be a valid string' })
  name?: string | null;

  @ApiPropertyOptional({ enum: SCOPES, isArray: true, nullable: true, example: ['memory:read'] })
  @IsOptional()
  @IsIn(SCOPES, { each: true, message: `Input should be ${SCOPES.map((s) => `'${s}'`).join(', ')}`, context: { type: 'enum', ctx: { expected: SCOPES.join(', ') } } })
  @ArrayMinSize(1, { context: { type: 'too_short', ctx: { min_length: 1 } }, message: 'List should have at least 1 item' })
  @IsArray()
  scopes?: Scope[] | null;

  /** The token's namespace binding (issue 43). */
  @NamespacesField()
  namespaces?: string[] | null;

  /** New expiry as Unix epoch seconds, in the future. Exclusive with `clear_expiry`. */
  @ApiPropertyOptional({ type: 'integer', nullable: true, example: 1798761600, description: 'Unix epoch seconds' })
  @IsOptional()
  @Max(MAX_EPOCH_SECONDS, { context: { type: 'less_than_equal', ctx: { le: MAX_EPOCH_SECONDS } }, message: `Input should be less than or equal to ${MAX_EPOCH_SECONDS}` })
  @IsInt({ message: 'Input should be a valid integer' })
  expires_at?: number | null;

  /** Remove the expiry (the token no longer expires). */
  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @IsBoolean({ message: 'Input should be a valid boolean' })
  clear_expiry?: boolean | null = false;

  /** Replace the allow-list; [] allows any address again. */
  @ApiPropertyOptional({ type: [String], nullable: true, example: ['10.0.0.0/8'] })
  @IsOptional()
  @IsString({ each: true, message: 'Input should be a valid string' })
  @ArrayMaxSize(ALLOWED_IPS_MAX, { context: { type: 'too_long', ctx: { max_length: ALLOWED_IPS_MAX } }, message: `List should have at most ${ALLOWED_IPS_MAX} items` })
  @IsArray()
  allowed_ips?: string[] | null;

  /** Restore a revoked token. */
  @ApiPropertyOptional({ default: false })
  @IsOptional()
  @IsBoolean({ message: 'Input should be a valid boolean' })
  unrevoke?: boolean | null = false;

  /** Requests per minute this token may send; 0 = unlimited. Absent: the service default (MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE, 600). */
  @RateLimitPerMinute()
  rate_limit_per_minute?: number | null;
}
