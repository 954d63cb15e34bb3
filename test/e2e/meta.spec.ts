import JSZip from 'jszip';
import request from 'supertest';
import { parse as parseYaml } from 'yaml';
import { createTestApp, TestApp } from '../support/app';

/** Every route of the service (spec §4 plus ours), as the guide must name them. */
const ALL_ROUTES = [
  'GET /api/health',
  'GET /api/guide',
  'GET /api/skill-prompt',
  'GET /api/skill-pack.zip',
  'GET /openapi.json',
  'GET /docs',
  'GET /redoc',
  'GET /',
  'POST /api/login',
  'POST /api/logout',
  'GET /api/me',
  'GET /api/status',
  'GET /api/schema',
  'GET /api/config',
  'POST /api/config',
  'GET /api/config/raw',
  'GET /api/config/path',
  'POST /api/test',
  'POST /api/derive-endpoint',
  'GET /api/tokens',
  'POST /api/tokens',
  'PATCH /api/tokens/{token_id}',
  'DELETE /api/tokens/{token_id}',
  'POST /api/tokens/{token_id}/revoke',
  'GET /api/memories',
  'POST /api/memories',
  'GET /api/memories/{memory_id}',
  'PATCH /api/memories/{memory_id}',
  'DELETE /api/memories/{memory_id}',
  'POST /api/memories/bulk-delete',
  'GET /api/memories/{memory_id}/download',
  'GET /api/stats',
];

