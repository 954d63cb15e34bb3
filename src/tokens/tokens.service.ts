import { Injectable } from '@nestjs/common';
import { SCOPES, type Principal, type Scope, type TokenPrincipal } from '../common/auth/principal';
import { TokenAuthenticator } from '../common/auth/token-authenticator';
import { bindingEntryProblem, bindingWithin, DEFAULT_NAMESPACE } from '../namespaces/namespace';
import { ForbiddenError, NotFoundError, RequestValidationError, UnauthorizedError } from '../common/errors';
import { TokenPatch, TokenRecord, TokenRepository } from '../backends/ports/token.repository';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { CreateTokenDto, PRESET_SCOPES, UpdateTokenDto } from './dto/create-token.dto';
import { entriesOutside, IpAllowList, normalizeAllowList } from './ip-allow-list';
import { TokenRateLimiter } from './token-rate-limiter';
import { hashSecret, newTokenId, newTokenSecret, parseToken, plaintextToken, sameHash, TOKEN_ID_RE } from './token-secret';

/** `last_used_at` is written at most once per this period per token. */
export const LAST_USED_INTERVAL_MS = 60_000;
/**
 * How long the token check reuses a token record it read (README, "Tokens and sessions"): a change made on
 * this instance applies at once; one made by another instance sharing the database, within this.
 */
export const TOKEN_RECORD_TTL_MS = 1_000;
/** At most this many records are kept (tokens in use within TOKEN_RECORD_TTL_MS; the oldest go first). */
const TOKEN_RECORDS_KEPT = 10_000;
const DAY_S = 86_400;

/** The signed-in administrator (manages every token); the default manager of the service's methods. */
const ADMIN: TokenManager = { kind: 'admin', username: 'admin' };

/** Scopes in their canonical order, without duplicates. */
function canonicalScopes(scopes: Scope[]): Scope[] {
  return SCOPES.filter((s) => scopes.includes(s));
}

/**
 * A namespace binding as given (issue 43): each entry a name, a prefix `p/*` or `*`
 * (bindingEntryProblem), duplicates dropped; 422 naming the entry otherwise. Whether the caller may
 * grant it is checkGrant's concern.
 */
export function checkedBinding(entries: string[]): string[] {
  entries.forEach((e, i) => {
    const problem = bindingEntryProblem(e);
    if (problem) throw RequestValidationError.one(['body', 'namespaces', i], `Value error, ${problem} (a name, a prefix such as "acme/*", or "*")`, 'value_error', e);
  });
  return [...new Set(entries)];
}

/**
 * Who manages tokens (issue 43, decision 0105): the signed-in admin manages every token; a token
 * with `tokens:manage` only those whose binding lies inside its own. For such a manager a token
 * outside its binding does not exist (404), and it may create or change a token only into one it
 * could hold itself: namespaces inside its own binding, scopes it holds, a rate limit no higher
 * than its own, no expiry later than its own, no address outside its allow-list (403 naming what
 * exceeds).
 */
export type TokenManager = Principal;

/** Whether `manager` may see and manage `record` at all. */
function manages(manager: TokenManager, record: TokenRecord): boolean {
  return manager.kind === 'admin' || bindingWithin(manager.namespaces, record.namespaces);
}

/** 403 naming the namespaces or scopes a manager token may not grant (the admin may grant anything). */
function checkGrant(manager: TokenManager, namespaces: string[], scopes: Scope[]): void {
  if (manager.kind === 'admin') return;
  const outside = namespaces.filter((e) => !bindingWithin(manager.namespaces, [e]));
  if (outside.length > 0) {
    throw new ForbiddenError(`Namespaces outside this token's own (${manager.namespaces.join(', ')}): ${outside.join(', ')}`);
  }
  const lacking = scopes.filter((s) => !manager.scopes.includes(s));
  if (lacking.length > 0) throw new ForbiddenError(`Scopes this token does not hold itself: ${lacking.join(', ')}`);
}

/**
 * The expiry `manager` may give a token (`own`: the manager token's record): a manager token that
 * expires may not mint one that outlives it (asked for explicitly: 403; by default the token
 * expires with the manager).
 */
function grantedExpiry(manager: TokenManager, own: TokenRecord | null, wanted: Date | null, explicit: boolean): Date | null {
  const limit = manager.kind === 'admin' ? null : (own?.expiresAt ?? null);
  if (limit === null || (wanted !== null && wanted.getTime() <= limit.getTime())) return wanted;
  if (explicit) throw new ForbiddenError(`The token would outlive this token, which expires at ${limit.toISOString()}`);
  return limit;
}

