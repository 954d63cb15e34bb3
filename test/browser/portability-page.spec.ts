/**
 * The Export / Import tab of the admin page in Chromium (issue 12): export with a filter
 * downloads the zip, import of a folder of notes shows its dry-run report, then imports.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN_PASSWORD, createTestApp, createToken, TestApp } from '../support/app';
import { ensureWebBuilt } from '../support/web-build';
import { makeZip, unzip } from '../support/zip';

const CHROMIUM = '/usr/bin/chromium';
const REQUIRED = process.env.MEMSTORE_REQUIRE_ALL_BACKENDS === '1';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'];

const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium && REQUIRED) throw new Error(`MEMSTORE_REQUIRE_ALL_BACKENDS=1 but Chromium was not found at ${CHROMIUM}`);
if (!haveChromium) process.stdout.write(`\nBrowser suite (Export / Import tab): SKIPPED — Chromium not found at ${CHROMIUM}\n`);
const describeBrowser = haveChromium ? describe : describe.skip;

jest.setTimeout(90_000);

describeBrowser('Export / Import tab in Chromium', () => {
  let t: TestApp;
  let base: string;
  let ctx: BrowserContext;
  let page: Page;
  let userDir: string;
  let token: string;
  const pageErrors: string[] = [];

  const api = (p: string, init: RequestInit = {}) => fetch(`${base}${p}`, { ...init, headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', ...(init.headers ?? {}) } });
  const total = async () => ((await (await api('/api/memories?limit=1')).json()) as { total: number }).total;

  beforeAll(async () => {
    ensureWebBuilt();
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    token = (await createToken(t, { preset: 'full' })).plaintext;
    for (const [project, content] of [
      ['alpha', 'first alpha'],
      ['alpha', 'second alpha'],
      ['beta', 'only beta'],
    ]) {
      expect((await api('/api/memories', { method: 'POST', body: JSON.stringify({ project, content }) })).status).toBe(201);
    }
    userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-chromium-'));
    ctx = await chromium.launchPersistentContext(userDir, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    page = ctx.pages()[0] ?? (await ctx.newPage());
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await page.goto(`${base}/`);
    await page.getByLabel('Username').fill('admin');
    await page.getByLabel('Password').fill(ADMIN_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('tab', { name: 'Export / Import', exact: true }).click();
    await page.getByRole('heading', { name: 'Export', exact: true }).waitFor();
  }, 120_000);

  afterAll(async () => {
    await ctx?.close();
    await t?.close();
    if (userDir) fs.rmSync(userDir, { recursive: true, force: true });
  });

  it('exports the memories the filters select as a zip download', async () => {
    await page.getByLabel('Project').fill('alpha');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Export' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^memstore-export-.*\.zip$/);
    const file = await download.path();
    const entries = await unzip(fs.readFileSync(file));
    const manifest = JSON.parse(entries.get('manifest.json')!.toString());
    expect(manifest).toMatchObject({ count: 2, filters: { project: 'alpha' } });
    expect([...entries.keys()].filter((k) => k.startsWith('memories/'))).toHaveLength(2);
  });

  it('imports a folder of notes: a dry run reports without writing, then the import creates them', async () => {
    const before = await total();
    const zip = await makeZip({ 'notes/Groceries.md': 'milk #shopping', 'notes/plan.md': '# Launch plan\nship it #work', 'notes/bad.md': '---\ntitle: "oops\n---\nx' });
    await page.locator('input[type=file]').setInputFiles({ name: 'notes.zip', mimeType: 'application/zip', buffer: zip });
    await expect(page.getByLabel(/Dry run/).isChecked()).resolves.toBe(true);
    await page.getByRole('button', { name: 'Import' }).click();
    const report = page.locator('#import-report');
    await report.getByText('Dry run of 3 files (zip).').waitFor();
    expect(await report.locator('[data-count=created]').textContent()).toBe('2');
    expect(await report.locator('[data-count=invalid]').textContent()).toBe('1');
    await report
      .locator('tr[data-status=invalid]')
      .getByText(/front matter is not valid YAML/)
      .waitFor();
    expect(await total()).toBe(before);

    await page.getByLabel(/Dry run/).uncheck();
    await page.getByRole('button', { name: 'Import' }).click();
    await report.getByText('Import of 3 files (zip).').waitFor();
    expect(await report.locator('[data-count=created]').textContent()).toBe('2');
    expect(await total()).toBe(before + 2);
    const found = (await (await api('/api/memories?q=launch')).json()) as { rows: Array<{ title: string; tags: string[] }> };
    expect(found.rows[0]).toMatchObject({ title: 'Launch plan', tags: ['work'] });
    fs.mkdirSync(path.resolve(__dirname, '..', 'artifacts'), { recursive: true });
    await page.screenshot({ path: path.resolve(__dirname, '..', 'artifacts', 'portability-1280.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });
});
