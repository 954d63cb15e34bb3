import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import request from 'supertest';
import { adminAgent, createTestApp, TestApp } from '../support/app';
import { createMemory, fullAccessApi } from './memories.helpers';

/**
 * /openapi.json, /docs and /redoc (CONTRACT §6): the document describes every route of the spec
 * with request and response schemas, and the two pages load nothing from another host.
 */

type Op = {
  operationId?: string;
  description?: string;
  security?: Array<Record<string, string[]>>;
  parameters?: unknown[];
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, { content?: Record<string, { schema?: unknown }> }>;
  tags?: string[];
  'x-access'?: unknown;
};

/** Every route of the spec (§4), its access, and whether it takes a JSON body. */
const SPEC_ROUTES: Array<{ method: string; path: string; access: unknown; body?: boolean }> = [
  { method: 'get', path: '/api/health', access: 'public' },
  { method: 'get', path: '/api/guide', access: 'public' },
  { method: 'get', path: '/api/skill-prompt', access: 'public' },
  { method: 'get', path: '/api/skill-pack.zip', access: 'public' },
  { method: 'post', path: '/api/login', access: 'public', body: true },
  { method: 'post', path: '/api/logout', access: 'public' },
  { method: 'get', path: '/api/me', access: 'public' },
  { method: 'get', path: '/api/status', access: 'authenticated' },
  { method: 'get', path: '/api/schema', access: 'admin' },
  { method: 'get', path: '/api/config', access: 'admin' },
  { method: 'post', path: '/api/config', access: 'admin', body: true },
  { method: 'get', path: '/api/config/raw', access: 'admin' },
  { method: 'get', path: '/api/config/path', access: 'admin' },
  { method: 'post', path: '/api/test', access: 'admin', body: true },
  { method: 'post', path: '/api/derive-endpoint', access: 'admin', body: true },
  { method: 'get', path: '/api/tokens', access: { scopes: ['tokens:manage'] } },
  { method: 'post', path: '/api/tokens', access: { scopes: ['tokens:manage'] }, body: true },
  { method: 'patch', path: '/api/tokens/{token_id}', access: { scopes: ['tokens:manage'] }, body: true },
  { method: 'delete', path: '/api/tokens/{token_id}', access: { scopes: ['tokens:manage'] } },
  { method: 'post', path: '/api/tokens/{token_id}/revoke', access: { scopes: ['tokens:manage'] } },
  { method: 'get', path: '/api/memories', access: { scopes: ['memory:read'] } },
  { method: 'post', path: '/api/memories', access: { scopes: ['memory:write'] }, body: true },
  { method: 'get', path: '/api/memories/{memory_id}', access: { scopes: ['memory:read'] } },
  { method: 'patch', path: '/api/memories/{memory_id}', access: { scopes: ['memory:write'] }, body: true },
  { method: 'delete', path: '/api/memories/{memory_id}', access: { scopes: ['memory:delete'] } },
  { method: 'post', path: '/api/memories/bulk-delete', access: { scopes: ['memory:delete'] }, body: true },
  { method: 'get', path: '/api/memories/{memory_id}/download', access: { scopes: ['memory:read'] } },
  { method: 'get', path: '/api/stats', access: { scopes: ['memory:read'] } },
];

/**
 * Absolute URLs that appear in the vendored bundles but are never requested by the page:
 * XML/MathML namespaces, JSON Schema and OpenAPI dialect identifiers ($id values), links in
 * error messages and licence headers, example values, and Swagger UI's linkifier prefixes.
 * Anything else found in a served asset fails the test, so a new fetchable URL is noticed.
 */
