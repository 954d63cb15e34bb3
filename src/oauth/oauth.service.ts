import { Injectable, Logger } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { createHmac, createPrivateKey } from 'node:crypto';
import Provider, { errors, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { AuditService } from '../audit/audit.service';
import { rateLimit } from 'express-rate-limit';
import { SharedRateLimitStore } from '../admin/auth/shared-rate-limit.store';
import { RateLimitRepository } from '../backends/ports/rate-limit.repository';
import { SessionRepository } from '../backends/ports/session.repository';
import { TokenRepository } from '../backends/ports/token.repository';
import type { Scope } from '../common/auth/principal';
import { AppConfig } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { TokensService } from '../tokens/tokens.service';
import { oauthAdapterFactory } from './oauth-store';

/** The scopes a connector may ask for (metrics:read is not for connectors). */
export const OAUTH_SCOPES: Scope[] = ['memory:read', 'memory:write', 'memory:delete'];
/** Lifetime of an access token (one of our API tokens) and of a grant (its refresh tokens). */
const ACCESS_TTL_S = 3600;
const GRANT_TTL_S = 30 * 86_400;
/** Dynamic client registrations one client address may make per hour. */
const REGISTRATIONS_PER_HOUR = 30;

export interface OAuthUrls {
  /** The authorization server (oidc-provider, mounted at /oauth). */
  issuer: string;
  /** The protected resource: the MCP endpoint for OAuth clients. */
  resource: string;
  /** Its Protected Resource Metadata (RFC 9728). */
  resourceMetadata: string;
}

export function oauthUrls(publicUrl: string): OAuthUrls {
  return {
    issuer: `${publicUrl}/oauth`,
    resource: `${publicUrl}/mcp/oauth`,
    resourceMetadata: `${publicUrl}/.well-known/oauth-protected-resource/mcp/oauth`,
  };
}

/**
 * OAuth 2.1 for MCP connectors (docs/decisions/0040-oauth-for-connectors.md): oidc-provider is the
 * authorization server (DCR, PKCE S256, resource indicators, refresh rotation); the access token a
 * client receives is one of our API tokens, minted at the token endpoint for the consented scopes.
 */
@Injectable()
export class OAuthService {
  private readonly logger = new Logger('OAuth');
  private provider?: Provider;
  readonly urls: OAuthUrls | null;

  constructor(
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly sessions: SessionRepository,
    private readonly tokens: TokensService,
    private readonly tokenRepo: TokenRepository,
    private readonly audit: AuditService,
    private readonly counters: RateLimitRepository,
  ) {
    this.urls = cfg.oauth && cfg.publicUrl ? oauthUrls(cfg.publicUrl) : null;
  }

  get enabled(): boolean {
    return this.urls !== null;
  }

  /** The provider, built on first use (the cookie keys derive from the service key, loaded with the settings). */
  oidc(): Provider {
    if (!this.urls) throw new Error('OAuth is off');
    this.provider ??= this.build(this.urls);
    return this.provider;
  }

  /** Express handler for /oauth (mounted by configureApp); a 404 when OAuth is off. */
  handler(): RequestHandler {
    // Registration is open (connectors register themselves): bounded per client address, across instances.
    const registrations = rateLimit({
      store: new SharedRateLimitStore('oauth-reg:', this.counters, (e) => this.logger.warn(`Registration limit on this instance only: ${(e as Error).message}`)),
      windowMs: 3_600_000,
      limit: REGISTRATIONS_PER_HOUR,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: (_req, res) => {
        res.status(429).json({ error: 'invalid_request', error_description: 'Too many client registrations from this address; try again later' });
      },
    });
    return (req: Request, res: Response, next: NextFunction) => {
      if (!this.enabled) return next();
      if (req.method === 'POST' && req.path === '/reg') return registrations(req, res, () => void this.oidc().callback()(req, res));
      return this.oidc().callback()(req, res);
    };
  }

  /** RFC 8414 metadata (/.well-known/oauth-authorization-server/oauth): the provider's own discovery document. */
  metadataHandler(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      if (!this.enabled || (req.method !== 'GET' && req.method !== 'HEAD') || (req.path !== '/' && req.path !== '')) return next();
      req.url = '/.well-known/openid-configuration';
      req.originalUrl = '/oauth/.well-known/openid-configuration';
      return this.oidc().callback()(req, res);
    };
  }

  private build(urls: OAuthUrls): Provider {
    const key = (purpose: string) => createHmac('sha256', this.settings.serviceKey()).update(`memstore oauth ${purpose} v1`).digest('base64url');
    const config: Configuration = {
      adapter: oauthAdapterFactory(this.sessions),
      clients: [],
      findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
      scopes: [...OAUTH_SCOPES],
      claims: { openid: ['sub'] },
      cookies: { keys: [key('cookies')] },
      // A signing key derived from the service key, so every instance signs alike (only an ID token,
      // for a client that asks for openid, is signed: access tokens are our opaque API tokens).
      jwks: { keys: [signingJwk(createHmac('sha256', this.settings.serviceKey()).update('memstore oauth signing v1').digest())] },
      enabledJWA: { idTokenSigningAlgValues: ['EdDSA'] },
      features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        userinfo: { enabled: false },
        resourceIndicators: {
          enabled: true,
          defaultResource: () => urls.resource,
          useGrantedResource: () => true,
          getResourceServerInfo: (_ctx, indicator) => {
            if (indicator !== urls.resource) throw new errors.InvalidTarget(`resource must be ${urls.resource}`);
            return { scope: OAUTH_SCOPES.join(' '), audience: urls.resource, accessTokenTTL: ACCESS_TTL_S, accessTokenFormat: 'opaque' };
          },
        },
      },
      pkce: { required: () => true },
      responseTypes: ['code'],
      clientDefaults: { grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none', id_token_signed_response_alg: 'EdDSA' },
      issueRefreshToken: (_ctx, client) => client.grantTypeAllowed('refresh_token'),
      rotateRefreshToken: true,
      ttl: { AccessToken: ACCESS_TTL_S, AuthorizationCode: 60, RefreshToken: GRANT_TTL_S, Grant: GRANT_TTL_S, Interaction: 600, Session: 600 },
      interactions: { url: (_ctx, interaction) => `/oauth-consent/${interaction.uid}` },
      renderError: (ctx, out) => {
        ctx.type = 'html';
        ctx.body = `<!doctype html><meta charset="utf-8"><title>Memory Store: sign-in failed</title><h1>Sign-in failed</h1><p>${escapeHtml(String(out.error))}: ${escapeHtml(String(out.error_description ?? ''))}</p>`;
      },
    };
    const provider = new Provider(urls.issuer, config);
    provider.proxy = this.cfg.trustProxy;
    provider.use((ctx, next) => this.mintOurToken(ctx as KoaContextWithOIDC, next));
    return provider;
  }

  /**
   * Token endpoint: replaces oidc-provider's access token with one of our API tokens (listed,
   * revocable, expiring, rate-limited) for the granted scopes. On a refresh, the grant's previous
   * token is deleted; when the administrator revoked it, the grant ends (invalid_grant).
   */
  private async mintOurToken(ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    await next();
    if (ctx.oidc?.route === 'revocation' && ctx.status === 200) return this.clientRevoked(ctx);
    if (ctx.oidc?.route !== 'token' || ctx.status !== 200) return;
    const body = ctx.body as { access_token?: string; expires_in?: number; scope?: string } | undefined;
    const at = ctx.oidc.entities.AccessToken;
    const client = ctx.oidc.entities.Client;
    if (!body?.access_token || !at || !client) return;
    const linkKey = `oauth:link:${at.grantId}`;
    const link = await this.sessions.get(linkKey);
    const previous = link ? await this.tokenRepo.findById((JSON.parse(link.data) as { tokenId: string }).tokenId) : null;
    if (link && (!previous || previous.revokedAt)) {
      // Revoked (or deleted) on the API tokens tab: the connection ends here.
      await this.oidc().Grant.adapter.revokeByGrantId?.(at.grantId);
      await ctx.oidc.entities.Grant?.destroy();
      await at.destroy();
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'This connection was revoked on Memory Store; connect again' };
      return;
    }
    const scopes = String(at.scope ?? '')
      .split(' ')
      .filter((s): s is Scope => (OAUTH_SCOPES as string[]).includes(s));
    const name = `${(client.clientName ?? client.clientId).slice(0, 80)} (OAuth)`;
    const expiresIn = body.expires_in ?? ACCESS_TTL_S;
    const { record, plaintext } = await this.tokens.create({ name, scopes, expires_at: Math.floor(Date.now() / 1000) + expiresIn });
    await at.destroy();
    if (previous) await this.tokens.delete(previous.id).catch(() => undefined);
    await this.sessions.set({ sid: linkKey, data: JSON.stringify({ tokenId: record.id, clientId: client.clientId }), expiresAt: new Date(Date.now() + GRANT_TTL_S * 1000) });
    const accountId = ctx.oidc.entities.Grant?.accountId ?? null;
    await this.audit.record('token.create', {
      actor: { kind: 'admin', id: accountId, name: accountId },
      target: record.id,
      detail: { name, scopes, via: 'oauth', client_id: client.clientId, refreshed: previous !== null },
    });
    body.access_token = plaintext;
    body.scope = scopes.join(' ');
    this.logger.log(`OAuth token ${record.id} issued to client ${client.clientId} (${scopes.join(' ')})`);
  }

  /** RFC 7009: a client that revokes its refresh token (its grant ends) also loses the API token it holds. */
  private async clientRevoked(ctx: KoaContextWithOIDC): Promise<void> {
    const revoked = ctx.oidc.entities.RefreshToken ?? ctx.oidc.entities.AccessToken;
    const grantId = revoked?.grantId;
    if (!grantId) return;
    const link = await this.sessions.get(`oauth:link:${grantId}`);
    if (!link) return;
    const { tokenId, clientId } = JSON.parse(link.data) as { tokenId: string; clientId: string };
    const record = await this.tokens.revoke(tokenId).catch(() => null);
    await this.sessions.destroy(`oauth:link:${grantId}`);
    if (record)
      await this.audit.record('token.revoke', {
        actor: { kind: 'anonymous', id: null, name: null },
        target: tokenId,
        detail: { via: 'oauth', client_id: clientId, reason: 'the client revoked its grant' },
      });
  }
}

/** An Ed25519 private JWK from a 32-byte seed (PKCS#8 wrapping of RFC 8410). */
function signingJwk(seed: Buffer): Record<string, unknown> {
  const der = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  const jwk = createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'jwk' });
  return { ...jwk, alg: 'EdDSA', use: 'sig', kid: 'memstore-oauth-1' };
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