/**
 * The addresses `manager` may let a token be used from (`own`: the manager token's record): a
 * manager token with an allow-list of its own mints only tokens inside it (an explicit wider or
 * empty list: 403 naming what lies outside; by default the token gets the manager's own list).
 */
function grantedAllowList(manager: TokenManager, own: TokenRecord | null, wanted: string[] | null): string[] {
  if (manager.kind === 'admin') return wanted ?? [];
  const list = own?.allowedIps ?? [];
  if (wanted === null) return [...list];
  const outside = wanted.length === 0 && list.length > 0 ? ['every address (an empty list)'] : entriesOutside(list, wanted);
  if (outside.length > 0) throw new ForbiddenError(`allowed_ips outside this token's own (${list.join(', ')}): ${outside.join(', ')}`);
  return wanted;
}

/**
 * API tokens (CONTRACT §4): issue, list, change, revoke, delete, and check a Bearer token on
 * every request (one HMAC, and one indexed lookup unless the record was read within TOKEN_RECORD_TTL_MS).
 */
@Injectable()
export class TokensService extends TokenAuthenticator {
  /** When this process last wrote last_used_at per token (saves a read-modify-write race between concurrent requests). */
  private readonly lastUseWrites = new Map<string, number>();
  /** Token records the check read recently, with when they were read. */
  private readonly recent = new Map<string, { record: TokenRecord; readAt: number }>();
  /** Bumped by every change of a token on this instance: a read that overlapped a change is not kept. */
  private changes = 0;

  constructor(
    private readonly repo: TokenRepository,
    private readonly settings: SettingsService,
    private readonly cfg: AppConfig,
    private readonly limiter: TokenRateLimiter,
  ) {
    super();
  }

  /** The limit a token works under: its own, or the service default for tokens made without one. */
  rateLimitOf(record: TokenRecord): number {
    return record.rateLimitPerMinute ?? this.cfg.tokenRateLimitPerMinute;
  }

  /** Requests per minute this instance admitted for the token recently. */
  recentRate(id: string): number {
    return this.limiter.recentRate(id);
  }

  async create(dto: CreateTokenDto, manager: TokenManager = ADMIN): Promise<{ record: TokenRecord; plaintext: string }> {
    const now = Date.now();
    if (dto.expires_in_days != null && dto.expires_at != null) {
      throw RequestValidationError.one(['body'], 'Value error, give either expires_in_days or expires_at, not both', 'value_error', {
        expires_in_days: dto.expires_in_days,
        expires_at: dto.expires_at,
      });
    }
    let expiresAt: Date | null = null;
    if (dto.expires_in_days != null) expiresAt = new Date((Math.floor(now / 1000) + dto.expires_in_days * DAY_S) * 1000);
    if (dto.expires_at != null) expiresAt = this.futureExpiry(dto.expires_at, now);
    const own = await this.ownRecord(manager);
    expiresAt = grantedExpiry(manager, own, expiresAt, dto.expires_in_days != null || dto.expires_at != null);

    const scopes = dto.scopes != null ? canonicalScopes(dto.scopes) : PRESET_SCOPES[dto.preset ?? 'read-only'];
    const namespaces = dto.namespaces != null ? checkedBinding(dto.namespaces) : manager.kind === 'token' ? [...manager.namespaces] : [DEFAULT_NAMESPACE];
    checkGrant(manager, namespaces, scopes);
    const rateLimitPerMinute = this.grantedRateLimit(manager, dto.rate_limit_per_minute ?? this.cfg.tokenRateLimitPerMinute, dto.rate_limit_per_minute != null);
    const allowedIps = grantedAllowList(manager, own, dto.allowed_ips != null ? normalizeAllowList(dto.allowed_ips) : null);
    const id = newTokenId();
    const secret = newTokenSecret();
    const record: TokenRecord = {
      id,
      name: (dto.name ?? '').trim(),
      secretHash: hashSecret(this.settings.serviceKeyObject(), secret),
      scopes,
      namespaces,
      createdAt: new Date(now),
      expiresAt,
      allowedIps,
      lastUsedAt: null,
      revokedAt: null,
      rateLimitPerMinute,
      createdBy: manager.kind === 'token' ? manager.tokenId : null,
    };
    await this.repo.create(record);
    return { record, plaintext: plaintextToken(id, secret) };
  }

  /** Every token for the admin; for a manager token, those inside its binding. */
  async list(manager: TokenManager = ADMIN): Promise<TokenRecord[]> {
    return (await this.repo.list()).filter((t) => manages(manager, t));
  }

