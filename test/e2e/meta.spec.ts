import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import JSZip from 'jszip';
import request from 'supertest';
import { parse as parseYaml } from 'yaml';
import { createTestApp, createToken, TestApp } from '../support/app';

const execFileAsync = promisify(execFile);

/** Every route of the service (spec §4 plus ours), as the guide must name them. */
const ALL_ROUTES = [
  'GET /api/health',
  'GET /api/ready',
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
  'POST /api/admin/password',
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
  'POST /mcp',
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
    // The guide names MEMSTORE_PUBLIC_URL; without it, only the address a request really reached (see below).
    t = await createTestApp({ MEMSTORE_PUBLIC_URL: 'http://memstore.test:8080' });
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
      // Readiness says which backends do not answer, and nothing else (no host, path or error).
      // (A closed filesystem store still works: its root is replaced by a file, so writes fail.)
      const root = (b.objstore as unknown as { root: string }).root;
      fs.rmSync(root, { recursive: true, force: true });
      fs.writeFileSync(root, 'not a directory');
      const ready = await request(ta.http).get('/api/ready').expect(503);
      expect(ready.body).toEqual({ ok: false, status: 'not_ready', error: 'Not ready: the document database and the object store do not answer', not_ready: ['docdb', 'objstore'] });
      expect(ready.headers['cache-control']).toBe('no-store');
    } finally {
      await ta.close();
    }
  });

  it('GET /api/ready → ready without credentials when both backends answer', async () => {
    const res = await request(t.http).get('/api/ready').expect(200);
    expect(res.body).toEqual({ ok: true, status: 'ready' });
  });

  describe('GET /api/guide', () => {
    it('is a versioned markdown guide with the real base URL', async () => {
      const res = await request(t.http).get('/api/guide').set('Host', 'memstore.test:8080').expect(200);
      expect(res.body).toMatchObject({ ok: true, version: 1, guide: expect.stringMatching(/^# Memory Store API guide/) });
      expect(res.body.guide).toContain('http://memstore.test:8080/api/memories');
      expect(res.body.guide).not.toContain('{{');
    });

    it.each([
      ['?format=markdown', {}],
      ['', { Accept: 'text/markdown' }],
      ['', { Accept: 'text/markdown, application/json;q=0.5' }],
    ])('%s %j: the markdown itself, not JSON-wrapped', async (query, headers) => {
      const res = await request(t.http).get(`/api/guide${query}`).set('Host', 'memstore.test:8080').set(headers).expect(200);
      expect(res.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(res.headers.vary).toMatch(/Accept/);
      expect(res.text).toMatch(/^# Memory Store API guide/);
      expect(res.text).toContain('http://memstore.test:8080/api/memories');
    });

    it('JSON for a client that prefers JSON or asks for format=json; 422 for an unknown format', async () => {
      for (const [query, accept] of [
        ['', 'application/json, text/markdown;q=0.5'],
        ['?format=json', 'text/markdown'],
        ['', '*/*'],
      ]) {
        const res = await request(t.http).get(`/api/guide${query}`).set('Accept', accept).expect(200);
        expect([query, accept, res.headers['content-type']]).toEqual([query, accept, expect.stringMatching(/^application\/json/)]);
        expect(res.body.guide).toMatch(/^# Memory Store API guide/);
      }
      const bad = await request(t.http).get('/api/guide?format=html').expect(422);
      expect(bad.body).toMatchObject({ ok: false, detail: [expect.objectContaining({ loc: ['query', 'format'] })] });
    });

    it.each(ALL_ROUTES)('mentions %s', async (route) => {
      const res = await request(t.http).get('/api/guide').expect(200);
      const guide: string = res.body.guide;
      const [method, p] = route.split(' ');
      expect(guide).toContain(`\`${method} ${p}`);
    });

    it('covers auth, scopes, errors, pagination, search syntax and limits', async () => {
      const { guide } = (await request(t.http).get('/api/guide').expect(200)).body as { guide: string };
      for (const needle of [
        'Authorization: Bearer mem_tok_',
        'memory:read',
        'memory:write',
        'memory:delete',
        '401',
        '403',
        '404',
        '413',
        '422',
        '429',
        '503',
        'next_cursor',
        '`after`',
        '"a phrase"',
        '`-word`',
        'json_invalid',
        '1 to 200',
        '1000 ids',
        'curl ',
      ]) {
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

    it('points MCP clients at the /mcp endpoint with the same token', async () => {
      const res = await request(t.http).get('/api/skill-prompt?format=markdown&token_env=MY_MEM_TOKEN').set('Host', 'memstore.test:8080').expect(200);
      expect(res.text).toContain('`http://memstore.test:8080/mcp`');
      expect(res.text).toContain('Authorization: Bearer $MY_MEM_TOKEN');
      expect(res.text).toContain('recall_context');
    });

    it('token_placeholder is an alias of token_env; token_env wins when both are given', async () => {
      const alias = await request(t.http).get('/api/skill-prompt?token_placeholder=AGENT_TOKEN').expect(200);
      expect(alias.body.token_env).toBe('AGENT_TOKEN');
      expect(alias.body.prompt).toContain('Bearer $AGENT_TOKEN');
      const both = await request(t.http).get('/api/skill-prompt?token_placeholder=AGENT_TOKEN&token_env=OTHER').expect(200);
      expect(both.body.token_env).toBe('OTHER');
    });

    it('uses MEMSTORE_PUBLIC_URL over the request host', async () => {
      const res = await request(t.http).get('/api/skill-prompt').set('Host', 'evil.test').expect(200);
      expect(res.body.base_url).toBe('http://memstore.test:8080');
      expect(res.body.prompt).not.toContain('evil.test');
    });

    it('without MEMSTORE_PUBLIC_URL or a trusted proxy, never reflects the Host header (the address reached instead)', async () => {
      const ta = await createTestApp();
      try {
        for (const path of ['/api/skill-prompt', '/api/guide']) {
          const res = await request(ta.http).get(path).set('Host', 'evil.test:8080').expect(200);
          expect(JSON.stringify(res.body)).not.toContain('evil.test');
          expect(JSON.stringify(res.body)).toMatch(/http:\/\/127\.0\.0\.1:\d+\/api\/memories/);
        }
        const local = await request(ta.http).get('/api/skill-prompt').expect(200);
        expect(local.body.base_url).toMatch(/^http:\/\/(127\.0\.0\.1|localhost):\d+$/);
      } finally {
        await ta.close();
      }
    });

    it('ignores X-Forwarded-Host unless MEMSTORE_TRUST_PROXY is set', async () => {
      const res = await request(t.http).get('/api/skill-prompt').set('Host', 'memstore.test:8080').set('X-Forwarded-Host', 'evil.test').set('X-Forwarded-Proto', 'https').expect(200);
      expect(res.body.base_url).toBe('http://memstore.test:8080');
      expect(res.body.prompt).not.toContain('evil.test');
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
      ['format=json&format=text', ['query', 'format'], 'value_error'], // "Parameter 'format' was given more than once",
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
      const files = Object.keys(zip.files)
        .filter((n) => !zip.files[n].dir)
        .sort();
      expect(files).toEqual(['memory-store/.env.example', 'memory-store/SKILL.md']);

      const skill = await zip.file('memory-store/SKILL.md')!.async('string');
      const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(skill);
      expect(m).not.toBeNull();
      const front = parseYaml(m![1]) as Record<string, unknown>;
      expect(front).toEqual({ name: 'memory-store', description: expect.stringContaining('http://memstore.test:8080') });
      expect(m![2]).toContain('curl -s -X POST "http://memstore.test:8080/api/memories"');
      expect(m![2]).toContain('http://memstore.test:8080/mcp');

      const env = await zip.file('memory-store/.env.example')!.async('string');
      const lines = env.split('\n').filter((l) => l && !l.startsWith('#'));
      expect(lines).toEqual(['MEMORY_API_BASE_URL=http://memstore.test:8080', 'MEMORY_MCP_URL=http://memstore.test:8080/mcp', 'MEMORY_API_TOKEN=']);
    });
  });
});

describe('the skill prompt curl examples work against the running service', () => {
  let t: TestApp;
  let base: string;
  beforeAll(async () => {
    t = await createTestApp();
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
  });
  afterAll(async () => t.close());

  /** The shell commands of every ```bash block (continuation lines joined), by section heading. */
  function examples(prompt: string): Array<{ section: string; command: string }> {
    const out: Array<{ section: string; command: string }> = [];
    let section = '';
    const re = /^### (.+)$|^```bash\n([\s\S]*?)^```$/gm;
    for (const m of prompt.matchAll(re)) {
      if (m[1]) section = m[1];
      else
        for (const cmd of m[2]
          .replace(/\\\n\s*/g, ' ')
          .split('\n')
          .filter((l) => l.trim()))
          out.push({ section, command: cmd });
    }
    return out;
  }

  it('every operation, run as written with the token in $MEMORY_API_TOKEN, succeeds', async () => {
    const { plaintext } = await createToken(t, { preset: 'full' });
    const prompt = (await request(t.http).get('/api/skill-prompt?format=markdown').set('Host', new URL(base).host).expect(200)).text;
    const auth = { Authorization: `Bearer ${plaintext}` };
    const make = async (content: string) => (await request(t.http).post('/api/memories').set(auth).send({ content }).expect(201)).body.memory.id as string;
    const one = await make('The deployment process uses blue-green releases.');
    const two = await make('second');
    const three = await make('third');

    const cmds = examples(prompt);
    const sections = new Set(cmds.map((c) => c.section));
    for (const s of [
      'Search or list memories (memory:read)',
      'Fetch one memory (memory:read)',
      'Create a memory (memory:write)',
      'Update a memory (memory:write)',
      'Delete a memory (memory:delete)',
      'Delete several memories (memory:delete)',
      'Download a memory as markdown (memory:read)',
      'Statistics (memory:read)',
    ]) {
      expect(sections).toContain(s);
    }
    // Deletions last, so the other examples have their memory.
    const ordered = [...cmds.filter((c) => !c.section.startsWith('Delete')), ...cmds.filter((c) => c.section.startsWith('Delete'))];
    for (const { section, command } of ordered) {
      let cmd = command;
      if (section.startsWith('Delete several')) cmd = cmd.replace('<memory_id>', two).replace('<memory_id>', three);
      else cmd = cmd.split('<memory_id>').join(one);
      const { stdout } = await execFileAsync('bash', ['-c', `${cmd} -w '\\n%{http_code}'`], { env: { PATH: process.env.PATH, MEMORY_API_TOKEN: plaintext } });
      const lines = stdout.trimEnd().split('\n');
      const status = Number(lines.pop());
      const body = lines.join('\n');
      expect([section, status >= 200 && status < 300]).toEqual([section, true]);
      if (body.startsWith('{')) expect([section, JSON.parse(body).ok]).toEqual([section, true]);
      else expect([section, body]).toEqual([section, expect.stringMatching(/^---\nid: /)]); // the markdown download
    }
    await request(t.http).get(`/api/memories/${one}`).set(auth).expect(404);
    await request(t.http).get(`/api/memories/${two}`).set(auth).expect(404);
  });
});