const NOT_FETCHED = [
  /^https?:\/\/www\.w3\.org\//,
  /^https?:\/\/json-schema\.org\//,
  /^https:\/\/spec\.openapis\.org\//,
  /^https:\/\/(datatracker\.ietf\.org|www\.rfc-editor\.org)\//,
  /^https:\/\/(reactjs\.org|redux\.js\.org|marked\.js\.org|github\.com|git\.io|stackoverflow\.com|fb\.me|spdx\.org)\b/,
  /^http:\/\/fb\.me\//,
  /^https:\/\/raw\.githubusercontent\.com\/ajv-validator\//, // ajv's $data meta-schema id
  /^https?:\/\/example\.com\b/,
  /^https:\/\/(www\.)?(twitter|instagram|facebook|tiktok|soundcloud)\.com\//, // linkify prefixes
  /^https:\/\/(swagger\.io|vladimirgorej\.com)$/,
  /^https:\/\/redocly\.com\//, // the "API docs by Redocly" link (an <a href>, not loaded)
  /^https:\/\/api\.\$?$/, // isRedoclyRegistryURL prefix check (a template string)
  /^https:\/\/실례\.com/,
  /^https?:\/\/$/, // string prefixes in URL-building code
  /^https:\/\/base/, // URL-parsing helper base
];

/** URLs that a page would load by itself if left in a bundle. */
const KNOWN_FETCHED = ['cdn.redoc.ly', 'validator.swagger.io', 'fonts.googleapis.com', 'fonts.gstatic.com', 'unpkg.com', 'cdn.jsdelivr.net', 'cdnjs.cloudflare.com'];