  async update(id: string, dto: UpdateTokenDto, manager: TokenManager = ADMIN): Promise<TokenRecord> {
    const current = await this.get(id, manager);
    if (dto.clear_expiry && dto.expires_at != null) {
      throw RequestValidationError.one(['body'], 'Value error, give either expires_at or clear_expiry, not both', 'value_error', {
        expires_at: dto.expires_at,
        clear_expiry: dto.clear_expiry,
      });
    }
    const patch: TokenPatch = {};
    if (dto.name != null) patch.name = dto.name.trim();
    if (dto.scopes != null) patch.scopes = canonicalScopes(dto.scopes);
    if (dto.namespaces != null) patch.namespaces = checkedBinding(dto.namespaces);
    if (dto.expires_at != null) patch.expiresAt = this.futureExpiry(dto.expires_at, Date.now());
    if (dto.clear_expiry) patch.expiresAt = null;
    const own = patch.expiresAt !== undefined || dto.allowed_ips != null ? await this.ownRecord(manager) : null;
    if (patch.expiresAt !== undefined) patch.expiresAt = grantedExpiry(manager, own, patch.expiresAt, true);
    if (dto.allowed_ips != null) patch.allowedIps = grantedAllowList(manager, own, normalizeAllowList(dto.allowed_ips));
    if (dto.unrevoke) patch.revokedAt = null;
    // A manager changes a token only into one it could have minted: checked on the token as it would be afterwards.
    checkGrant(manager, patch.namespaces ?? current.namespaces, patch.scopes ?? current.scopes);
    if (dto.rate_limit_per_minute != null && dto.rate_limit_per_minute !== current.rateLimitPerMinute) {
      patch.rateLimitPerMinute = this.grantedRateLimit(manager, dto.rate_limit_per_minute, true);
      this.limiter.forget(id); // the new limit applies from the next request on (its window keeps counting)
    }
    if (Object.keys(patch).length === 0) return current;
    return this.updateOrNotFound(id, patch);
  }

  /**
   * Idempotent: revoking a revoked token keeps its first revocation time. The tokens it minted, and
   * theirs, are revoked with it (decision 0163); asked again, it finishes a cascade that failed.
   */
  async revoke(id: string, manager: TokenManager = ADMIN): Promise<TokenRecord> {
    const current = await this.get(id, manager);
    const revoked = current.revokedAt ? current : await this.updateOrNotFound(id, { revokedAt: new Date() });
    await this.revokeMintedBy(id, revoked.revokedAt ?? new Date());
    return revoked;
  }

  /**
   * Deleting a token revokes what it minted first (decision 0163): they stay listed, revoked, and
   * a delete that fails on the way leaves the token to be deleted again.
   */
  async delete(id: string, manager: TokenManager = ADMIN): Promise<void> {
    if (manager.kind === 'token') await this.get(id, manager); // 404 outside its binding
    if (!TOKEN_ID_RE.test(id)) throw new NotFoundError('Token not found');
    await this.revokeMintedBy(id, new Date());
    if (!(await this.repo.delete(id).finally(() => this.forget(id)))) throw new NotFoundError('Token not found');
    this.lastUseWrites.delete(id);
    this.limiter.forget(id);
  }

  /** Revokes every token `id` minted, directly or through tokens it minted, that is not revoked yet. */
  private async revokeMintedBy(id: string, at: Date): Promise<void> {
    const minted = new Map<string, TokenRecord[]>();
    for (const t of await this.repo.list()) if (t.createdBy) minted.set(t.createdBy, [...(minted.get(t.createdBy) ?? []), t]);
    const seen = new Set([id]);
    const queue = [id];
    for (let parent = queue.shift(); parent !== undefined; parent = queue.shift()) {
      for (const child of minted.get(parent) ?? []) {
        if (seen.has(child.id)) continue;
        seen.add(child.id);
        queue.push(child.id);
        if (!child.revokedAt) await this.repo.update(child.id, { revokedAt: at }).finally(() => this.forget(child.id));
      }
    }
  }

