/**
 * The admin page in a real browser: Debian's Chromium driven by playwright-core against the real
 * service (createTestApp + listen on 127.0.0.1). Covers issue 5 "What it must show". Screenshots
 * of every tab at 1280×800 and 390×844 go to test/artifacts/ (git-ignored).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_PASSWORD, createTestApp, createToken, TestApp } from '../support/app';
import { ensureWebBuilt } from '../support/web-build';

const CHROMIUM = '/usr/bin/chromium';
const REQUIRED = process.env.MEMSTORE_REQUIRE_ALL_BACKENDS === '1';
const ARTIFACTS = path.resolve(__dirname, '..', 'artifacts');
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };
const TABS = [
  { id: 'status', label: 'Status' },
  { id: 'memories', label: 'Memories' },
  { id: 'tokens', label: 'API tokens' },
  { id: 'config', label: 'Configuration' },
  { id: 'audit', label: 'Audit' },
  { id: 'setup', label: 'Agent set-up' },
];

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) {
  const msg = `Browser suite (admin page): SKIPPED — Chromium not found at ${CHROMIUM} (apt-get install chromium)`;
  process.stdout.write(`\n${msg}\n`);
  if (REQUIRED) throw new Error(`MEMSTORE_REQUIRE_ALL_BACKENDS=1 but ${msg}`);
}
// Without Chromium (and without MEMSTORE_REQUIRE_ALL_BACKENDS=1) the suite is reported as skipped, by name.
const describeBrowser = haveChromium ? describe : describe.skip;

jest.setTimeout(90_000);

function urlOf(t: TestApp): string {
  const addr = t.http.address() as AddressInfo;
  return `http://127.0.0.1:${addr.port}`;
}

/** Fetch from Node (not the browser), as an agent would. */
async function api(base: string, p: string, token: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${base}${p}`, { ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) } });
}

/** "<status> <error sentence>" of GET /api/memories with a token, so a failing assertion says why. */
async function listWith(base: string, token: string): Promise<string> {
  const res = await api(base, '/api/memories?limit=1', token);
  const body = (await res.json()) as { error?: string };
  return `${res.status}${body.error ? ` ${body.error}` : ''}`;
}

describeBrowser(`admin page in Chromium (${CHROMIUM})`, () => {
  let t: TestApp;
  let base: string;
  let ctx: BrowserContext;
  let page: Page;
  let userDir: string;
  const foreignRequests: string[] = [];
  const dialogs: string[] = [];
  const pageErrors: string[] = [];

  const watched = new WeakSet<Page>();
  function watchPage(p: Page): void {
    if (watched.has(p)) return;
    watched.add(p);
    p.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    p.on('pageerror', (err) => pageErrors.push(err.message));
  }

  /** Watches a whole context: every request (any page), JS dialogs and uncaught errors. */
  function watch(c: BrowserContext): void {
    c.on('request', (req) => {
      const u = new URL(req.url());
      if (['http:', 'https:', 'ws:', 'wss:'].includes(u.protocol) && u.hostname !== '127.0.0.1') foreignRequests.push(req.url());
    });
    c.on('page', watchPage);
    c.pages().forEach(watchPage);
  }

  async function launch(dir: string, viewport = DESKTOP): Promise<{ c: BrowserContext; p: Page }> {
    const c = await chromium.launchPersistentContext(dir, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport, locale: 'en-GB', timezoneId: 'UTC' });
    watch(c);
    const p = c.pages()[0] ?? (await c.newPage());
    watchPage(p);
    return { c, p };
  }

  async function openTab(label: string): Promise<void> {
    await page.getByRole('tab', { name: label, exact: true }).click();
    await expectSelected(label);
    await page
      .locator('section[role=tabpanel]:not([hidden]) .loading')
      .first()
      .waitFor({ state: 'detached', timeout: 15_000 })
      .catch(() => undefined);
  }

  async function expectSelected(label: string): Promise<void> {
    await page.getByRole('tab', { name: label, exact: true, selected: true }).waitFor();
  }

  async function shot(name: string): Promise<void> {
    await page
      .locator('.loading')
      .first()
      .waitFor({ state: 'detached', timeout: 15_000 })
      .catch(() => undefined);
    // Notices from earlier steps would cover the picture.
    await page.evaluate(() => document.querySelector('.toasts')?.replaceChildren());
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
  }

  /**
   * Waits until the token's Status cell reads exactly `status`. Not getByText on the whole row:
   * its action buttons read "EditRevokeDelete", which contains "revoked".
   */
  async function tokenStatus(id: string, status: 'active' | 'revoked' | 'expired'): Promise<void> {
    await page.locator(`tr[data-token-id="${id}"] td[data-label="Status"]`).getByText(status, { exact: true }).waitFor();
  }

  async function signIn(p: Page, password: string): Promise<void> {
    await p.getByLabel('Username').fill('admin');
    await p.getByLabel('Password').fill(password);
    await p.getByRole('button', { name: 'Sign in' }).click();
  }

  beforeAll(async () => {
    ensureWebBuilt();
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = urlOf(t);
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-chromium-'));
    ({ c: ctx, p: page } = await launch(userDir));
    await ctx.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    await t?.close();
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  });

  it('shows the sign-in form and says so on a wrong password', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in to the admin page' }).waitFor();
    await shot('login-1280x800');
    await signIn(page, 'not the password');
    await page.getByRole('alert').filter({ hasText: 'Wrong username or password.' }).waitFor();
    // Still signed out.
    const me = await page.request.get(`${base}/api/me`);
    expect(await me.json()).toEqual({ ok: true, authenticated: false });
  });

  it('signs in and shows both backends on the Status tab, and tests the connections', async () => {
    await signIn(page, ADMIN_PASSWORD);
    await expectSelected('Status');
    const status = page.locator('#panel-status');
    await status.getByRole('heading', { name: 'Document database' }).waitFor();
    await status.getByRole('heading', { name: 'Object store' }).waitFor();
    expect(await status.getByText('Healthy').count()).toBe(2);
    // This app runs without an embedding provider: the Status tab says search is keyword-only.
    const semantic = status.getByRole('article', { name: 'Semantic search status' });
    await semantic.waitFor();
    expect(await semantic.getByText('Keyword-only', { exact: true }).count()).toBe(1);
    expect(await semantic.textContent()).toContain('Search is keyword-only: the embedding provider is set to none');
    await status.getByRole('button', { name: 'Test connections' }).click();
    await status.locator('.test-results li').nth(1).waitFor();
    expect(await status.locator('.test-results li.is-ok').count()).toBe(2);
    // The session cookie is HttpOnly: the page's script cannot read it.
    expect(await page.evaluate(() => document.cookie)).not.toContain('memstore.sid');
  });

  it('tabs work from the keyboard (arrow keys move between tabs)', async () => {
    await page.getByRole('tab', { name: 'Status' }).focus();
    await page.keyboard.press('ArrowRight');
    await expectSelected('Memories');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Memories');
    await page.keyboard.press('End');
    await expectSelected('Agent set-up');
    await page.keyboard.press('Home');
    await expectSelected('Status');
  });

  let plaintext = '';
  let tokenId = '';

  it('creates a token and shows its secret once, with a working copy button', async () => {
    await openTab('API tokens');
    const panel = page.locator('#panel-tokens');
    await panel.getByLabel('Name', { exact: true }).fill('browser agent');
    // The default matches the README's advice for an agent: read and write.
    expect(await panel.getByLabel('Access').inputValue()).toBe('read-write');
    await panel.getByLabel('Access').selectOption('full');
    await panel.getByLabel('Allowed IP addresses').fill('127.0.0.1, ::1');
    await panel.getByLabel('Rate limit (requests per minute)').fill('120');
    // Bound to one namespace (issue 43); the field starts at "default".
    expect(await panel.getByLabel('Namespaces', { exact: true }).inputValue()).toBe('default');
    await panel.getByLabel('Namespaces', { exact: true }).fill('browser-ns');
    await panel.getByRole('button', { name: 'Create token' }).click();
    const secret = panel.getByLabel('Token secret');
    await secret.waitFor();
    plaintext = await secret.inputValue();
    expect(plaintext).toMatch(/^mem_tok_[0-9a-f]{16}_[A-Za-z0-9_-]{43,}$/);
    tokenId = plaintext.slice('mem_tok_'.length, 'mem_tok_'.length + 16);
    await panel.getByText('you will not see it again', { exact: false }).waitFor();
    await shot('tokens-secret-1280x800');

    await panel.getByRole('button', { name: 'Copy secret' }).click();
    await panel.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(plaintext);

    // The list shows the new token, active, with its scopes and IPs, but never the secret.
    const row = panel.locator(`tr[data-token-id="${tokenId}"]`);
    await row.waitFor();
    await tokenStatus(tokenId, 'active');
    await row.getByText('memory:delete').waitFor();
    await row.getByText('::1').waitFor();
    await row.locator('td[data-label="Namespaces"]').getByText('browser-ns', { exact: true }).waitFor();
    await row.locator('td[data-label="Rate limit"]').getByText('120/min', { exact: true }).waitFor();
    await row.locator('td[data-label="Rate limit"]').getByText('recent 0/min', { exact: true }).waitFor();

    // Dismissed, the secret is gone from the page and a reload does not bring it back.
    await panel.getByRole('button', { name: 'I have stored it' }).click();
    expect(await page.content()).not.toContain(plaintext.slice(30));
    await page.reload();
    await expectSelected('API tokens');
    await page.locator(`tr[data-token-id="${tokenId}"]`).waitFor();
    expect(await page.content()).not.toContain(plaintext.slice(30));
  });

  it('the token works with the API', async () => {
    const res = await api(base, '/api/memories', plaintext);
    expect(res.status).toBe(200);
    // It works in its namespace only.
    expect((await api(base, '/api/memories', plaintext, { headers: { 'X-Memory-Namespace': 'default' } })).status).toBe(403);
    const me = await (await api(base, '/api/me', plaintext)).json();
    expect(me).toMatchObject({ authenticated: true, kind: 'token', token_id: tokenId });
  });

  it('revoking the token in the page makes the API answer 401; restoring and deleting work too', async () => {
    const row = page.locator(`tr[data-token-id="${tokenId}"]`);
    await row.getByRole('button', { name: /^Revoke/ }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke token?' });
    await dialog.waitFor();
    await dialog.getByRole('button', { name: 'Revoke' }).click();
    await tokenStatus(tokenId, 'revoked');
    expect(await listWith(base, plaintext)).toMatch(/^401 /);

    await page
      .locator(`tr[data-token-id="${tokenId}"]`)
      .getByRole('button', { name: /^Restore/ })
      .click();
    await tokenStatus(tokenId, 'active');
    expect(await listWith(base, plaintext)).toBe('200');

    // Edit: narrow it to read-only from the edit dialog.
    await page.locator(`tr[data-token-id="${tokenId}"]`).getByRole('button', { name: /^Edit/ }).click();
    const edit = page.getByRole('dialog', { name: /^Edit token/ });
    await edit.getByLabel('memory:write', { exact: false }).uncheck();
    await edit.getByLabel('memory:delete', { exact: false }).uncheck();
    await edit.getByRole('button', { name: 'Save' }).click();
    await edit.waitFor({ state: 'detached' });
    await page.locator(`tr[data-token-id="${tokenId}"]`).getByText('memory:write').waitFor({ state: 'detached' });
    expect((await api(base, '/api/memories', plaintext, { method: 'POST', body: JSON.stringify({ content: 'x' }) })).status).toBe(403);

    // Delete asks first; cancelling keeps the token.
    await page
      .locator(`tr[data-token-id="${tokenId}"]`)
      .getByRole('button', { name: /^Delete/ })
      .click();
    await page.getByRole('dialog', { name: 'Delete token?' }).getByRole('button', { name: 'Cancel' }).click();
    expect(await listWith(base, plaintext)).toBe('200');
    await page
      .locator(`tr[data-token-id="${tokenId}"]`)
      .getByRole('button', { name: /^Delete/ })
      .click();
    await page.getByRole('dialog', { name: 'Delete token?' }).getByRole('button', { name: 'Delete' }).click();
    await page.locator(`tr[data-token-id="${tokenId}"]`).waitFor({ state: 'detached' });
    expect(await listWith(base, plaintext)).toMatch(/^401 /);
  });

  it('saves a setting (partially, secrets masked) and /api/config shows it', async () => {
    await openTab('Configuration');
    const panel = page.locator('#panel-config');
    const ttl = panel.locator('#cfg-objstore_presign_ttl');
    await ttl.waitFor();
    // The embedded backends are in use: MongoDB's and S3's fields wait behind a disclosure, none "required".
    expect(await panel.locator('#cfg-docdb_uri').isVisible()).toBe(false);
    expect(await panel.locator('.req:visible').count()).toBe(0);
    // A refused value is named in words under its own field, once; nothing is saved.
    await panel.getByText('Use MongoDB (the embedded SQLite database is in use)').click();
    await panel.locator('#cfg-docdb_uri').fill('http://not-mongo.example');
    await panel.getByRole('button', { name: 'Save changes' }).click();
    const uriError = panel.locator('#cfg-docdb_uri ~ .field-error');
    await uriError.waitFor();
    expect(await uriError.textContent()).toMatch(/^[A-Z].* must be a MongoDB connection string starting with mongodb:\/\/ or mongodb\+srv:\/\/$/);
    expect(await uriError.textContent()).not.toContain('docdb_uri');
    expect(await panel.locator('#cfg-docdb_uri').getAttribute('aria-invalid')).toBe('true');
    await panel.getByText('Nothing was saved: correct the marked field.').waitFor();
    await panel.locator('#cfg-docdb_uri').fill('');
    // The R2 endpoint is derived live from the account id.
    await panel.getByText('Use an S3-compatible store (the filesystem store is in use)').click();
    await panel.locator('#cfg-objstore_account_id').fill('0123abcd');
    await panel.locator('output.derived').filter({ hasText: 'https://0123abcd.r2.cloudflarestorage.com' }).waitFor();
    await panel.locator('#cfg-objstore_account_id').fill('');
    await ttl.fill('900');
    await panel.locator('#cfg-objstore_secret_access_key').fill('browser-secret-value-123');
    await panel.getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Saved 2 settings/ })
      .waitFor();

    const cfg = await (await page.request.get(`${base}/api/config`)).json();
    expect(String(cfg.config.objstore_presign_ttl)).toBe('900');
    expect(cfg.sources.objstore_presign_ttl).toBe('file');
    expect(cfg.config.objstore_secret_access_key).toBeTruthy();
    expect(cfg.config.objstore_secret_access_key).not.toContain('browser-secret-value-123');
    const raw = await (await page.request.get(`${base}/api/config/raw`)).json();
    expect(raw.config.objstore_secret_access_key).toBe('browser-secret-value-123');
    expect(raw.config.objstore_account_id ?? '').toBe('');

    // After the save the form shows the new value; the secret is never put back into the page.
    expect(await panel.locator('#cfg-objstore_presign_ttl').inputValue()).toBe('900');
    expect(await panel.locator('#cfg-objstore_secret_access_key').inputValue()).toBe('');
    expect(await page.content()).not.toContain('browser-secret-value-123');

    // Clearing the secret through its checkbox.
    await panel
      .getByLabel(/Clear the saved/)
      .first()
      .check();
    await panel.getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /Saved 1 setting: objstore_secret_access_key/ })
      .waitFor();
    const raw2 = await (await page.request.get(`${base}/api/config/raw`)).json();
    expect(raw2.config.objstore_secret_access_key ?? '').toBe('');
  });

  let targetId = '';
  let xssId = '';

  it('finds a memory created through the API and opens it, rendered', async () => {
    const { plaintext: tok } = await createToken(t, { preset: 'full', name: 'writer' });
    const res = await api(base, '/api/memories', tok, {
      method: 'POST',
      body: JSON.stringify({
        title: 'Zebra crossing protocol',
        type: 'decision',
        scope: 'project',
        project: 'browser-suite',
        agent: 'claude',
        tags: ['roads', 'safety'],
        content: '# Crossing rules\n\nAlways use the **zebra** crossing.\n\n- look left\n- look right\n\n[docs](https://example.org/guide)',
      }),
    });
    expect(res.status).toBe(201);
    targetId = (await res.json()).memory.id;
    for (let i = 0; i < 3; i++) {
      expect((await api(base, '/api/memories', tok, { method: 'POST', body: JSON.stringify({ title: `Filler ${i}`, content: `Unrelated note number ${i} about apples` }) })).status).toBe(201);
    }

    await openTab('Memories');
    const panel = page.locator('#panel-memories');
    await panel.locator('.mem-row').first().waitFor();
    await panel.getByLabel('Search', { exact: true }).fill('zebras');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    await panel.getByText(/1 match/).waitFor();
    const row = panel.locator(`[data-memory-id="${targetId}"]`);
    await row.waitFor();
    expect(await panel.locator('.mem-row').count()).toBe(1);

    // Filters: type and project narrow the list mode too.
    await panel.getByLabel('Search', { exact: true }).fill('');
    await panel.getByLabel('Type').selectOption('decision');
    await panel.getByLabel('Project').fill('browser-suite');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    await panel.getByText(/^1 memory/).waitFor();
    await shot('memories-1280x800');

    await row.getByRole('button', { name: 'Zebra crossing protocol' }).click();
    const detail = panel.locator('.mem-detail');
    await detail.getByRole('heading', { name: 'Zebra crossing protocol' }).waitFor();
    expect(await detail.locator('.markdown h1').textContent()).toBe('Crossing rules');
    expect(await detail.locator('.markdown strong').textContent()).toBe('zebra');
    expect(await detail.locator('.markdown li').count()).toBe(2);
    expect(await detail.locator('.markdown a').getAttribute('rel')).toContain('noopener');
    await shot('memory-detail-1280x800');

    // Download gives the stored markdown file.
    const href = await panel.getByRole('link', { name: 'Download .md' }).getAttribute('href');
    const dl = await page.request.get(`${base}${href}`);
    expect(dl.status()).toBe(200);
    expect(dl.headers()['content-type']).toMatch(/text\/markdown/);
    expect(await dl.text()).toContain('Always use the **zebra** crossing.');

    // The open memory has its own address: a reload comes back to it.
    expect(new URL(page.url()).hash).toBe(`#memories/${targetId}`);
    await page.reload();
    await panel.locator('.mem-detail').getByRole('heading', { name: 'Zebra crossing protocol' }).waitFor();
    await panel.getByRole('button', { name: '← Back to results' }).click();
    expect(new URL(page.url()).hash).toBe('#memories');
    await panel.getByLabel('Type').selectOption('');
    await panel.getByLabel('Project').fill('');
  });

  it('a memory holding <script> and <img onerror> runs nothing when listed or opened', async () => {
    const { plaintext: tok } = await createToken(t, { preset: 'full', name: 'attacker' });
    const payload = [
      '<script>window.__xss = "script"; alert("script")</script>',
      '',
      '<img src="x" onerror="window.__xss = \'img\'; alert(\'img\')">',
      '',
      '<svg onload="window.__xss = \'svg\'"></svg> <iframe src="javascript:parent.__xss=\'iframe\'"></iframe>',
      '',
      '[click me](javascript:window.__xss=\'link\') and <a href="javascript:alert(1)">raw link</a>',
      '',
      '[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) [vb](vbscript:msgbox(1)) [mixed]( JaVaScRiPt:alert(1)) <javascript:alert(1)> [ok](https://example.org/)',
      '',
      '![tracker](http://203.0.113.9/pixel.png)',
    ].join('\n');
    const res = await api(base, '/api/memories', tok, {
      method: 'POST',
      body: JSON.stringify({ title: '<img src=x onerror="window.__xss=\'title\';alert(1)"> hostile', tags: ['<b>x</b>'], project: '<script>p</script>', content: payload }),
    });
    expect(res.status).toBe(201);
    xssId = (await res.json()).memory.id;

    const panel = page.locator('#panel-memories');
    await panel.getByLabel('Search', { exact: true }).fill('hostile');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    const row = panel.locator(`[data-memory-id="${xssId}"]`);
    await row.waitFor();
    await row.locator('.mem-title').click();
    const detail = panel.locator('.mem-detail');
    await detail.locator('.markdown').waitFor();
    await page.waitForTimeout(500);

    expect(await page.evaluate(() => (window as unknown as { __xss?: string }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
    expect(await page.locator('#panel-memories script, #panel-memories img, #panel-memories iframe, #panel-memories svg').count()).toBe(0);
    // The raw HTML is shown as text, the javascript: links are not links, the image is not loaded.
    expect(await detail.locator('.markdown').textContent()).toContain('<script>window.__xss = "script"');
    expect(await detail.getByRole('heading', { level: 2 }).textContent()).toContain('<img src=x onerror=');
    const hrefs = await detail.locator('.markdown a').evaluateAll((as) => as.map((a) => a.getAttribute('href') ?? ''));
    expect(hrefs).toEqual(['https://example.org/', 'http://203.0.113.9/pixel.png']);
    expect(await detail.locator('.markdown a.md-image-link').getAttribute('href')).toBe('http://203.0.113.9/pixel.png');
    await shot('memory-hostile-1280x800');

    // The source view is text too.
    await panel.getByRole('button', { name: 'Show markdown source' }).click();
    expect(await detail.locator('pre.source').textContent()).toBe(payload);
    expect(await page.evaluate(() => (window as unknown as { __xss?: string }).__xss)).toBeUndefined();
    await panel.getByRole('button', { name: '← Back to results' }).click();
  });

  it('pages through many results', async () => {
    const { plaintext: tok } = await createToken(t, { preset: 'read-write', name: 'bulk' });
    for (let i = 0; i < 23; i++) {
      const r = await api(base, '/api/memories', tok, { method: 'POST', body: JSON.stringify({ title: `Bulk ${i}`, tags: ['bulk'], content: `bulk note ${i}` }) });
      expect(r.status).toBe(201);
    }
    const panel = page.locator('#panel-memories');
    await panel.getByLabel('Search', { exact: true }).fill('');
    await panel.getByLabel('Tags').fill('bulk');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    await panel.getByText('23 memories, newest first').waitFor();
    expect(await panel.locator('.mem-row').count()).toBe(20);
    expect(await panel.locator('.mem-row .mem-title').first().textContent()).toBe('Bulk 22');
    const pager = panel.getByRole('navigation', { name: 'Pages' });
    await pager.getByText('Page 1 of 2').waitFor();
    expect(await pager.getByRole('button', { name: '← Previous' }).isDisabled()).toBe(true);
    await pager.getByRole('button', { name: 'Next →' }).click();
    await pager.getByText('Page 2 of 2').waitFor();
    expect(await panel.locator('.mem-row').count()).toBe(3);
    expect(await panel.locator('.mem-row .mem-title').last().textContent()).toBe('Bulk 0');
    expect(await pager.getByRole('button', { name: 'Next →' }).isDisabled()).toBe(true);
    await panel.getByLabel('Tags').fill('');
  });

  it('shows the history of a memory with a diff against the current version, and restores an old version', async () => {
    const { plaintext: tok, id: tokId } = await createToken(t, { preset: 'read-write', name: 'historian' });
    const created = await api(base, '/api/memories', tok, { method: 'POST', body: JSON.stringify({ title: 'Kettle policy', content: 'Boil water once.\nPour slowly.' }) });
    const id = (await created.json()).memory.id as string;
    const patched = await api(base, `/api/memories/${id}`, tok, {
      method: 'PATCH',
      body: JSON.stringify({ content: 'Boil water twice.\nPour slowly.', title: 'Kettle policy v2' }),
      headers: { 'If-Match': '"1"' },
    });
    expect(patched.status).toBe(200);

    // A link to the memory (its own address), loaded afresh.
    await page.goto(`${base}/#memories/${id}`);
    await page.reload();
    const panel = page.locator('#panel-memories');
    const history = panel.locator('.mem-history');
    await history.getByText('2 versions kept, newest first.').waitFor();
    const v2 = history.locator('[data-version="2"]');
    const v1 = history.locator('[data-version="1"]');
    await v2.getByText('current').waitFor();
    expect(await v1.textContent()).toContain(`token “historian” (${tokId})`);
    expect(await v2.getByRole('button', { name: 'Restore' }).count()).toBe(0);

    await v1.getByRole('button', { name: 'Show changes' }).click();
    const diff = v1.locator('pre.diff');
    await diff.waitFor();
    expect(await diff.locator('.diff-del').allTextContents()).toEqual(['- title: Kettle policy', '- Boil water once.']);
    expect(await diff.locator('.diff-add').allTextContents()).toEqual(['+ title: Kettle policy v2', '+ Boil water twice.']);
    await shot('memory-history-1280x800');

    await v1.getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('dialog', { name: 'Restore version 1?' }).getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('status').filter({ hasText: 'Version 1 restored' }).waitFor();
    await panel.locator('.mem-detail').getByRole('heading', { name: 'Kettle policy', exact: true }).waitFor();
    await history.getByText('3 versions kept, newest first.').waitFor();
    expect(await history.locator('[data-version="3"]').textContent()).toContain('admin (admin)');
    const now = await (await api(base, `/api/memories/${id}`, tok)).json();
    expect(now.memory).toMatchObject({ version: 3, title: 'Kettle policy', content: 'Boil water once.\nPour slowly.' });
    await panel.getByRole('button', { name: '← Back to results' }).click();
  });

  it('deletes a memory from the page after confirming', async () => {
    const panel = page.locator('#panel-memories');
    await panel.getByLabel('Search', { exact: true }).fill('hostile');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    await panel.locator(`[data-memory-id="${xssId}"] .mem-title`).click();
    await panel.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('dialog', { name: 'Delete memory?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('status').filter({ hasText: 'Memory deleted' }).waitFor();
    await panel.getByText('No matches', { exact: true }).waitFor();
    expect(await panel.locator(`[data-memory-id="${xssId}"]`).count()).toBe(0);
    expect((await page.request.get(`${base}/api/memories/${xssId}`)).status()).toBe(404);
  });

  it('lists the namespaces with their counts and browses the memories of a chosen one', async () => {
    const { plaintext: tok } = await createToken(t, { preset: 'full', name: 'tenants', namespaces: ['acme/*'] });
    const write = async (ns: string, title: string) => {
      const res = await api(base, '/api/memories', tok, { method: 'POST', headers: { 'X-Memory-Namespace': ns }, body: JSON.stringify({ title, content: `${title}: a note of ${ns}` }) });
      expect(res.status).toBe(201);
      return (await res.json()).memory.id as string;
    };
    const x1 = await write('acme/xray', 'Xray one');
    await write('acme/xray', 'Xray two');
    await write('acme/yankee', 'Yankee one');

    await page.reload();
    await openTab('Memories');
    const panel = page.locator('#panel-memories');
    await panel.getByLabel('Search', { exact: true }).fill('');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    const count = (ns: string) => panel.locator(`.ns-table tr[data-namespace="${ns}"] td[data-label="Memories"]`).textContent();
    await panel.locator('.ns-table tr[data-namespace="acme/xray"]').waitFor();
    expect([await count('acme/xray'), await count('acme/yankee')]).toEqual(['2', '1']);
    expect(await panel.locator('.ns-table tr[data-namespace]').evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.namespace))).toEqual(['acme/xray', 'acme/yankee', 'default']);

    // Choosing a namespace filters the browser (its requests send X-Memory-Namespace); opening a memory works there.
    await panel.getByLabel('Namespace', { exact: true }).selectOption('acme/xray');
    await panel.getByText(/^2 memories/).waitFor();
    expect((await panel.locator('.mem-row .mem-title').allTextContents()).sort()).toEqual(['Xray one', 'Xray two']);
    await panel.locator(`[data-memory-id="${x1}"] .mem-title`).click();
    await panel.locator('.mem-detail').getByRole('heading', { name: 'Xray one' }).waitFor();
    await panel.getByRole('button', { name: '← Back to results' }).click();
    // The table's names choose too; back to default, where those memories are not.
    await panel.locator('.ns-table').getByRole('button', { name: 'acme/yankee' }).click();
    await panel.getByText(/^1 memory/).waitFor();
    expect(await panel.locator('.mem-row .mem-title').allTextContents()).toEqual(['Yankee one']);
    await shot('memories-namespaces-1280x800');
    await panel.getByLabel('Namespace', { exact: true }).selectOption('');
    await panel.locator('.mem-row').first().waitFor();
    expect(await panel.locator('.mem-row .mem-title').allTextContents()).not.toContain('Xray one');
  });

  it('Agent set-up shows the prompt for the chosen variable, copies it, and offers the skill pack', async () => {
    await openTab('Agent set-up');
    const panel = page.locator('#panel-setup');
    await panel.getByLabel('Token variable name').fill('MY_AGENT_TOKEN');
    await panel.locator('#skill-prompt').filter({ hasText: 'MY_AGENT_TOKEN' }).waitFor();
    expect(await panel.locator('#skill-prompt').textContent()).toContain(base);
    await panel.getByRole('button', { name: 'Copy prompt' }).click();
    await panel.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toContain('MY_AGENT_TOKEN');
    const zip = await page.request.get(`${base}${await panel.getByRole('link', { name: /skill pack/ }).getAttribute('href')}`);
    expect(zip.status()).toBe(200);
    expect(zip.headers()['content-type']).toMatch(/application\/zip/);
    expect(await panel.getByRole('link', { name: 'Swagger UI' }).getAttribute('href')).toBe('/docs');
    expect(await panel.getByRole('link', { name: 'ReDoc' }).getAttribute('href')).toBe('/redoc');
  });

  it('Agent set-up shows MCP configurations with the real URL; each one, copied and read as its client reads it, connects', async () => {
    await openTab('Agent set-up');
    const panel = page.locator('#panel-setup');
    await panel.getByLabel('Token variable name').fill('MY_AGENT_TOKEN');
    await panel.locator('#mcp-config-codex').filter({ hasText: 'MY_AGENT_TOKEN' }).waitFor();
    // The name it already shows, filled again, redraws nothing: the Copy buttons stay the ones on
    // screen (a redraw used to replace them between a click and its "Copied").
    const shown = await panel.locator('section[data-client="claude-code"]').getByRole('button', { name: 'Copy', exact: true }).elementHandle();
    await panel.getByLabel('Token variable name').fill('MY_AGENT_TOKEN');
    await page.waitForTimeout(800); // past the 300 ms debounce and a reload
    expect(await shown?.evaluate((b) => b.isConnected)).toBe(true);
    const url = `${base}/mcp`;
    expect(await panel.locator('#mcp-url').textContent()).toBe(url);
    await panel.getByRole('button', { name: 'Copy URL' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(url);
    // OAuth is off on this service: the claude.ai / ChatGPT card says how to turn it on (test/browser/mcp-oauth.spec.ts: on).
    expect(await panel.locator('#connectors-off').textContent()).toMatch(/MEMSTORE_OAUTH=true/);

    const { plaintext: token } = await createToken(t, { name: 'mcp from the page', preset: 'read-only' });
    const copied: Record<string, string> = {};
    for (const id of ['claude-code', 'claude-code-json', 'cursor', 'vscode', 'codex', 'stdio']) {
      const block = panel.locator(`section[data-client="${id}"]`);
      await block.getByRole('button', { name: 'Copy', exact: true }).click();
      await block.getByRole('button', { name: 'Copied' }).waitFor();
      const text = await page.evaluate(() => navigator.clipboard.readText());
      expect(text).toBe(await block.locator('pre').textContent());
      expect(text).toContain(url);
      copied[id] = text;
    }
    await shot('setup-mcp-1280x800');

    // What each client would send, derived from the copied text the way that client reads it.
    const env: Record<string, string> = { MY_AGENT_TOKEN: token };
    const expand = (s: string, re: RegExp) => s.replace(re, (_, name: string) => env[name] ?? `<unset ${name}>`);
    const targets: Array<[client: string, url: string, authorization: string]> = [];
    const cli = /^claude mcp add --transport http memory-store (\S+) --header "Authorization: (Bearer \$[A-Z_]+)"$/.exec(copied['claude-code']);
    expect(cli).not.toBeNull();
    targets.push(['claude mcp add', cli![1], expand(cli![2], /\$([A-Z_]+)/g)]);
    const claudeJson = JSON.parse(copied['claude-code-json']).mcpServers['memory-store'];
    expect(claudeJson.type).toBe('http');
    targets.push(['.mcp.json', claudeJson.url, expand(claudeJson.headers.Authorization, /\$\{([A-Z_]+)\}/g)]);
    const cursor = JSON.parse(copied.cursor).mcpServers['memory-store'];
    targets.push(['Cursor', cursor.url, expand(cursor.headers.Authorization, /\$\{env:([A-Z_]+)\}/g)]);
    const vscode = JSON.parse(copied.vscode);
    expect(vscode.inputs[0]).toMatchObject({ type: 'promptString', id: 'memory-store-token', password: true });
    const vsServer = vscode.servers['memory-store'];
    targets.push(['VS Code', vsServer.url, vsServer.headers.Authorization.replace('${input:memory-store-token}', token)]);
    const toml = Object.fromEntries([...copied.codex.matchAll(/^(\w+) = "([^"]*)"$/gm)].map((m) => [m[1], m[2]]));
    expect(copied.codex).toMatch(/^\[mcp_servers\.memory-store\]$/m);
    targets.push(['Codex', toml.url, `Bearer ${env[toml.bearer_token_env_var]}`]);
    const bridge = JSON.parse(copied.stdio).mcpServers['memory-store'];
    expect(bridge.command).toBe('npx');
    const header = bridge.args[bridge.args.indexOf('--header') + 1] as string; // mcp-remote: "Name:value"
    expect(header.split(':')[0]).toBe('Authorization');
    targets.push(['mcp-remote bridge', bridge.args[2], header.slice(header.indexOf(':') + 1).replace('${MEMORY_STORE_AUTH}', `Bearer ${token}`)]);

    for (const [client, target, authorization] of targets) {
      const mcp = new Client({ name: `as ${client}`, version: '1.0.0' });
      await mcp.connect(new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: authorization } } }));
      const names = (await mcp.listTools()).tools.map((x) => x.name);
      await mcp.close();
      expect({ client, search: names.includes('search_memories'), create: names.includes('create_memory') }).toEqual({ client, search: true, create: false });
    }
  });

  it('the Audit tab lists sign-ins and token actions newest first, filters by action, and never shows a secret', async () => {
    await openTab('Audit');
    const panel = page.locator('#panel-audit');
    await panel.locator('table.audit-table').waitFor();
    // The wrong password at the start, and the sign-in after it.
    const logins = panel.locator('tr[data-action="admin.login"]');
    await logins.filter({ hasText: 'Failure' }).first().waitFor();
    expect(await logins.filter({ hasText: 'Success' }).count()).toBeGreaterThanOrEqual(1);
    const created = panel.locator('tr[data-action="token.create"]').filter({ hasText: tokenId });
    expect(await created.count()).toBe(1);
    expect(await created.locator('td[data-label="Who"]').innerText()).toContain('admin');
    // Newest first: the first row is not older than the last.
    const times = await panel.locator('tbody tr time').evaluateAll((els) => els.map((e) => e.getAttribute('datetime') ?? ''));
    expect(times.length).toBeGreaterThan(2);
    expect([...times].sort().reverse()).toEqual(times);
    // Filter by action.
    await panel.getByLabel('Action').selectOption('token.create');
    await panel.getByRole('button', { name: 'Filter' }).click();
    await page.waitForFunction(() => {
      const rows = Array.from(document.querySelectorAll('#panel-audit tbody tr'));
      return rows.length > 0 && rows.every((r) => r.getAttribute('data-action') === 'token.create');
    });
    // No secret is ever on the page.
    expect(await panel.innerText()).not.toContain(plaintext.slice(-20));
    expect(await panel.innerText()).not.toContain(ADMIN_PASSWORD);
    await panel.getByLabel('Action').selectOption('');
    await panel.getByRole('button', { name: 'Filter' }).click();
  });

  it('creates a memory in the editor (safe live preview), finds it with a score, edits it, and keeps the text on an If-Match conflict', async () => {
    await openTab('Memories');
    const panel = page.locator('#panel-memories');
    await panel.getByRole('button', { name: 'New memory' }).click();
    const editor = panel.getByRole('form', { name: 'New memory' });
    await editor.getByLabel('Title').fill('Otter feeding schedule');
    await editor.getByLabel('Content (markdown)').fill('# Feeding\n\nGive **fish** twice a day.\n\n<script>window.__xss = "editor"</script><img src=x onerror="window.__xss=\'editor-img\'">');
    // The preview follows the typing, rendered by the same safe renderer: raw HTML stays text.
    const preview = editor.locator('.editor-preview');
    await preview.locator('h1').getByText('Feeding').waitFor();
    expect(await preview.locator('strong').textContent()).toBe('fish');
    expect(await preview.locator('script, img').count()).toBe(0);
    expect(await preview.textContent()).toContain('<script>window.__xss = "editor"</script>');
    await editor.getByLabel('Type').selectOption('task');
    await editor.getByLabel('Scope').selectOption('project');
    await editor.getByLabel('Tags').fill('otters, zoo ');
    await editor.getByLabel('Project').fill('zoo');
    await shot('memory-editor-1280x800');
    await editor.getByRole('button', { name: 'Create memory' }).click();
    const detail = panel.locator('.mem-detail');
    await detail.getByRole('heading', { name: 'Otter feeding schedule' }).waitFor();
    const id = /^#memories\/([0-9a-f]{24})$/.exec(new URL(page.url()).hash)?.[1] as string;
    expect(id).toBeTruthy();
    const { plaintext: tok } = await createToken(t, { preset: 'read-write', name: 'otter agent' });
    const stored = (await (await api(base, `/api/memories/${id}`, tok)).json()).memory;
    expect(stored).toMatchObject({ title: 'Otter feeding schedule', type: 'task', scope: 'project', tags: ['otters', 'zoo'], project: 'zoo', version: 1 });
    expect(await page.evaluate(() => (window as unknown as { __xss?: string }).__xss)).toBeUndefined();

    // In the list, and a search row shows its score.
    await panel.getByRole('button', { name: '← Back to results' }).click();
    await panel.getByLabel('Search', { exact: true }).fill('otter');
    await panel.getByRole('button', { name: 'Search', exact: true }).click();
    const row = panel.locator(`[data-memory-id="${id}"]`);
    await row.waitFor();
    expect(await row.locator('.mem-score').textContent()).toMatch(/^score -?\d+(\.\d+)?(e-?\d+)?$/);
    expect(await panel.locator('.result-summary').textContent()).toMatch(/best first · keyword ranking$/);

    // Edit: the form opens with the stored fields; Save sends If-Match of version 1.
    await row.locator('.mem-title').click();
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    let form = panel.getByRole('form', { name: 'Edit memory' });
    expect(await form.getByLabel('Tags').inputValue()).toBe('otters, zoo');
    await form.getByLabel('Content (markdown)').fill('# Feeding\n\nGive **fish** three times a day.');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await detail.locator('.markdown').getByText('three times a day').waitFor();
    expect((await (await api(base, `/api/memories/${id}`, tok)).json()).memory).toMatchObject({ version: 2, content: '# Feeding\n\nGive **fish** three times a day.', project: 'zoo' });

    // Conflict: an agent changes the memory while the admin edits version 2.
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    form = panel.getByRole('form', { name: 'Edit memory' });
    const mine = 'Admin text that must survive the conflict.';
    await form.getByLabel('Content (markdown)').fill(mine);
    const agentPatch = await api(base, `/api/memories/${id}`, tok, { method: 'PATCH', headers: { 'If-Match': '"2"' }, body: JSON.stringify({ content: 'The agent changed this meanwhile.' }) });
    expect(agentPatch.status).toBe(200);
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByRole('alert').filter({ hasText: 'This memory changed since you opened it (you opened version 2; it is now version 3)' }).waitFor();
    expect(await form.getByLabel('Content (markdown)').inputValue()).toBe(mine);
    const current = form.getByRole('region', { name: 'Current version 3' });
    expect(await current.locator('.markdown').textContent()).toContain('The agent changed this meanwhile.');
    // Nothing was written by the refused save.
    expect((await (await api(base, `/api/memories/${id}`, tok)).json()).memory).toMatchObject({ version: 3, content: 'The agent changed this meanwhile.' });
    await shot('memory-editor-conflict-1280x800');
    // Keep my text: saved over version 3 (the admin has seen it), as version 4.
    await current.getByRole('button', { name: 'Keep my text and save over version 3' }).click();
    await detail.locator('.markdown').getByText(mine).waitFor();
    expect((await (await api(base, `/api/memories/${id}`, tok)).json()).memory).toMatchObject({ version: 4, content: mine });

    // A second conflict, this time reloading the current version.
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    form = panel.getByRole('form', { name: 'Edit memory' });
    await form.getByLabel('Content (markdown)').fill('Second admin draft.');
    expect((await api(base, `/api/memories/${id}`, tok, { method: 'PATCH', headers: { 'If-Match': '"4"' }, body: JSON.stringify({ content: 'The agent changed this meanwhile.' }) })).status).toBe(200);
    await form.getByRole('button', { name: 'Save changes' }).click();
    await form.getByRole('alert').filter({ hasText: 'you opened version 4; it is now version 5' }).waitFor();
    expect(await form.getByLabel('Content (markdown)').inputValue()).toBe('Second admin draft.');
    const current5 = form.getByRole('region', { name: 'Current version 5' });
    // Reload the current version, then save on top of it: the base is now version 5.
    await current5.getByRole('button', { name: /Load the current version/ }).click();
    expect(await form.getByLabel('Content (markdown)').inputValue()).toBe('The agent changed this meanwhile.');
    await form.getByLabel('Content (markdown)').fill('The agent changed this meanwhile. The admin agrees.');
    await form.getByRole('button', { name: 'Save changes' }).click();
    await detail.locator('.markdown').getByText('The admin agrees.').waitFor();
    expect((await (await api(base, `/api/memories/${id}`, tok)).json()).memory).toMatchObject({ version: 6, content: 'The agent changed this meanwhile. The admin agrees.' });
    // Cancel asks before dropping typed text.
    await panel.getByRole('button', { name: 'Edit', exact: true }).click();
    await panel.getByLabel('Content (markdown)').fill('Draft to throw away.');
    await panel.getByRole('button', { name: 'Cancel' }).click();
    await page.getByRole('dialog', { name: 'Discard your changes?' }).getByRole('button', { name: 'Discard' }).click();
    await detail.locator('.markdown').getByText('The admin agrees.').waitFor();
    await panel.getByRole('button', { name: '← Back to results' }).click();
    await panel.getByLabel('Search', { exact: true }).fill('');
  });

  it('every tab renders at 1280×800 and 390×844 (screenshots in test/artifacts)', async () => {
    for (const [size, vp] of [
      ['1280x800', DESKTOP],
      ['390x844', PHONE],
    ] as const) {
      await page.setViewportSize(vp);
      for (const tab of TABS) {
        await openTab(tab.label);
        const panel = page.locator(`#panel-${tab.id}`);
        expect(await panel.isVisible()).toBe(true);
        // Nothing overflows the window sideways.
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
        expect({ tab: tab.id, size, overflow }).toEqual({ tab: tab.id, size, overflow: 0 });
        await shot(`${tab.id}-${size}`);
      }
      // An open memory too.
      await page.goto(`${base}/#memories/${targetId}`);
      await page.locator('.mem-detail .markdown').waitFor();
      expect(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth)).toBe(0);
      await shot(`memory-detail-${size}`);
      await page.getByRole('button', { name: '← Back to results' }).click();
    }
    // Dark colour scheme (prefers-color-scheme) for one tab, to look at.
    await page.setViewportSize(DESKTOP);
    await page.emulateMedia({ colorScheme: 'dark' });
    await openTab('API tokens');
    await shot('tokens-dark-1280x800');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('every control of every tab lies inside the window at 1280×800 and 390×844 (none off-screen sideways)', async () => {
    if (!(await (await page.request.get(`${base}/api/me`)).json()).authenticated) {
      await page.goto(`${base}/`);
      await signIn(page, ADMIN_PASSWORD);
    }
    // At least one token, so the tokens table (with its row buttons) is there.
    await createToken(t, { name: 'layout check', preset: 'read-write', allowed_ips: ['10.0.0.0/8', '2001:db8::/32'] });
    for (const [size, vp] of [
      ['1280x800', DESKTOP],
      ['390x844', PHONE],
    ] as const) {
      await page.setViewportSize(vp);
      const views: Array<{ tab: (typeof TABS)[number]; editor?: true }> = [...TABS.map((tab) => ({ tab })), { tab: TABS[1], editor: true }];
      for (const { tab, editor } of views) {
        await openTab(tab.label);
        if (editor) {
          // The memory editor, open with some content in its preview.
          await page.locator('#panel-memories').getByRole('button', { name: 'New memory' }).click();
          await page.getByLabel('Content (markdown)').fill('# A heading\n\nA long line: ' + 'word '.repeat(60));
        }
        await page.waitForTimeout(300); // lists fill in after the panel shows
        const outside = await page.evaluate((id) => {
          const panel = document.getElementById(`panel-${id}`)!;
          const width = document.documentElement.clientWidth;
          return Array.from(panel.querySelectorAll('button, input, select, textarea, a[href], summary'))
            .filter((el) => {
              const r = el.getBoundingClientRect();
              if (r.width === 0 && r.height === 0) return false; // not rendered (hidden, closed <details>)
              return r.left < -0.5 || r.right > width + 0.5;
            })
            .map(
              (el) =>
                `${el.tagName.toLowerCase()} "${(el.textContent || (el as HTMLInputElement).name || el.getAttribute('aria-label') || '').trim().slice(0, 30)}" at ${Math.round(el.getBoundingClientRect().left)}..${Math.round(el.getBoundingClientRect().right)} of ${width}`,
            );
        }, tab.id);
        const view = editor ? 'memory editor' : tab.id;
        expect({ view, size, outside }).toEqual({ view, size, outside: [] });
      }
    }
    await page.setViewportSize(DESKTOP);
    // The embedding provider is a choice of the three it can be, not a free-text box.
    await openTab('Configuration');
    const provider = page.locator('#cfg-embedding_provider');
    expect(await provider.evaluate((e) => [e.tagName, ...Array.from((e as HTMLSelectElement).options).map((o) => o.value)])).toEqual(['SELECT', '', 'local', 'openai', 'none']);
  });

  it('every form control has an accessible name', async () => {
    for (const tab of TABS) {
      await openTab(tab.label);
      const unnamed = await page.evaluate((id) => {
        const panel = document.getElementById(`panel-${id}`)!;
        return Array.from(panel.querySelectorAll('input, select, textarea, button'))
          .filter((el) => {
            const e = el as HTMLInputElement;
            if (e.type === 'hidden' || e.closest('[hidden]')) return false;
            const labelled = (e.labels && e.labels.length > 0) || e.getAttribute('aria-label') || e.getAttribute('aria-labelledby');
            return !labelled && !(e.tagName === 'BUTTON' && e.textContent?.trim());
          })
          .map((el) => el.outerHTML.slice(0, 80));
      }, tab.id);
      expect({ tab: tab.id, unnamed }).toEqual({ tab: tab.id, unnamed: [] });
    }
  });

  it('signs out', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to the admin page' }).waitFor();
    await page.getByText('You have signed out.').waitFor();
    expect(await (await page.request.get(`${base}/api/me`)).json()).toEqual({ ok: true, authenticated: false });
    expect((await page.request.get(`${base}/api/tokens`)).status()).toBe(401);
  });

  it('shows settings from the environment read-only, and says so when sign-in is throttled', async () => {
    const t2 = await createTestApp({ MEMSTORE_LOGIN_MAX_FAILURES: '2', MEMSTORE_LOGIN_WINDOW_SECONDS: '600', MEMSTORE_DOCDB_DB: 'from_env_db' });
    try {
      await t2.app.listen(0, '127.0.0.1');
      const p2 = await ctx.newPage();
      await p2.setViewportSize(PHONE);
      await p2.goto(`${urlOf(t2)}/#config`);
      await signIn(p2, ADMIN_PASSWORD);
      const db = p2.locator('#cfg-docdb_db');
      await db.waitFor();
      expect(await db.inputValue()).toBe('from_env_db');
      expect(await db.getAttribute('readonly')).not.toBeNull();
      await p2.locator('#panel-config').getByText('from environment: MEMSTORE_DOCDB_DB').waitFor();

      // A broken object store: the Status tab says which backend is down and why.
      const objects = path.join(t2.dataDir, 'objects');
      fs.rmSync(objects, { recursive: true, force: true });
      fs.writeFileSync(objects, 'not a directory');
      await p2.getByRole('tab', { name: 'Status', exact: true }).click();
      const card = p2.getByRole('article', { name: 'Object store status' });
      await card.getByText('Unavailable', { exact: true }).waitFor();
      expect(await card.locator('.detail').textContent()).toMatch(/^Object store unavailable: .+/);
      expect(await p2.getByRole('article', { name: 'Document database status' }).getByText('Healthy').count()).toBe(1);
      await p2.locator('#panel-status').getByRole('button', { name: 'Test connections' }).click();
      const failed = p2.locator('.test-results li.is-bad');
      await failed.waitFor();
      expect(await failed.textContent()).toMatch(/Failed.*Object store.*unavailable/);
      await p2.screenshot({ path: path.join(ARTIFACTS, 'status-broken-objstore-390x844.png'), fullPage: true });
      await p2.getByRole('button', { name: 'Sign out' }).click();
      await p2.getByRole('heading', { name: 'Sign in to the admin page' }).waitFor();

      let message = '';
      const statuses: number[] = [];
      for (let i = 0; i < 4 && !/Too many/.test(message); i++) {
        const answered = p2.waitForResponse((r) => r.url().endsWith('/api/login'));
        await signIn(p2, `wrong ${i}`);
        statuses.push((await answered).status());
        await p2.getByRole('button', { name: 'Sign in' }).and(p2.locator(':enabled')).waitFor();
        message = (await p2.locator('.login-message [role=alert]').textContent()) ?? '';
      }
      expect(statuses).toEqual([401, 401, 429]);
      expect(message).toMatch(/^Too many failed sign-in attempts from this address\. Try again in \d+ (seconds?|minutes?)\.$/);
      await p2.screenshot({ path: path.join(ARTIFACTS, 'login-throttled-390x844.png') });
      await p2.close();
    } finally {
      await t2.close();
    }
  });

  it('a first sign-in with the generated password asks to choose one; field errors in words; other sessions signed out', async () => {
    const written: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const t3 = await createTestApp({ MEMSTORE_ADMIN_PASSWORD: '' }).finally(() => spy.mockRestore());
    try {
      const generated = /password: (\S+)/.exec(written.join(''))![1];
      await t3.app.listen(0, '127.0.0.1');
      const b3 = urlOf(t3);
      // Another session (e.g. another browser), signed out by the change.
      const other = await fetch(`${b3}/api/login`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: generated }) });
      const otherCookie = other.headers.get('set-cookie')!.split(';')[0];
      const p3 = await ctx.newPage();
      await p3.setViewportSize(PHONE);
      await p3.goto(`${b3}/`);
      await signIn(p3, generated);
      const dialog = p3.getByRole('dialog', { name: 'Choose your own admin password' });
      await dialog.waitFor();
      // The password just typed is filled in; mistakes are named next to their field, in words.
      expect(await dialog.getByLabel('Current password').inputValue()).toBe(generated);
      await dialog.getByLabel('New password', { exact: true }).fill('too short');
      await dialog.getByLabel('Repeat the new password').fill('something else');
      await dialog.getByRole('button', { name: 'Change password' }).click();
      await dialog.getByText('Use at least 12 characters.').waitFor();
      await dialog.getByText('This does not match the new password.').waitFor();
      expect(await dialog.getByLabel('New password', { exact: true }).getAttribute('aria-invalid')).toBe('true');
      await p3.screenshot({ path: path.join(ARTIFACTS, 'change-password-errors-390x844.png') });
      await dialog.getByLabel('Current password').fill('not the password at all');
      await dialog.getByLabel('New password', { exact: true }).fill('my own long passphrase');
      await dialog.getByLabel('Repeat the new password').fill('my own long passphrase');
      await dialog.getByRole('button', { name: 'Change password' }).click();
      await dialog.getByText('This is not the current password.').waitFor();
      await dialog.getByLabel('Current password').fill(generated);
      await dialog.getByRole('button', { name: 'Change password' }).click();
      await p3.getByText('Password changed. 1 other session was signed out.').waitFor();
      await dialog.waitFor({ state: 'detached' });
      expect((await fetch(`${b3}/api/tokens`, { headers: { Cookie: otherCookie } })).status).toBe(401);
      expect((await (await p3.request.get(`${b3}/api/me`)).json()).must_change_password).toBe(false);
      // The top bar offers the change later too; the new password is the one that signs in now.
      await p3.getByRole('button', { name: 'Change password' }).click();
      await p3.getByRole('dialog', { name: 'Change the admin password' }).getByRole('button', { name: 'Cancel' }).click();
      await p3.getByRole('button', { name: 'Sign out' }).click();
      await signIn(p3, 'my own long passphrase');
      await expectSelectedOn(p3, 'Status');
      expect(await p3.getByRole('dialog').count()).toBe(0);
      await p3.close();
    } finally {
      await t3.close();
    }
  });

  it('with the local model: an empty search says how close the nearest memory came and shows it on request; hybrid rows say why', async () => {
    const t4 = await createTestApp({ MEMSTORE_EMBEDDING_PROVIDER: '' });
    try {
      await t4.app.listen(0, '127.0.0.1');
      const b4 = urlOf(t4);
      const { plaintext: tok } = await createToken(t4, { preset: 'read-write', name: 'notes agent' });
      const notes = [
        'Nightly database snapshots are kept for 35 days in the Frankfurt bucket.',
        'The user takes oat milk in coffee; cow’s milk upsets their stomach.',
        'Daily standup moved to 9:45 so the Lisbon office can join.',
      ];
      for (const content of notes) expect((await api(b4, '/api/memories', tok, { method: 'POST', body: JSON.stringify({ content }) })).status).toBe(201);
      for (let i = 0; (await (await api(b4, '/api/status', tok)).json()).embeddings.pending > 0; i++) {
        if (i > 300) throw new Error('embeddings still pending');
        await new Promise((r) => setTimeout(r, 200));
      }
      // A question in other words than its note, just short of the floor (cosine 0.60; decisions 0171, 0173), as an agent sees it.
      const question = 'How long do we hold on to backups?';
      const asked = await (await api(b4, `/api/memories?q=${encodeURIComponent(question)}`, tok)).json();
      expect({ rows: asked.rows.length, below: asked.best_below_floor > 0 }).toEqual({ rows: 0, below: true });
      const p4 = await ctx.newPage();
      await p4.goto(`${b4}/`);
      await signIn(p4, ADMIN_PASSWORD);
      await p4.getByRole('tab', { name: 'Memories', exact: true }).click();
      const panel = p4.locator('#panel-memories');
      await panel.getByLabel('Search', { exact: true }).fill(question);
      await panel.getByRole('button', { name: 'Search', exact: true }).click();
      await panel.getByText(`Nothing cleared the relevance floor; the closest memory scored ${asked.best_below_floor}.`).waitFor();
      await panel.getByRole('button', { name: `Show matches down to ${asked.best_below_floor}` }).click();
      const row = panel.locator('.mem-list li').first();
      await row.getByText(notes[0]).waitFor();
      expect(await panel.locator('.result-summary').textContent()).toMatch(new RegExp(`best first · hybrid ranking · floor lowered to ${asked.best_below_floor}$`));
      expect(await row.locator('.mem-why').textContent()).toMatch(/^score 0\.\d+why .*meaning 0\.\d\d/);
      await p4.close();
    } finally {
      await t4.close();
    }
  });

  async function expectSelectedOn(p: Page, label: string): Promise<void> {
    await p.getByRole('tab', { name: label, exact: true, selected: true }).waitFor();
  }

  it('made no request to another host and raised no dialog or script error during the whole run', () => {
    expect(foreignRequests).toEqual([]);
    expect(dialogs).toEqual([]);
    expect(pageErrors).toEqual([]);
  });
});
