import request from 'supertest';
import { createTestApp, TestApp } from '../support/app';
import { ensureWebBuilt } from '../support/web-build';

describe('admin page serving (GET /, /admin-assets)', () => {
  let t: TestApp;

  beforeAll(async () => {
    ensureWebBuilt();
    t = await createTestApp();
  }, 120_000);
  afterAll(() => t?.close());

  it('serves the built page at / without credentials, never cached, under a script-src self CSP', async () => {
    const res = await request(t.http).get('/').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['content-security-policy']).toMatch(/script-src 'self'/);
    expect(res.text).toContain('<div id="app"></div>');
    // No inline script: the only script is an external, hashed module under /admin-assets/.
    const scripts = [...res.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attrs, body] of scripts) {
      expect(attrs).toMatch(/src="\/admin-assets\/[\w-]+\.js"/);
      expect(body.trim()).toBe('');
    }
    // Nothing from another host.
    expect(res.text).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it('serves hashed assets as immutable with the right type', async () => {
    const page = await request(t.http).get('/').expect(200);
    const js = /src="(\/admin-assets\/[^"]+\.js)"/.exec(page.text)![1];
    const css = /href="(\/admin-assets\/[^"]+\.css)"/.exec(page.text)![1];
    const a = await request(t.http).get(js).expect(200);
    expect(a.headers['content-type']).toMatch(/javascript/);
    expect(a.headers['cache-control']).toMatch(/max-age=31536000/);
    expect(a.headers['cache-control']).toMatch(/immutable/);
    const c = await request(t.http).get(css).expect(200);
    expect(c.headers['content-type']).toMatch(/^text\/css/);
  });

  it('answers 404 in the envelope for unknown or malicious asset names', async () => {
    for (const p of ['/admin-assets/nope-123.js', '/admin-assets/..%2F..%2Fpackage.json', '/admin-assets/%2e%2e%2findex.html', '/admin-assets/.hidden.js', '/admin-assets/index.html']) {
      const res = await request(t.http).get(p);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ ok: false, error: expect.any(String) });
    }
  });

  it('leaves /api routes alone', async () => {
    const res = await request(t.http).get('/api/does-not-exist');
    expect(res.status).toBe(404);
    expect(res.body.ok).toBe(false);
  });
});