  /** The auth guard's hot path (also any other entry point that authenticates tokens, e.g. /mcp): rate limits are applied here. */
  override async authenticate(bearer: string, clientIp: string): Promise<TokenPrincipal> {
    const parsed = parseToken(bearer);
    if (!parsed) throw new UnauthorizedError('Malformed API token: expected mem_tok_<id>_<secret>');
    const record = await this.recentRecord(parsed.id);
    const presented = hashSecret(this.settings.serviceKeyObject(), parsed.secret);
    if (!record || !sameHash(presented, record.secretHash)) throw new UnauthorizedError('Invalid API token');
    const now = Date.now();
    if (record.revokedAt) throw new UnauthorizedError('API token has been revoked');
    if (record.expiresAt && record.expiresAt.getTime() <= now) throw new UnauthorizedError('API token has expired');
    if (!new IpAllowList(record.allowedIps).allows(clientIp)) {
      throw new ForbiddenError(`This API token may not be used from ${clientIp}`);
    }
    // Counted only once the token is known to be good: a wrong secret cannot use up someone's limit.
    const rateLimit = await this.limiter.take(record.id, this.rateLimitOf(record));
    await this.noteUse(record, now);
    return { kind: 'token', tokenId: record.id, name: record.name, scopes: [...record.scopes], namespaces: [...record.namespaces], ...(rateLimit ? { rateLimit } : {}) };
  }

  /**
   * Whether a token still exists, is neither revoked nor expired, and has `scope` (a signed download
   * link made by a token works only while this holds, issue 46). Read like authenticate: at most
   * TOKEN_RECORD_TTL_MS old, and afresh after a change made here.
   */
  async stillAllows(id: string, scope: TokenPrincipal['scopes'][number]): Promise<boolean> {
    const record = TOKEN_ID_RE.test(id) ? await this.recentRecord(id) : null;
    if (!record || record.revokedAt) return false;
    if (record.expiresAt && record.expiresAt.getTime() <= Date.now()) return false;
    return record.scopes.includes(scope);
  }

  /** The token's record as read at most TOKEN_RECORD_TTL_MS ago (null: no such token; never kept). */
  private async recentRecord(id: string): Promise<TokenRecord | null> {
    const now = Date.now();
    const kept = this.recent.get(id);
    if (kept && now - kept.readAt < TOKEN_RECORD_TTL_MS && now >= kept.readAt) return kept.record;
    const changesBefore = this.changes;
    const record = await this.repo.findById(id);
    this.recent.delete(id);
    if (record && changesBefore === this.changes) {
      if (this.recent.size >= TOKEN_RECORDS_KEPT) this.recent.delete(this.recent.keys().next().value as string);
      this.recent.set(id, { record, readAt: now });
    }
    return record;
  }

  /** A token changed here: the check reads it afresh (and a read that was in flight is not kept). */
  private forget(id: string): void {
    this.changes++;
    this.recent.delete(id);
  }

  private async noteUse(record: TokenRecord, now: number): Promise<void> {
    const last = Math.max(record.lastUsedAt?.getTime() ?? 0, this.lastUseWrites.get(record.id) ?? 0);
    if (now - last < LAST_USED_INTERVAL_MS) return;
    this.lastUseWrites.set(record.id, now);
    await this.repo.update(record.id, { lastUsedAt: new Date(now) });
  }

  /** The token as `manager` may see it: one outside a manager token's binding is not found, like an absent one. */
  private async get(id: string, manager: TokenManager = ADMIN): Promise<TokenRecord> {
    const record = TOKEN_ID_RE.test(id) ? await this.repo.findById(id) : null;
    if (!record || !manages(manager, record)) throw new NotFoundError('Token not found');
    return record;
  }

  /**
   * The rate limit `manager` may give a token (0 = unlimited). A manager token with a limit of its
   * own may not mint a faster or unlimited token: asked for explicitly, that is a 403; by default
   * the token gets the manager's own limit.
   */
  private grantedRateLimit(manager: TokenManager, wanted: number, explicit: boolean): number {
    const own = manager.kind === 'token' ? (manager.rateLimit?.limit ?? 0) : 0;
    if (own === 0 || (wanted > 0 && wanted <= own)) return wanted;
    if (explicit) throw new ForbiddenError(`rate_limit_per_minute ${wanted === 0 ? '0 (unlimited)' : wanted} exceeds this token's own limit of ${own} per minute`);
    return own;
  }

  private async updateOrNotFound(id: string, patch: TokenPatch): Promise<TokenRecord> {
    const updated = await this.repo.update(id, patch).finally(() => this.forget(id));
    if (!updated) throw new NotFoundError('Token not found');
    return updated;
  }

  /** A manager token's own record (its expiry and allow-list bound what it grants), read once per change; null for the admin. */
  private async ownRecord(manager: TokenManager): Promise<TokenRecord | null> {
    return manager.kind === 'admin' ? null : this.repo.findById(manager.tokenId);
  }

  private futureExpiry(epochSeconds: number, now: number): Date {
    if (epochSeconds * 1000 <= now) {
      throw RequestValidationError.one(['body', 'expires_at'], 'Value error, expires_at must be in the future (Unix epoch seconds)', 'value_error', epochSeconds);
    }
    return new Date(epochSeconds * 1000);
  }
}