function absoluteUrls(text: string): string[] {
  return [...new Set(text.match(/https?:\/\/[^\s"'`)<>\\,;{}]*/g) ?? [])];
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let doc: {
    openapi: string;
    info: { version: string; title: string };
    paths: Record<string, Record<string, Op>>;
    components: { securitySchemes: Record<string, { type: string; scheme?: string }>; schemas: Record<string, unknown> };
    tags?: Array<{ name: string }>;
  };

  beforeAll(async () => {
    t = await createTestApp();
    const res = await request(t.http).get('/openapi.json').expect(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    doc = res.body;
  });
  afterAll(async () => t.close());

  it('each tag of a create or update declares the enforced limit (64 characters), so schema-valid tags are accepted', () => {
    for (const name of ['CreateMemoryDto', 'UpdateMemoryDto']) {
      const tags = (doc.components.schemas[name] as { properties: Record<string, { type?: string; items?: { type?: string; maxLength?: number } }> }).properties.tags;
      expect({ name, tags }).toMatchObject({ name, tags: { type: 'array', items: { type: 'string', maxLength: 64 } } });
    }
  });

  it('declares version 1.0.0, a bearer scheme, a session scheme and tags', () => {
    expect(doc.info.version).toBe('1.0.0');
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.session).toMatchObject({ type: 'apiKey' });
    expect(doc.tags?.map((x) => x.name)).toEqual(expect.arrayContaining(['memories', 'tokens', 'auth', 'admin', 'meta']));
  });

  it.each(SPEC_ROUTES)('$method $path is described with its access, tags and schemas', ({ method, path, access, body }) => {
    const op = doc.paths[path]?.[method];
    expect(op).toBeDefined();
    expect(op['x-access']).toEqual(access);
    expect(op.description).toMatch(/^\*\*Access:\*\* /);
    if (typeof access === 'object') for (const s of (access as { scopes: string[] }).scopes) expect(op.description).toContain(s);
    expect(op.tags?.length).toBeGreaterThan(0);
    if (access === 'public') expect(op.security ?? []).toEqual([]);
    else expect(op.security?.length).toBeGreaterThan(0);
    if (body) expect(op.requestBody?.content?.['application/json']?.schema).toBeDefined();
    const ok = op.responses?.['200'] ?? op.responses?.['201'];
    expect(ok).toBeDefined();
    const contents = Object.values(ok!.content ?? {});
    expect(contents.length).toBeGreaterThan(0);
    for (const c of contents) expect(c.schema).toBeDefined();
  });

  it('operationIds read as client method names: unique camelCase verbs (listMemories, createMemory, ...)', () => {
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
    for (const id of ids) expect(id).toMatch(/^[a-z][a-zA-Z]*$/);
    expect(new Set(ids).size).toBe(ids.length);
    const idOf = (m: string, p: string) => doc.paths[p]?.[m]?.operationId;
    expect([
      idOf('get', '/api/memories'),
      idOf('post', '/api/memories'),
      idOf('get', '/api/memories/{memory_id}'),
      idOf('patch', '/api/memories/{memory_id}'),
      idOf('delete', '/api/memories/{memory_id}'),
      idOf('post', '/api/memories/bulk-delete'),
      idOf('get', '/api/memories/{memory_id}/versions'),
      idOf('post', '/api/tokens'),
      idOf('get', '/api/ready'),
      idOf('get', '/api/guide'),
    ]).toEqual(['listMemories', 'createMemory', 'getMemory', 'updateMemory', 'deleteMemory', 'bulkDeleteMemories', 'listMemoryVersions', 'createToken', 'getReadiness', 'getGuide']);
  });

  it('every documented operation states its access (none is left undeclared)', () => {
    for (const [p, item] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(item)) {
        expect([`${m} ${p}`, op['x-access']]).not.toEqual([`${m} ${p}`, undefined]);
        expect([`${m} ${p}`, op['x-access']]).not.toEqual([`${m} ${p}`, 'denied']);
      }
    }
  });

  describe("error responses (generated from each route's access rule, method and parameters)", () => {
    const ops = () => Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([m, op]) => ({ path: p, method: m, op: op })));
    const schemaOf = (op: Op, status: string) => (op.responses?.[status]?.content?.['application/json']?.schema as { $ref?: string } | undefined)?.$ref;

    it('every operation declares what the pipeline can answer, with the envelope schemas', () => {
      for (const { path, method, op } of ops()) {
        const statuses = Object.keys(op.responses ?? {});
        const where = `${method} ${path}`;
        const isPublic = op['x-access'] === 'public';
        const unsafe = ['post', 'put', 'patch', 'delete'].includes(method);
        const expected = [
          ...(isPublic ? [] : ['401', '403', '429']),
          ...(unsafe ? ['400', '403', '413', '415', '422'] : []),
          ...(path.includes('{') ? ['400', '404'] : []),
          ...((op.parameters ?? []).some((x) => (x as { in?: string }).in === 'query') ? ['422'] : []),
          ...(path === '/api/health' ? [] : ['503']),
          '431', // request line and headers over 16 KB: every route
        ];
        for (const status of expected) {
          expect([where, status, statuses.includes(status)]).toEqual([where, status, true]);
          expect([where, status, schemaOf(op, status)]).toEqual([where, status, status === '422' ? '#/components/schemas/ValidationErrorResponse' : '#/components/schemas/ErrorResponse']);
        }
        if (path === '/api/health') expect(statuses).toEqual(['200', '431']);
      }
    });

    it('429 documents Retry-After and the RateLimit-* headers', () => {
      const headers = (doc.paths['/api/memories'].get.responses as Record<string, { headers?: Record<string, { required?: boolean }> }>)['429'].headers!;
      expect(Object.keys(headers).sort()).toEqual(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']);
      expect(headers['Retry-After'].required).toBe(true);
      expect(doc.paths['/api/login'].post.responses?.['429']).toBeDefined();
    });

    it('the error schemas are the CONTRACT §1 envelopes', () => {
      const schemas = doc.components.schemas as Record<string, { required?: string[]; properties?: Record<string, unknown> }>;
      expect(schemas.ErrorResponse.required).toEqual(['ok', 'error']);
      expect(schemas.ValidationErrorResponse.required).toEqual(['ok', 'error', 'detail']);
      // The fields some errors add (a 412's current version, a quota's 403) are named, so a typed client can read them.
      expect(Object.keys(schemas.ErrorResponse.properties ?? {})).toEqual(expect.arrayContaining(['current_version', 'code', 'quota', 'report']));
    });
  });

  describe('schemas say what is enforced', () => {
    const queryParam = (path: string, name: string) =>
      (doc.paths[path].get.parameters as Array<{ name: string; in: string; schema: Record<string, unknown> }>).find((x) => x.in === 'query' && x.name === name)!.schema;
    const component = (name: string) => (doc.components.schemas as Record<string, { properties: Record<string, Record<string, unknown>>; required?: string[] }>)[name];

    it('limit, page, skip and days are integers with their bounds', () => {
      expect(queryParam('/api/memories', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 200 });
      expect(queryParam('/api/memories', 'page')).toMatchObject({ type: 'integer', minimum: 1 });
      expect(queryParam('/api/memories', 'skip')).toMatchObject({ type: 'integer', minimum: 0 });
      expect(queryParam('/api/memories', 'days')).toMatchObject({ type: 'integer', minimum: 1, maximum: 36500 });
    });

    it('content has a minimum length and must hold a non-space character; create accepts null type and scope', () => {
      const create = component('CreateMemoryDto');
      expect(create.properties.content).toMatchObject({ minLength: 1, pattern: expect.any(String) });
      expect(new RegExp(create.properties.content.pattern as string).test(' \t\n\u00a0')).toBe(false);
      expect(new RegExp(create.properties.content.pattern as string).test('  x ')).toBe(true);
      expect(create.properties.type).toMatchObject({ nullable: true, enum: expect.arrayContaining(['note', null]) });
      expect(create.properties.scope).toMatchObject({ nullable: true, enum: expect.arrayContaining(['global', null]) });
      expect(create.required).toEqual(['content']);
      expect(component('BulkDeleteDto').required ?? []).toEqual([]);
      expect(component('TestBackendsDto').properties.target).toMatchObject({ nullable: true });
    });

    it('history and audit paging are integers with their bounds; since is a date-time wherever it is taken', () => {
      expect(queryParam('/api/memories/{memory_id}/versions', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 100 });
      expect(queryParam('/api/memories/{memory_id}/versions', 'page')).toMatchObject({ type: 'integer', minimum: 1, maximum: 100000 });
      expect(queryParam('/api/audit', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 200 });
      expect(queryParam('/api/audit', 'cursor')).toMatchObject({ type: 'string', pattern: expect.any(String) });
      for (const path of ['/api/memories', '/api/export', '/api/audit']) expect(queryParam(path, 'since')).toMatchObject({ type: 'string', format: 'date-time' });
    });

    it('the Idempotency-Key header schema is what the service accepts', async () => {
      for (const path of ['/api/memories', '/api/memories/bulk-delete']) {
        const header = (doc.paths[path].post.parameters as Array<{ name: string; in: string; schema: Record<string, unknown> }>).find((x) => x.in === 'header' && x.name === 'Idempotency-Key')!;
        expect(header.schema).toMatchObject({ type: 'string', minLength: 1, maxLength: 255, pattern: expect.any(String) });
      }
      const header = (doc.paths['/api/memories'].post.parameters as Array<{ name: string; schema: { pattern: string } }>).find((x) => x.name === 'Idempotency-Key')!;
      const pattern = new RegExp(header.schema.pattern);
      const admin = await adminAgent(t);
      for (const [key, accepted] of [
        ['retry-7f3a~!', true],
        ['two words', false],
        ['naïve', false],
      ] as const) {
        expect([key, pattern.test(key)]).toEqual([key, accepted]);
        const res = await admin
          .post('/api/memories')
          .set('Idempotency-Key', key)
          .send({ content: `Idempotency key ${key}` });
        expect([key, res.status]).toEqual([key, accepted ? 201 : 422]);
      }
    });

    it('states the rules a schema-valid request can still break, and the service keeps them (issue 46 item 9)', async () => {
      type Described = { description?: string; name?: string; in?: string; required?: boolean; content?: Record<string, { schema?: Record<string, unknown> }> };
      const op = (path: string, method: string) => doc.paths[path][method] as unknown as { parameters: Described[]; requestBody: Described; responses: Record<string, Described> };
      // If-Match carries a strong tag: a weak one never matches (RFC 9110), a stale one neither: 412.
      for (const [path, method] of [
        ['/api/memories/{memory_id}', 'patch'],
        ['/api/memories/{memory_id}', 'delete'],
        ['/api/memories/{memory_id}/versions/{version}/restore', 'post'],
      ]) {
        expect(op(path, method).parameters.find((p) => p.name === 'If-Match')!.description).toMatch(/^The strong ETag of the version/);
        expect(op(path, method).responses['412'].description).toMatch(/a weak tag \(W\/"3"\) never matches \(RFC 9110/);
      }
      expect(op('/api/memories', 'get').responses['422'].description).toMatch(/`after` is taken only in list mode \(without `q`\)/);
      for (const path of ['/api/memories', '/api/memories/bulk-delete']) expect(op(path, 'post').responses['422'].description).toMatch(/Idempotency-Key already used .* with another body/);
      const upload = op('/api/import', 'post');
      expect(upload.requestBody.required).toBe(true);
      for (const media of Object.values(upload.requestBody.content!)) expect(media.schema).toMatchObject({ type: 'string', format: 'binary', minLength: 1 });
      expect(upload.responses['413'].description).toMatch(/compression-ratio/);
      expect(upload.responses['429'].description).toMatch(/MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN/);

      const api = await fullAccessApi(t);
      const m = await createMemory(api, { content: 'weak tags never match' });
      const weak = await api.delete(`/api/memories/${m.id}`).set('If-Match', 'W/"1"').expect(412);
      expect(weak.body).toEqual({ ok: false, error: `Memory ${m.id} is at version 1, not a weak ETag (If-Match compares strongly)`, current_version: 1 });
      await api.post(`/api/memories/${m.id}/versions/1/restore`).set('If-Match', 'W/"1"').expect(412);
      await api.delete(`/api/memories/${m.id}`).set('If-Match', '"1"').expect(200);
      await api.get('/api/memories?q=weak&after=x').expect(422);
      await api.post('/api/import').set('Content-Type', 'text/plain').send('').expect(422);
    });

    it('rate_limit_per_minute is an integer >= 0 on create and update, and shown on the token record', () => {
      for (const name of ['CreateTokenDto', 'UpdateTokenDto']) expect(component(name).properties.rate_limit_per_minute).toMatchObject({ type: 'integer', minimum: 0 });
      expect(component('TokenDto').properties.rate_limit_per_minute).toMatchObject({ type: 'integer' });
      expect(component('TokenDto').properties.recent_requests_per_minute).toMatchObject({ type: 'integer' });
    });

    it.each([
      ['/api/tokens', 'CreateTokenDto', 201],
      ['/api/memories', 'CreateMemoryDto', 201],
      ['/api/test', 'TestBackendsDto', 200],
    ])('the example body of POST %s (every property example) is accepted', async (path, dto, status) => {
      const props = component(dto).properties;
      const body = Object.fromEntries(
        Object.entries(props)
          .filter(([, v]) => v.example !== undefined)
          .map(([k, v]) => [k, v.example]),
      );
      expect(Object.keys(body).length).toBeGreaterThan(0);
      const admin = await adminAgent(t);
      const res = await admin.post(path).send(body);
      expect([res.status, res.body.error]).toEqual([status, undefined]);
    });
  });

  it('response schemas of our DTOs carry examples', () => {
    const schemas = doc.components.schemas as Record<string, { properties?: Record<string, { example?: unknown }> }>;
    for (const name of ['ConfigResponseDto', 'SaveConfigDto', 'StatusResponseDto', 'SkillPromptResponseDto', 'DeriveEndpointResponseDto']) {
      const props = Object.values(schemas[name]?.properties ?? {});
      expect([name, props.length > 0]).toEqual([name, true]);
      expect([name, props.some((p) => p.example !== undefined)]).toEqual([name, true]);
    }
  });
});

describe('/docs and /redoc load nothing from another host', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  async function assetsOf(page: string): Promise<string[]> {
    const res = await request(t.http).get(page).expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    const refs = [...res.text.matchAll(/\b(?:src|href)\s*=\s*["']([^"']+)["']/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThan(0);
    for (const r of refs) expect(r).toMatch(/^\/(?!\/)/); // same origin, absolute path; no scheme, no protocol-relative
    expect(absoluteUrls(res.text)).toEqual([]);
    return refs;
  }

  it.each(['/docs', '/redoc'])('%s references only same-origin assets, each served, none fetching another host', async (page) => {
    const refs = await assetsOf(page);
    for (const ref of refs) {
      const res = await request(t.http)
        .get(ref)
        .buffer(true)
        .parse((r, cb) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => cb(null, Buffer.concat(chunks)));
        });
      expect([ref, res.status]).toEqual([ref, 200]);
      const type = String(res.headers['content-type']);
      if (!/javascript|css|svg/.test(type)) continue;
      const text = (res.body as Buffer).toString('utf8');
      for (const host of KNOWN_FETCHED) expect([ref, text.includes(host)]).toEqual([ref, false]);
      const foreign = absoluteUrls(text).filter((u) => !NOT_FETCHED.some((re) => re.test(u)));
      expect([ref, foreign]).toEqual([ref, []]);
    }
  });

  it('the init scripts point at our /openapi.json and turn the validator badge off', async () => {
    const docs = await request(t.http).get('/docs/swagger-init.js').expect(200);
    expect(docs.text).toContain("url: '/openapi.json'");
    expect(docs.text).toContain('validatorUrl: null');
    const redoc = await request(t.http).get('/redoc/redoc-init.js').expect(200);
    expect(redoc.text).toContain("Redoc.init('/openapi.json'");
  });

  it('the ReDoc logo is served locally', async () => {
    const res = await request(t.http).get('/redoc/redoc.standalone.js').expect(200);
    expect(res.text).toContain('"/redoc/logo-mini.svg"');
    await request(t.http)
      .get('/redoc/logo-mini.svg')
      .expect(200)
      .expect('Content-Type', /image\/svg\+xml/);
  });

  it('the pages are served under a CSP that allows only our origin', async () => {
    for (const page of ['/docs', '/redoc']) {
      const res = await request(t.http).get(page).expect(200);
      const csp = String(res.headers['content-security-policy']);
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/https?:/);
    }
  });

  it('unknown asset under /docs → 404 envelope', async () => {
    const res = await request(t.http).get('/docs/nope.js').expect(404);
    expect(res.body).toEqual({ ok: false, error: expect.any(String) });
  });
});