const MEMORY_OPERATIONS: Array<[name: string, pattern: RegExp]> = [
  ['list/search', /curl -s -G "http:\/\/memstore\.test:8080\/api\/memories" -H "Authorization: Bearer \$MY_MEM_TOKEN"/],
  ['fetch', /curl -s "http:\/\/memstore\.test:8080\/api\/memories\/<memory_id>" -H "Authorization: Bearer \$MY_MEM_TOKEN"/],
  ['create', /curl -s -X POST "http:\/\/memstore\.test:8080\/api\/memories" -H "Authorization: Bearer \$MY_MEM_TOKEN"/],
  ['update', /curl -s -X PATCH "http:\/\/memstore\.test:8080\/api\/memories\/<memory_id>"/],
  ['delete', /curl -s -X DELETE "http:\/\/memstore\.test:8080\/api\/memories\/<memory_id>"/],
  ['bulk delete', /curl -s -X POST "http:\/\/memstore\.test:8080\/api\/memories\/bulk-delete"/],
  ['download', /curl -s "http:\/\/memstore\.test:8080\/api\/memories\/<memory_id>\/download/],
  ['stats', /curl -s "http:\/\/memstore\.test:8080\/api\/stats"/],
];

describe('meta endpoints', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => t.close());

  it('GET /api/health → ok without credentials and without touching the backends', async () => {
    const res = await request(t.http).get('/api/health').expect(200);
    expect(res.body).toEqual({ ok: true, status: 'ok' });
    expect(res.headers['x-request-id']).toEqual(expect.any(String));
  });

  it('GET /api/health still answers when both backends are closed', async () => {
    const ta = await createTestApp();
    try {
      const { BackendsService } = await import('../../src/backends/backends.service');
      const b = ta.app.get(BackendsService);
      await b.docdb.close();
      await b.objstore.close();
      await request(ta.http).get('/api/health').expect(200, { ok: true, status: 'ok' });
    } finally {
      await ta.close();
    }
  });

  describe('GET /api/guide', () => {
    it('is a versioned markdown guide with the real base URL', async () => {
      const res = await request(t.http).get('/api/guide').set('Host', 'memstore.test:8080').expect(200);
      expect(res.body).toMatchObject({ ok: true, version: 1, guide: expect.stringMatching(/^# Memory Store API guide/) });
      expect(res.body.guide).toContain('http://memstore.test:8080/api/memories');
      expect(res.body.guide).not.toContain('{{');
    });

    it.each(ALL_ROUTES)('mentions %s', async (route) => {
      const res = await request(t.http).get('/api/guide').expect(200);
      const guide: string = res.body.guide;
      const [method, p] = route.split(' ');
      expect(guide).toContain(`\`${method} ${p}`);
    });

    it('covers auth, scopes, errors, pagination, search syntax and limits', async () => {
      const { guide } = (await request(t.http).get('/api/guide').expect(200)).body as { guide: string };
      for (const needle of ['Authorization: Bearer mem_tok_', 'memory:read', 'memory:write', 'memory:delete', '401', '403', '404', '413', '422', '429', '503', 'next_cursor', '`after`', '"a phrase"', '`-word`', 'json_invalid', '1 to 200', '1000 ids', 'curl ']) {
        expect(guide).toContain(needle);
      }
    });
  });

  describe('GET /api/skill-prompt', () => {
    it('format=json (default): the prompt, base URL, token_env, format markdown', async () => {
      const res = await request(t.http).get('/api/skill-prompt').set('Host', 'memstore.test:8080').expect(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(res.body).toEqual({ ok: true, prompt: expect.any(String), base_url: 'http://memstore.test:8080', token_env: 'MEMORY_API_TOKEN', format: 'markdown' });
      expect(res.body.prompt).toContain('$MEMORY_API_TOKEN');
      expect(res.body.prompt).not.toContain('{{');
    });

    it.each(['text', 'markdown'])('format=%s: the prompt itself as text/markdown', async (format) => {
      const res = await request(t.http).get(`/api/skill-prompt?format=${format}`).set('Host', 'memstore.test:8080').expect(200);
      expect(res.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(res.text).toMatch(/^# Memory Store/);
      expect(res.text).toContain('http://memstore.test:8080');
    });

    it('token_env names the variable; every memory operation has a working curl example', async () => {
      const res = await request(t.http).get('/api/skill-prompt?format=markdown&token_env=MY_MEM_TOKEN').set('Host', 'memstore.test:8080').expect(200);
      expect(res.text).not.toContain('MEMORY_API_TOKEN');
      for (const [, pattern] of MEMORY_OPERATIONS) expect(res.text).toMatch(pattern);
    });

    it('token_placeholder is an alias of token_env; token_env wins when both are given', async () => {
      const alias = await request(t.http).get('/api/skill-prompt?token_placeholder=AGENT_TOKEN').expect(200);
      expect(alias.body.token_env).toBe('AGENT_TOKEN');
      expect(alias.body.prompt).toContain('Bearer $AGENT_TOKEN');
      const both = await request(t.http).get('/api/skill-prompt?token_placeholder=AGENT_TOKEN&token_env=OTHER').expect(200);
      expect(both.body.token_env).toBe('OTHER');
    });

    it('uses MEMSTORE_PUBLIC_URL over the request host', async () => {
      const ta = await createTestApp({ MEMSTORE_PUBLIC_URL: 'https://memory.example.com/' });
      try {
        const res = await request(ta.http).get('/api/skill-prompt').set('Host', 'evil.test').expect(200);
        expect(res.body.base_url).toBe('https://memory.example.com');
        expect(res.body.prompt).not.toContain('evil.test');
      } finally {
        await ta.close();
      }
    });

    it('ignores X-Forwarded-Host unless MEMSTORE_TRUST_PROXY is set', async () => {
      const res = await request(t.http).get('/api/skill-prompt').set('Host', 'memstore.test:8080').set('X-Forwarded-Host', 'evil.test').set('X-Forwarded-Proto', 'https').expect(200);
      expect(res.body.base_url).toBe('http://memstore.test:8080');
      const ta = await createTestApp({ MEMSTORE_TRUST_PROXY: 'true' });
      try {
        const proxied = await request(ta.http).get('/api/skill-prompt').set('Host', 'internal:8080').set('X-Forwarded-Host', 'memory.example.com').set('X-Forwarded-Proto', 'https').expect(200);
        expect(proxied.body.base_url).toBe('https://memory.example.com');
      } finally {
        await ta.close();
      }
    });

    it.each([
      ['format=yaml', ['query', 'format'], 'enum'],
      ['format=json&format=text', ['query', 'format'], 'string_type'],
      ['token_env=1BAD', ['query', 'token_env'], 'value_error'],
      ['token_env=A%20B', ['query', 'token_env'], 'value_error'],
      ['token_env=X%3Brm%20-rf', ['query', 'token_env'], 'value_error'],
      ['token_placeholder=%24(id)', ['query', 'token_placeholder'], 'value_error'],
    ])('%s → 422', async (qs, loc, type) => {
      const res = await request(t.http).get(`/api/skill-prompt?${qs}`);
      expect(res.status).toBe(422);
      expect(res.body.ok).toBe(false);
      expect(res.body.detail[0]).toMatchObject({ loc, type });
    });
  });

  describe('GET /api/skill-pack.zip', () => {
    it('is a zip with memory-store/SKILL.md (YAML front matter) and memory-store/.env.example', async () => {
      const res = await request(t.http)
        .get('/api/skill-pack.zip')
        .set('Host', 'memstore.test:8080')
        .buffer(true)
        .parse((r, cb) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => cb(null, Buffer.concat(chunks)));
        })
        .expect(200);
      expect(res.headers['content-type']).toBe('application/zip');
      expect(res.headers['content-disposition']).toBe('attachment; filename="memory-store-skill.zip"');
      const zip = await JSZip.loadAsync(res.body as Buffer);
      const files = Object.keys(zip.files).filter((n) => !zip.files[n].dir).sort();
      expect(files).toEqual(['memory-store/.env.example', 'memory-store/SKILL.md']);

      const skill = await zip.file('memory-store/SKILL.md')!.async('string');
      const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(skill);
      expect(m).not.toBeNull();
      const front = parseYaml(m![1]) as Record<string, unknown>;
      expect(front).toEqual({ name: 'memory-store', description: expect.stringContaining('http://memstore.test:8080') });
      expect(m![2]).toContain('curl -s -X POST "http://memstore.test:8080/api/memories"');

      const env = await zip.file('memory-store/.env.example')!.async('string');
      const lines = env.split('\n').filter((l) => l && !l.startsWith('#'));
      expect(lines).toEqual(['MEMORY_API_BASE_URL=http://memstore.test:8080', 'MEMORY_API_TOKEN=']);
    });
  });
});
