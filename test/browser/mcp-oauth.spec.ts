/**
 * OAuth 2.1 for MCP connectors (issue 42), end to end: the official SDK client's OAuth provider
 * discovers, registers (DCR) and sends the person to the authorization URL, where headless
 * Chromium signs in as the administrator and consents; the client then lists and calls tools with
 * the access token (one of our API tokens), refreshes, and stops working once the token is revoked
 * on the admin page. Plus the refusals (redirect URI, PKCE, resource, replayed code, expiry), and
 * the header set-up on /mcp unchanged on the same server.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  refreshAuthorization,
  type OAuthClientProvider,
  type OAuthClientMetadata,
  type StoredOAuthClientInformation,
  type StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { ADMIN_PASSWORD, adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { ensureWebBuilt } from '../support/web-build';

const CHROMIUM = '/usr/bin/chromium';
const REQUIRED = process.env.MEMSTORE_REQUIRE_ALL_BACKENDS === '1';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium && REQUIRED) throw new Error(`MEMSTORE_REQUIRE_ALL_BACKENDS=1 but Chromium was not found at ${CHROMIUM}`);
if (!haveChromium) process.stdout.write(`\nBrowser suite (MCP OAuth): SKIPPED — Chromium not found at ${CHROMIUM}\n`);
const describeBrowser = haveChromium ? describe : describe.skip;

jest.setTimeout(120_000);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The OAuth client side of a connector, kept in memory; the "browser" is Chromium, driven by `authorize`. */
class TestOAuthProvider implements OAuthClientProvider {
  client?: StoredOAuthClientInformation;
  saved?: StoredOAuthTokens;
  verifier = '';
  lastAuthorizationUrl?: URL;
  constructor(
    readonly redirect: string,
    private readonly authorize: (url: URL) => Promise<void>,
  ) {}
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Test Connector', redirect_uris: [this.redirect], grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: StoredOAuthClientInformation) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: StoredOAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    this.lastAuthorizationUrl = url;
    await this.authorize(url);
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

describeBrowser('MCP OAuth for connectors', () => {
  let t: TestApp;
  let base: string;
  let ctx: BrowserContext;
  let page: Page;
  let userDir: string;
  let callback: http.Server;
  let redirectUri: string;
  const codes: URLSearchParams[] = [];
  const open: Client[] = [];

  beforeAll(async () => {
    ensureWebBuilt();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({ MEMSTORE_OAUTH: 'true', MEMSTORE_PUBLIC_URL: base });
    await t.app.listen(port, '127.0.0.1');
    callback = http.createServer((req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      if (u.pathname === '/callback') codes.push(u.searchParams); // not /favicon.ico
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end('You can close this window.');
    });
    await new Promise<void>((r) => callback.listen(0, '127.0.0.1', r));
    redirectUri = `http://127.0.0.1:${(callback.address() as net.AddressInfo).port}/callback`;
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-chromium-'));
    ctx = await chromium.launchPersistentContext(userDir, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 800 } });
    page = ctx.pages()[0] ?? (await ctx.newPage());
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((c) => c.close().catch(() => undefined)));
  });

  afterAll(async () => {
    await ctx?.close();
    fs.rmSync(userDir, { recursive: true, force: true });
    await new Promise((r) => callback?.close(r));
    await t?.close();
  });

  /** In Chromium: sign in if asked, check what the page says, untick memory:delete, allow; returns the code sent back. */
  async function signInAndConsent(url: URL, opts: { expectSignIn: boolean }): Promise<URLSearchParams> {
    const before = codes.length;
    await page.goto(url.href);
    if (opts.expectSignIn) {
      await page.getByRole('heading', { name: 'Sign in to Memory Store' }).waitFor();
      await page.getByLabel('Username').fill(t.cfg.adminUsername);
      await page.getByLabel('Password').fill(ADMIN_PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }
    await page.getByRole('heading', { name: 'Allow access to Memory Store?' }).waitFor();
    const text = await page.locator('body').innerText();
    expect(text).toContain('Test Connector');
    expect(text).toContain(new URL(redirectUri).host);
    expect(await page.getByRole('checkbox', { name: /Delete memories/ }).isChecked()).toBe(false);
    await page.getByRole('checkbox', { name: /Read and search/ }).check();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.href.startsWith(redirectUri));
    expect(codes.length).toBe(before + 1);
    return codes[codes.length - 1];
  }

  async function connectOAuth(provider: TestOAuthProvider): Promise<Client> {
    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/oauth`), { authProvider: provider }));
    open.push(client);
    return client;
  }

  it('discovery → registration → sign-in and consent in Chromium → token → tools; refresh rotates; revoking on the admin page ends it', async () => {
    // Discovery documents: the resource's (RFC 9728) and the authorization server's (RFC 8414).
    const unauth = await request(t.http).post('/mcp/oauth').send({ jsonrpc: '2.0', id: 1, method: 'ping' }).expect(401);
    expect(unauth.headers['www-authenticate']).toBe(`Bearer realm="Memory Store", resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/oauth"`);
    const prm = (await request(t.http).get('/.well-known/oauth-protected-resource/mcp/oauth').expect(200)).body;
    expect(prm).toMatchObject({ resource: `${base}/mcp/oauth`, authorization_servers: [`${base}/oauth`] });
    const as = (await request(t.http).get('/.well-known/oauth-authorization-server/oauth').expect(200)).body;
    expect(as).toMatchObject({ issuer: `${base}/oauth`, code_challenge_methods_supported: ['S256'], registration_endpoint: `${base}/oauth/reg` });

    let code: URLSearchParams | undefined;
    const provider = new TestOAuthProvider(redirectUri, async (url) => {
      code = await signInAndConsent(url, { expectSignIn: true });
    });
    await expect(connectOAuth(provider)).rejects.toBeInstanceOf(UnauthorizedError);
    expect(provider.client?.client_id).toBeTruthy();
    const authUrl = provider.lastAuthorizationUrl!;
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(`${base}/mcp/oauth`);
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/oauth`), { authProvider: provider });
    await transport.finishAuth(code!); // code and iss (RFC 9207)
    expect(provider.saved?.access_token).toMatch(/^mem_tok_[0-9a-f]{16}_/);
    expect(provider.saved?.refresh_token).toBeTruthy();

    const client = new Client({ name: 'oauth-e2e', version: '1.0.0' });
    await client.connect(transport);
    open.push(client);
    // Consented: read and write, not delete.
    expect((await client.listTools()).tools.map((x) => x.name).sort()).toEqual(['create_memory', 'get_memory', 'list_recent', 'memory_stats', 'recall_context', 'search_memories', 'update_memory']);
    const created = await client.callTool({ name: 'create_memory', arguments: { content: 'Saved from a connector.' } });
    expect(created.isError).toBeFalsy();

    // One of our tokens: on the API tokens list, expiring, with the consented scopes.
    const admin = await adminAgent(t);
    const tokenId = provider.saved!.access_token.slice(8, 24);
    const listed = (await admin.get('/api/tokens').expect(200)).body.tokens as Array<Record<string, unknown>>;
    expect(listed.find((x) => x.id === tokenId)).toMatchObject({
      name: 'Test Connector (OAuth)',
      scopes: ['memory:read', 'memory:write'],
      expires_at: expect.any(Number),
      rate_limit_per_minute: expect.any(Number),
    });
    const audited = (await admin.get('/api/audit?action=token.create&limit=50').expect(200)).body.entries as Array<Record<string, unknown>>;
    expect(audited.find((e) => e.target === tokenId)).toMatchObject({
      outcome: 'success',
      actor: { kind: 'admin', id: t.cfg.adminUsername },
      detail: expect.objectContaining({ via: 'oauth', client_id: provider.client!.client_id }),
    });

    // Refresh: a new token, the old one gone, the old refresh token spent.
    const oldRefresh = provider.saved!.refresh_token!;
    const refreshed = await refreshAuthorization(`${base}/oauth`, { metadata: as, clientInformation: provider.client!, refreshToken: oldRefresh, resource: new URL(`${base}/mcp/oauth`) });
    expect(refreshed.access_token).not.toBe(provider.saved!.access_token);
    expect(refreshed.refresh_token).not.toBe(oldRefresh);
    await request(t.http).post('/mcp/oauth').set('Authorization', `Bearer ${provider.saved!.access_token}`).send({}).expect(401);
    await expect(refreshAuthorization(`${base}/oauth`, { metadata: as, clientInformation: provider.client!, refreshToken: oldRefresh, resource: new URL(`${base}/mcp/oauth`) })).rejects.toMatchObject({
      code: 'invalid_grant',
    });
    provider.saveTokens(refreshed);
    const again = await connectOAuth(provider);
    expect((await again.callTool({ name: 'memory_stats', arguments: {} })).isError).toBeFalsy();

    // Revoked on the admin page's API tokens tab: the token and the refresh stop working.
    const newId = refreshed.access_token.slice(8, 24);
    await page.goto(`${base}/`);
    await page.getByRole('tab', { name: 'API tokens', exact: true }).click();
    const row = page.getByRole('row').filter({ hasText: newId });
    await row.getByRole('button', { name: /^Revoke/ }).click();
    await page.getByRole('dialog', { name: 'Revoke token?' }).getByRole('button', { name: 'Revoke' }).click();
    await row.filter({ hasText: /revoked/ }).waitFor();
    await request(t.http).post('/mcp/oauth').set('Authorization', `Bearer ${refreshed.access_token}`).send({}).expect(401);
    const oauthTokens = async () => ((await admin.get('/api/tokens').expect(200)).body.tokens as Array<{ name: string }>).filter((x) => x.name.endsWith('(OAuth)')).length;
    const before = await oauthTokens();
    await expect(
      refreshAuthorization(`${base}/oauth`, { metadata: as, clientInformation: provider.client!, refreshToken: refreshed.refresh_token!, resource: new URL(`${base}/mcp/oauth`) }),
    ).rejects.toMatchObject({ code: 'invalid_grant' });
    expect(await oauthTokens()).toBe(before); // no new token for a revoked connection
  });

  it('refuses a wrong redirect URI, a missing PKCE challenge, a foreign resource and a replayed code', async () => {
    const reg = (
      await request(t.http)
        .post('/oauth/reg')
        .send({ client_name: 'Negative', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' })
        .expect(201)
    ).body;
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const authorize = (extra: Record<string, string>) =>
      `${base}/oauth/auth?${new URLSearchParams({ client_id: reg.client_id, response_type: 'code', redirect_uri: redirectUri, scope: 'memory:read', code_challenge: challenge, code_challenge_method: 'S256', resource: `${base}/mcp/oauth`, state: 's1', ...extra })}`;

    // Wrong redirect URI: an error page, never a redirect to it.
    const wrong = await request(t.http).get(new URL(authorize({ redirect_uri: 'http://evil.example/cb' })).pathname + new URL(authorize({ redirect_uri: 'http://evil.example/cb' })).search);
    expect(wrong.status).toBe(400);
    expect(wrong.headers.location).toBeUndefined();
    // No PKCE: refused (sent back to the registered redirect URI with invalid_request).
    const noPkce = new URL(authorize({}));
    noPkce.searchParams.delete('code_challenge');
    noPkce.searchParams.delete('code_challenge_method');
    const np = await request(t.http).get(noPkce.pathname + noPkce.search);
    expect(np.status).toBe(303);
    expect(new URL(np.headers.location).searchParams.get('error')).toBe('invalid_request');
    // A plain challenge method: refused too.
    const plain = new URL(authorize({ code_challenge_method: 'plain', code_challenge: verifier }));
    expect(new URL((await request(t.http).get(plain.pathname + plain.search)).headers.location).searchParams.get('error')).toBe('invalid_request');
    // A resource other than /mcp/oauth: invalid_target.
    const foreign = new URL(authorize({ resource: 'https://other.example/mcp' }));
    expect(new URL((await request(t.http).get(foreign.pathname + foreign.search)).headers.location).searchParams.get('error')).toBe('invalid_target');

    // Outside Chromium (no admin session): a wrong password is a 401 (counted by the login throttle);
    // a consent without the session's form token is refused.
    const agent = request.agent(t.http);
    const start = new URL(authorize({}));
    const consentPath = (await agent.get(start.pathname + start.search).expect(303)).headers.location;
    expect(consentPath).toMatch(/^\/oauth-consent\//);
    const login = await agent.post(`${consentPath}/login`).type('form').send({ username: t.cfg.adminUsername, password: 'wrong' }).expect(401);
    expect(login.text).toContain('Wrong username or password.');
    await agent.post(`${consentPath}/login`).type('form').send({ username: t.cfg.adminUsername, password: ADMIN_PASSWORD }).expect(303);
    const forged = await agent.post(consentPath).type('form').send({ action: 'allow', scope: 'memory:delete', csrf: 'forged' }).expect(200);
    expect(forged.text).toContain('the form is stale');
    expect(forged.headers.location).toBeUndefined();

    // A real code (the admin session of the first test is still in Chromium: no sign-in), used twice.
    const got = await signInAndConsentExpectingNoSignIn(authorize({}));
    const exchange = () =>
      request(t.http)
        .post('/oauth/token')
        .type('form')
        .send({ grant_type: 'authorization_code', code: got.get('code')!, redirect_uri: redirectUri, client_id: reg.client_id, code_verifier: verifier, resource: `${base}/mcp/oauth` });
    // A token request that names another audience than the authorized one: refused.
    const other = await signInAndConsentExpectingNoSignIn(authorize({ state: 's0' }));
    const elsewhere = await request(t.http)
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: 'authorization_code', code: other.get('code')!, redirect_uri: redirectUri, client_id: reg.client_id, code_verifier: verifier, resource: 'https://other.example/mcp' });
    expect(elsewhere.body.error).toBe('invalid_target');
    expect(elsewhere.body.access_token).toBeUndefined();
    const first = await exchange().expect(200);
    expect(first.body.access_token).toMatch(/^mem_tok_/);
    expect((await exchange().expect(400)).body.error).toBe('invalid_grant');

    // The client revokes its refresh token (RFC 7009): the API token it holds stops working too.
    const second = await signInAndConsentExpectingNoSignIn(authorize({ state: 's2' }));
    const tokens = (
      await request(t.http)
        .post('/oauth/token')
        .type('form')
        .send({ grant_type: 'authorization_code', code: second.get('code')!, redirect_uri: redirectUri, client_id: reg.client_id, code_verifier: verifier, resource: `${base}/mcp/oauth` })
        .expect(200)
    ).body;
    const ping = () =>
      request(t.http).post('/mcp/oauth').set('Authorization', `Bearer ${tokens.access_token}`).set('Accept', 'application/json, text/event-stream').send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect((await ping()).status).toBe(200);
    await request(t.http).post('/oauth/token/revocation').type('form').send({ token: tokens.refresh_token, token_type_hint: 'refresh_token', client_id: reg.client_id }).expect(200);
    expect((await ping()).status).toBe(401);
  });

  /** Signed in already; consents unless the client's grant already covers the request (then the code comes straight back). */
  async function signInAndConsentExpectingNoSignIn(url: string): Promise<URLSearchParams> {
    const before = codes.length;
    await page.goto(url);
    if (!page.url().startsWith(redirectUri)) {
      await page.getByRole('heading', { name: 'Allow access to Memory Store?' }).waitFor();
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.waitForURL((u) => u.href.startsWith(redirectUri));
    }
    expect(codes.length).toBe(before + 1);
    return codes[codes.length - 1];
  }

  it('open registration is bounded per address', async () => {
    const register = () =>
      request(t.http)
        .post('/oauth/reg')
        .send({ client_name: 'Flood', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none' });
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await register()).status);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    expect(statuses.every((s) => s === 201 || s === 429)).toBe(true);
  });

  it('an expired access token is refused with the OAuth challenge', async () => {
    const admin = await adminAgent(t);
    const { id, plaintext } = await createToken(t, { name: 'soon expired', preset: 'read-only' });
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    await admin.patch(`/api/tokens/${id}`).send({ expires_at: expiresAt }).expect(200);
    await new Promise((r) => setTimeout(r, expiresAt * 1000 - Date.now() + 50));
    const res = await request(t.http).post('/mcp/oauth').set('Authorization', `Bearer ${plaintext}`).send({}).expect(401);
    expect(res.headers['www-authenticate']).toMatch(/error="invalid_token", resource_metadata=/);
  });

  it('with OAuth on, /mcp advertises no OAuth and a header-configured client connects unchanged', async () => {
    const res = await request(t.http).post('/mcp').send({ jsonrpc: '2.0', id: 1, method: 'ping' }).expect(401);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="Memory Store"');
    for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      await request(t.http).get(p).expect(404);
    }
    const { plaintext } = await createToken(t, { name: 'claude code', preset: 'full' });
    const client = new Client({ name: 'header-client', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${plaintext}` } } }));
    open.push(client);
    expect((await client.listTools()).tools).toHaveLength(8);
  });

  it('the Agent set-up tab gives claude.ai and ChatGPT the OAuth URL to paste', async () => {
    // Chromium still holds the admin session of the first test.
    await page.goto(`${base}/#setup`);
    await page.getByRole('heading', { name: 'Connect claude.ai, Claude desktop or ChatGPT' }).waitFor();
    await page.locator('#connector-url').waitFor();
    expect(await page.locator('#connector-url').innerText()).toBe(`${base}/mcp/oauth`);
    for (const name of ['claude.ai / Claude desktop', 'ChatGPT']) {
      const section = page.getByRole('region', { name });
      expect(await section.innerText()).toContain(`${base}/mcp/oauth`);
    }
    expect(await page.locator('#mcp-url').innerText()).toBe(`${base}/mcp`); // header clients keep /mcp
  });

  it('the consent page cannot be framed', async () => {
    const res = await request(t.http).get('/oauth-consent/unknown-uid');
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
  });
});
