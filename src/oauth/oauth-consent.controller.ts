import { Controller, Get, NotFoundException, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AdminAuthService } from '../admin/auth/admin-auth.service';
import { AuditService } from '../audit/audit.service';
import { Public } from '../common/auth/decorators';
import { SettingsService } from '../config/settings.service';
import { escapeHtml, OAUTH_SCOPES, OAuthService } from './oauth.service';

/** A form field's text; anything but a string (an array from `a=1&a=2`, a missing field) reads as empty. */
const formText = (v: unknown): string => (typeof v === 'string' ? v : '');

const SCOPE_TEXT: Record<string, string> = {
  'memory:read': 'Read and search your memories',
  'memory:write': 'Save new memories and change existing ones',
  'memory:delete': 'Delete memories',
};

/**
 * The sign-in and consent page of the OAuth flow (/oauth-consent/<interaction uid>): the
 * administrator signs in (the admin session), sees which client asks and where it will send them
 * back, picks the scopes, and allows or denies. Forms post to the same origin (the CSRF middleware
 * checks Origin) and carry a token bound to the session and the interaction; the page cannot be
 * framed.
 */
@ApiExcludeController()
@Controller('oauth-consent')
export class OAuthConsentController {
  constructor(
    private readonly oauth: OAuthService,
    private readonly auth: AdminAuthService,
    private readonly settings: SettingsService,
    private readonly audit: AuditService,
  ) {}

  @Get(':uid')
  @Public()
  async page(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.render(uid, req, res);
  }

  @Post(':uid/login')
  @Public()
  async login(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const body = (req.body ?? {}) as Record<string, unknown>;
    try {
      await this.auth.login(req, formText(body.username), formText(body.password));
      await this.audit.record('admin.login', { req, detail: { via: 'oauth consent' } });
    } catch {
      await this.audit.record('admin.login', { req, outcome: 'failure', detail: { via: 'oauth consent', status: 401, error: 'Wrong username or password' } });
      // 401, not 200: the login throttle counts failed answers only.
      return this.render(uid, req, res, 'Wrong username or password.', 401);
    }
    res.redirect(303, `/oauth-consent/${encodeURIComponent(uid)}`);
  }

  @Post(':uid')
  @Public()
  async decide(@Param('uid') uid: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    const provider = this.live();
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) throw new NotFoundException('Unknown sign-in request');
    const admin = req.session?.admin;
    const body = (req.body ?? {}) as Record<string, unknown>;
    if (!admin || !this.csrfOk(req, uid, formText(body.csrf))) {
      return this.render(uid, req, res, 'Your session expired or the form is stale; try again.');
    }
    if (body.action !== 'allow') {
      await provider.interactionFinished(req, res, { error: 'access_denied', error_description: 'The Memory Store administrator denied access' }, { mergeWithLastSubmission: false });
      return;
    }
    const picked = ([] as unknown[]).concat(body.scope ?? []).map(String);
    const scopes = OAUTH_SCOPES.filter((s) => picked.includes(s));
    if (scopes.length === 0) return this.render(uid, req, res, 'Choose at least one permission, or deny.');
    const clientId = String(details.params.client_id);
    const grant = new provider.Grant({ accountId: admin.username, clientId });
    // Our scopes are both the provider's (so that clients may register them) and the resource's.
    grant.addOIDCScope(scopes.join(' '));
    grant.addResourceScope(this.oauth.urls!.resource, scopes.join(' '));
    // Scopes asked for and not ticked are refused (a partial consent), not asked again.
    const refused = OAUTH_SCOPES.filter((s) => !scopes.includes(s));
    if (refused.length > 0) {
      grant.rejectOIDCScope(refused.join(' '));
      grant.rejectResourceScope(this.oauth.urls!.resource, refused.join(' '));
    }
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: admin.username }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  private live() {
    if (!this.oauth.enabled) throw new NotFoundException('OAuth is not enabled on this service (MEMSTORE_OAUTH)');
    return this.oauth.oidc();
  }

  private csrfToken(req: Request, uid: string): string {
    return createHmac('sha256', this.settings.serviceKey())
      .update(`oauth consent\0${req.sessionID ?? ''}\0${uid}`)
      .digest('base64url');
  }

  private csrfOk(req: Request, uid: string, given: string): boolean {
    const want = Buffer.from(this.csrfToken(req, uid));
    const got = Buffer.from(given);
    return want.length === got.length && timingSafeEqual(want, got);
  }

  private async render(uid: string, req: Request, res: Response, error?: string, status = 200): Promise<void> {
    const provider = this.live();
    let details: Awaited<ReturnType<typeof provider.interactionDetails>>;
    try {
      details = await provider.interactionDetails(req, res);
    } catch {
      return this.send(res, 400, '<h1>This sign-in link has expired</h1><p>Start again from the app you were connecting.</p>');
    }
    if (details.uid !== uid) return this.send(res, 400, '<h1>This sign-in link does not match</h1><p>Start again from the app you were connecting.</p>');
    const client = await provider.Client.find(String(details.params.client_id));
    const clientName = client?.clientName ?? String(details.params.client_id);
    let redirectHost: string;
    try {
      redirectHost = new URL(String(details.params.redirect_uri)).host;
    } catch {
      redirectHost = String(details.params.redirect_uri);
    }
    const action = `/oauth-consent/${encodeURIComponent(uid)}`;
    const err = error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : '';
    const who = `<p><strong>${escapeHtml(clientName)}</strong> wants to use your Memory Store. After you answer, you will be sent back to <strong>${escapeHtml(redirectHost)}</strong>.</p>`;
    if (!req.session?.admin) {
      return this.send(
        res,
        status,
        `<h1>Sign in to Memory Store</h1>${who}${err}<form method="post" action="${action}/login">` +
          `<label>Username <input name="username" autocomplete="username" required></label>` +
          `<label>Password <input name="password" type="password" autocomplete="current-password" required></label>` +
          `<button type="submit">Sign in</button></form>`,
      );
    }
    const requested = formText(details.params.scope)
      .split(' ')
      .filter((s) => (OAUTH_SCOPES as string[]).includes(s));
    const offered = requested.length > 0 ? requested : OAUTH_SCOPES;
    const boxes = offered
      .map((s) => `<label><input type="checkbox" name="scope" value="${s}" ${s === 'memory:delete' ? '' : 'checked'}> ${escapeHtml(SCOPE_TEXT[s] ?? s)} <code>${s}</code></label>`)
      .join('');
    return this.send(
      res,
      200,
      `<h1>Allow access to Memory Store?</h1>${who}${err}<form method="post" action="${action}">` +
        `<input type="hidden" name="csrf" value="${this.csrfToken(req, uid)}"><fieldset><legend>Permissions</legend>${boxes}</fieldset>` +
        `<p>It gets an API token that expires after an hour and is renewed while you keep the connection; revoke it any time on the API tokens tab.</p>` +
        `<button type="submit" name="action" value="allow">Allow</button> <button type="submit" name="action" value="deny">Deny</button></form>`,
    );
  }

  private send(res: Response, status: number, inner: string): void {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Frame-Options', 'DENY');
    // Not helmet's no-referrer: with it Chromium sends `Origin: null` on a form post, which the CSRF check refuses.
    res.setHeader('Referrer-Policy', 'same-origin');
    res.setHeader('Content-Security-Policy', "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'");
    res
      .status(status)
      .type('html')
      .send(
        `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Memory Store</title>` +
          `<style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem}label{display:block;margin:.5rem 0}.error{color:#b00}</style></head><body>${inner}</body></html>`,
      );
  }
}