// ---- In a real browser: every request the pages make stays on our origin, under our CSP. ----

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = fs.existsSync(CHROMIUM);
if (!haveChromium) {
  const msg = `OpenAPI pages in a browser: SKIPPED — Chromium not found at ${CHROMIUM}`;
  process.stdout.write(`\n${msg}\n`);
  if (process.env.MEMSTORE_REQUIRE_ALL_BACKENDS === '1') throw new Error(`MEMSTORE_REQUIRE_ALL_BACKENDS=1 but ${msg}`);
}
const describeBrowser = haveChromium ? describe : describe.skip;

describeBrowser(`/docs and /redoc in Chromium (${CHROMIUM})`, () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    t = await createTestApp();
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  async function visit(pagePath: string, ready: string): Promise<{ requests: string[]; problems: string[]; text: string }> {
    const ctx = await browser.newContext();
    const page = await ctx.newPage();
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    try {
      await page.goto(`${base}${pagePath}`, { waitUntil: 'load' });
      await page.waitForSelector(ready, { timeout: 30_000 });
      await page.waitForLoadState('networkidle');
      const text = await page.innerText('body');
      return { requests, problems, text };
    } finally {
      await ctx.close();
    }
  }

  it('/docs renders Swagger UI from our origin only', async () => {
    const { requests, problems, text } = await visit('/docs', '.swagger-ui .info .title');
    expect(text).toContain('Memory Store API');
    expect(text).toContain('/api/health');
    expect(requests.filter((u) => !u.startsWith(`${base}/`) && !u.startsWith('data:') && !u.startsWith('blob:'))).toEqual([]);
    expect(requests).toContain(`${base}/openapi.json`);
    expect(problems).toEqual([]);
  }, 60_000);

  it('/redoc renders ReDoc from our origin only', async () => {
    const { requests, problems, text } = await visit('/redoc', '.api-content h1');
    expect(text).toContain('Memory Store API');
    expect(requests.filter((u) => !u.startsWith(`${base}/`) && !u.startsWith('data:') && !u.startsWith('blob:'))).toEqual([]);
    expect(requests).toContain(`${base}/openapi.json`);
    expect(problems).toEqual([]);
  }, 60_000);
});
