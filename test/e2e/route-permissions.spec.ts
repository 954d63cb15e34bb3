import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { ACCESS_KEY, AccessRule } from '../../src/common/auth/decorators';
import { adminAgent, createTestApp, TestApp } from '../support/app';

/**
 * Every route of the service and what it requires. A change here is a permission change:
 * review it like one. Paths use `{}` for a path parameter and `{*}` for a wildcard.
 * Rules: public | admin | authenticated (admin or any valid token) | token (any valid token, not the admin session) | scopes:<scope>[,<scope>].
 */
const EXPECTED: ReadonlyArray<readonly [method: string, path: string, rule: string]> = [
  // meta (public)
  ['GET', '/api/health', 'public'],
  ['GET', '/api/ready', 'public'], // readiness: which backend does not answer, nothing more
  ['GET', '/api/guide', 'public'],
  ['GET', '/api/skill-prompt', 'public'],
  ['GET', '/api/skill-pack.zip', 'public'],
  ['GET', '/openapi.json', 'public'],
  ['GET', '/docs', 'public'],
  ['GET', '/redoc', 'public'],
  ['GET', '/', 'public'],
  ['GET', '/admin-assets/{}', 'public'], // the admin page's hashed scripts and styles
  // session and admin UI support
  ['POST', '/api/login', 'public'],
  ['POST', '/api/logout', 'public'],
  ['GET', '/api/me', 'public'],
  ['POST', '/api/admin/password', 'admin'], // needs the current password too; signs out the other sessions
  ['GET', '/api/status', 'authenticated'],
  // admin only
  ['GET', '/api/schema', 'admin'],
  ['GET', '/api/config', 'admin'],
  ['POST', '/api/config', 'admin'],
  ['GET', '/api/config/raw', 'admin'],
  ['GET', '/api/config/path', 'admin'],
  ['POST', '/api/test', 'admin'],
  ['POST', '/api/derive-endpoint', 'admin'],
  // tokens (issue 43): the admin manages all; a tokens:manage token only those inside its own namespaces (404 for the rest)
  ['GET', '/api/tokens', 'scopes:tokens:manage'],
  ['POST', '/api/tokens', 'scopes:tokens:manage'],
  ['PATCH', '/api/tokens/{}', 'scopes:tokens:manage'],
  ['DELETE', '/api/tokens/{}', 'scopes:tokens:manage'],
  ['POST', '/api/tokens/{}/revoke', 'scopes:tokens:manage'],
  ['GET', '/api/audit', 'admin'],
  // metrics: admin session, a token with metrics:read, or (no credentials) a MEMSTORE_METRICS_ALLOWED_IPS address
  ['GET', '/metrics', 'metrics'],
  // memories (Bearer token with scope, or the admin session)
  ['GET', '/api/memories', 'scopes:memory:read'],
  ['POST', '/api/memories', 'scopes:memory:write'],
  ['GET', '/api/memories/{}', 'scopes:memory:read'],
  ['PATCH', '/api/memories/{}', 'scopes:memory:write'],
  ['DELETE', '/api/memories/{}', 'scopes:memory:delete'],
  ['POST', '/api/memories/bulk-delete', 'scopes:memory:delete'],
  ['GET', '/api/memories/{}/download', 'scopes:memory:read'],
  // versions (issue 9): read for history, write for restore
  ['GET', '/api/memories/{}/versions', 'scopes:memory:read'],
  ['GET', '/api/memories/{}/versions/{}', 'scopes:memory:read'],
  ['POST', '/api/memories/{}/versions/{}/restore', 'scopes:memory:write'],
  ['GET', '/api/stats', 'scopes:memory:read'],
  // issue 43: delete every memory of the chosen namespace (it must be named explicitly)
  ['POST', '/api/namespaces/purge', 'scopes:memory:delete'],
  // issue 43: the namespaces the caller may see, with their counts (like stats)
  ['GET', '/api/namespaces', 'scopes:memory:read'],
  // remote MCP endpoint: any valid Bearer token (never the admin session); each tool checks its scope
  ['POST', '/mcp', 'token'],
  ['ALL', '/mcp', 'public'], // every other method: 405 (stateless endpoint, no SSE stream or session)
  ['POST', '/mcp/oauth', 'token'], // the OAuth clients' MCP endpoint (MEMSTORE_OAUTH; 404 when off)
  // OAuth for connectors (src/oauth): the sign-in and consent page, the resource metadata (404 when off)
  ['GET', '/oauth-consent/{}', 'public'],
  ['POST', '/oauth-consent/{}/login', 'public'],
  ['POST', '/oauth-consent/{}', 'public'],
  ['GET', '/.well-known/oauth-protected-resource/mcp/oauth', 'public'],
  // portability (issue 12): export reads, import writes; copying between backends is the admin's
  ['GET', '/api/export', 'scopes:memory:read'],
  ['POST', '/api/import', 'scopes:memory:write'],
  ['GET', '/api/migrate', 'admin'],
  ['POST', '/api/migrate', 'admin'],
  // signed download URLs of the filesystem store (the signature is the credential)
  ['GET', '/api/files/{*}', 'public'],
];

interface Route {
  method: string;
  path: string;
  rule: string;
  where: string;
}

function describeRule(rule: AccessRule | undefined): string {
  if (!rule) return 'NONE (denied by default)';
  return rule.kind === 'scopes' ? `scopes:${rule.scopes.join(',')}` : rule.kind;
}

function normalizePath(...parts: string[]): string {
  const joined = `/${parts.filter((p) => p !== '' && p !== '/').join('/')}`
    .replace(/\/+/g, '/')
    .replace(/\/$/, '')
    .replace(/\{\*[^}]*\}|\*[A-Za-z_]\w*|\(\.\*\)|\*/g, '{*}')
    .replace(/:[A-Za-z_]\w*/g, '{}');
  return joined === '' ? '/' : joined;
}

const asList = (v: unknown): string[] => (Array.isArray(v) ? v : [v ?? '']) as string[];

/** Every controller route with the access rule the global guard will apply. */
function controllerRoutes(t: TestApp): Route[] {
  const discovery = new DiscoveryService(t.app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const routes: Route[] = [];
  for (const wrapper of discovery.getControllers()) {
    const ctrl = wrapper.metatype as (new (...a: unknown[]) => object) | undefined;
    if (!ctrl || !wrapper.instance) continue;
    const proto = Object.getPrototypeOf(wrapper.instance) as Record<string, unknown>;
    for (const name of scanner.getAllMethodNames(proto)) {
      const handler = proto[name] as object;
      const methodPaths = Reflect.getMetadata(PATH_METADATA, handler) as unknown;
      if (methodPaths === undefined) continue;
      const verb = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      const rule = (Reflect.getMetadata(ACCESS_KEY, handler) ?? Reflect.getMetadata(ACCESS_KEY, ctrl)) as AccessRule | undefined;
      for (const base of asList(Reflect.getMetadata(PATH_METADATA, ctrl))) {
        for (const sub of asList(methodPaths)) {
          routes.push({ method: verb, path: normalizePath(base, sub), rule: describeRule(rule), where: `${ctrl.name}.${name}` });
        }
      }
    }
  }
  return routes;
}

const key = (method: string, path: string) => `${method} ${path}`;

describe('route permissions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every route requires exactly what the table says (a change here is a permission change)', async () => {
    const actual = new Map(controllerRoutes(t).map((r) => [key(r.method, r.path), r]));
    const expected = new Map(EXPECTED.map(([m, p, rule]) => [key(m, p), rule]));
    const added: string[] = [];
    const removed: string[] = [];
    const changed: string[] = [];

    for (const [k, r] of actual) {
      const want = expected.get(k);
      if (want === undefined) added.push(`${k} -> ${r.rule}   (${r.where})`);
      else if (want !== r.rule) changed.push(`${k}: table says ${want}, code says ${r.rule}   (${r.where})`);
    }
    // Routes outside Nest controllers (Swagger UI, the JSON document, static pages) are checked over HTTP.
    for (const [k, want] of expected) {
      if (actual.has(k)) continue;
      const [method, path] = k.split(' ');
      if (method !== 'GET' || path.includes('{')) {
        removed.push(`${k} (${want}): no controller route`);
        continue;
      }
      const res = await request(t.http).get(path);
      if (res.status === 404) removed.push(`${k} (${want}): not served`);
      else if (want === 'public' && (res.status === 401 || res.status === 403)) changed.push(`${k}: table says public, anonymous GET got ${res.status}`);
      else if (want !== 'public' && res.status !== 401) changed.push(`${k}: table says ${want}, anonymous GET got ${res.status}`);
    }

    const report = [
      added.length ? `Added (not in the table):\n  ${added.sort().join('\n  ')}` : '',
      removed.length ? `Removed (in the table, not served):\n  ${removed.sort().join('\n  ')}` : '',
      changed.length ? `Changed:\n  ${changed.sort().join('\n  ')}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    expect(report).toBe('');
  });

  it('no controller route is left without an access rule', () => {
    const open = controllerRoutes(t).filter((r) => r.rule.startsWith('NONE'));
    expect(open.map((r) => `${key(r.method, r.path)} (${r.where})`)).toEqual([]);
  });

  /**
   * The scope matrix (issue 46): every memory route and MCP tool, called by each kind of caller, with
   * the status it must get AND what the answer may contain. A caller without memory:read never sees a
   * stored title, content, tag, project or agent it did not send itself — in any answer, also a write's.
   */
  describe('scope matrix: status and content of every answer', () => {
    type Who = 'read' | 'write' | 'delete' | 'readWrite' | 'full' | 'admin';
    const WHO: Who[] = ['read', 'write', 'delete', 'readWrite', 'full', 'admin'];
    const READERS = new Set<Who>(['read', 'readWrite', 'full', 'admin']);
    const SCOPES: Record<Exclude<Who, 'admin'>, string[]> = {
      read: ['memory:read'],
      write: ['memory:write'],
      delete: ['memory:delete'],
      readWrite: ['memory:read', 'memory:write'],
      full: ['memory:read', 'memory:write', 'memory:delete'],
    };
    const can = (who: Who, scope: string) => who === 'admin' || SCOPES[who].includes(scope);
    // What only the stored memory knows: no answer to a non-reader may hold any of these.
    const SECRET = { title: 'Victim title zq7', content: 'Victim content kx9 launch codes', tag: 'victimtagw3', project: 'victimproj', agent: 'victimagent' };
    const secrets = Object.values(SECRET);
    let base: string;
    let admin: Awaited<ReturnType<typeof adminAgent>>;
    const bearer: Partial<Record<Who, string>> = {};

    const call = (who: Who, method: 'get' | 'post' | 'patch' | 'delete', path: string) => {
      const agent = who === 'admin' ? admin : request(t.http);
      const r = agent[method](path);
      return who === 'admin' ? r : r.set('Authorization', `Bearer ${bearer[who]}`);
    };
    /** A memory only the admin made, with stored fields no other caller sent (version 2 after one change). */
    const victim = async (): Promise<string> => {
      const res = await admin
        .post('/api/memories')
        .send({ title: SECRET.title, content: SECRET.content, tags: [SECRET.tag], project: SECRET.project, agent: SECRET.agent })
        .expect(201);
      const id = res.body.memory.id as string;
      await admin
        .patch(`/api/memories/${id}`)
        .send({ content: `${SECRET.content} (edited)` })
        .expect(200);
      return id;
    };
    const expectNoSecrets = (who: Who, what: string, text: string) => {
      if (READERS.has(who)) return;
      for (const s of secrets) if (text.includes(s)) throw new Error(`${who}: ${what} leaked "${s}": ${text.slice(0, 300)}`);
    };

    beforeAll(async () => {
      await t.app.listen(0, '127.0.0.1');
      base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
      admin = await adminAgent(t);
      for (const who of WHO) {
        if (who === 'admin') continue;
        bearer[who] = (
          await admin
            .post('/api/tokens')
            .send({ name: `matrix ${who}`, scopes: SCOPES[who] })
            .expect(201)
        ).body.plaintext;
      }
    });

    // [name, scope needed (null: any caller), the request; success status]
    const REST: Array<[string, string | null, (who: Who, id: string) => request.Test, number]> = [
      ['list', 'memory:read', (w) => call(w, 'get', '/api/memories'), 200],
      ['search', 'memory:read', (w) => call(w, 'get', '/api/memories?q=kx9'), 200],
      ['fetch', 'memory:read', (w, id) => call(w, 'get', `/api/memories/${id}`), 200],
      ['download', 'memory:read', (w, id) => call(w, 'get', `/api/memories/${id}/download`), 200],
      ['download url', 'memory:read', (w, id) => call(w, 'get', `/api/memories/${id}/download?url=true`), 200],
      ['versions', 'memory:read', (w, id) => call(w, 'get', `/api/memories/${id}/versions`), 200],
      ['version 1', 'memory:read', (w, id) => call(w, 'get', `/api/memories/${id}/versions/1`), 200],
      ['stats', 'memory:read', (w) => call(w, 'get', '/api/stats'), 200],
      ['export', 'memory:read', (w) => call(w, 'get', '/api/export'), 200],
      ['create', 'memory:write', (w) => call(w, 'post', '/api/memories').send({ content: SECRET.content.split(' ').slice(0, 3).join(' ') + ' own note', title: 'own' }), 201],
      ['empty patch', 'memory:write', (w, id) => call(w, 'patch', `/api/memories/${id}`).send({}), 200],
      ['patch tags', 'memory:write', (w, id) => call(w, 'patch', `/api/memories/${id}`).send({ tags: ['mine'] }), 200],
      ['restore', 'memory:write', (w, id) => call(w, 'post', `/api/memories/${id}/versions/1/restore`), 200],
      [
        'import',
        'memory:write',
        (w, id) =>
          call(w, 'post', '/api/import?format=jsonl&on_conflict=skip')
            .set('Content-Type', 'application/x-ndjson')
            .send(`${JSON.stringify({ id, content: 'imported' })}\n`),
        200,
      ],
      ['delete', 'memory:delete', (w, id) => call(w, 'delete', `/api/memories/${id}`), 200],
      ['bulk delete', 'memory:delete', (w, id) => call(w, 'post', '/api/memories/bulk-delete').send({ ids: [id] }), 200],
      ['status', null, (w) => call(w, 'get', '/api/status'), 200],
      ['me', null, (w) => call(w, 'get', '/api/me'), 200],
      ['audit (admin)', 'admin', (w) => call(w, 'get', '/api/audit'), 200],
      ['tokens', 'tokens:manage', (w) => call(w, 'get', '/api/tokens'), 200],
      ['config (admin)', 'admin', (w) => call(w, 'get', '/api/config'), 200],
    ];

    it.each(WHO)('REST as %s: each route answers its status, and a non-reader never sees stored content', async (who) => {
      const wrong: string[] = [];
      for (const [name, scope, req, ok] of REST) {
        const id = await victim();
        const res = await req(who, id);
        const allowed = scope === null || (scope === 'admin' ? who === 'admin' : can(who, scope));
        const want = allowed ? ok : 403;
        if (res.status !== want) wrong.push(`${name}: ${res.status}, expected ${want} (${res.text.slice(0, 120)})`);
        expectNoSecrets(who, name, res.text ?? JSON.stringify(res.body));
        if (allowed && name === 'create') expect(res.body.similar).toEqual([]);
        if (allowed && ['empty patch', 'patch tags', 'restore'].includes(name)) {
          const m = res.body.memory;
          expect(m).toMatchObject({ id, version: expect.any(Number), updated_at: expect.any(String) });
          if (READERS.has(who)) expect(m.content).toEqual(expect.any(String));
          else expect(Object.keys(m).sort()).toEqual(['created_at', 'id', 'updated_at', 'version', ...(name === 'patch tags' ? ['tags'] : [])].sort());
        }
      }
      expect(wrong).toEqual([]);
    });

    it('namespaces: every memory route of a token bound elsewhere misses the memory, refuses a namespace outside its binding (403 naming it) and an ambiguous request (400)', async () => {
      const token = async (namespaces: string[]) =>
        (
          await admin
            .post('/api/tokens')
            .send({ name: `ns ${namespaces.join(',')}`, preset: 'full', namespaces })
            .expect(201)
        ).body.plaintext as string;
      const other = await token(['tenant-x']);
      const both = await token(['tenant-x', 'tenant-y']);
      const as = (b: string, r: request.Test) => r.set('Authorization', `Bearer ${b}`);
      const MEMORY_ROUTES = REST.filter(([, scope]) => scope?.startsWith('memory:'));
      const wrong: string[] = [];
      for (const [name, , req, ok] of MEMORY_ROUTES) {
        const id = await victim(); // in 'default', made by the admin
        const inOwn = await as(other, req('full', id));
        // Reads of the list kind answer (empty of the victim); anything naming the victim's id is a 404; import makes its own copy.
        const want = ['list', 'search', 'stats', 'export', 'create', 'import', 'bulk delete'].includes(name) ? ok : 404;
        if (inOwn.status !== want) wrong.push(`${name} in tenant-x: ${inOwn.status}, expected ${want}`);
        for (const s of secrets) if ((inOwn.text ?? '').includes(s)) wrong.push(`${name} in tenant-x leaked "${s}"`);
        const outside = await as(other, req('full', id)).set('X-Memory-Namespace', 'default');
        if (outside.status !== 403 || !String(outside.body.error).includes('"default"')) wrong.push(`${name} choosing default: ${outside.status} ${outside.text.slice(0, 100)}`);
        const ambiguous = await as(both, req('full', id));
        if (ambiguous.status !== 400 || !/x-memory-namespace/i.test(String(ambiguous.body.error))) wrong.push(`${name} ambiguous: ${ambiguous.status} ${ambiguous.text.slice(0, 100)}`);
        // The victim is still there, as it was.
        expect((await admin.get(`/api/memories/${id}`).expect(200)).body.memory.content).toBe(`${SECRET.content} (edited)`);
      }
      expect(wrong).toEqual([]);
    });

    it('tokens:manage: every token route of a tenant token answers inside its namespaces and misses a token outside them (404)', async () => {
      const mint = async (agent: request.Test) => (await agent.expect(201)).body as { token: { id: string; namespaces: string[] }; plaintext: string };
      const tenant = await mint(admin.post('/api/tokens').send({ name: 'tenant m', scopes: ['memory:read', 'tokens:manage'], namespaces: ['tenant-m/*'] }));
      const outside = await mint(admin.post('/api/tokens').send({ name: 'tenant n', preset: 'full', namespaces: ['tenant-n'] }));
      const as = (r: request.Test) => r.set('Authorization', `Bearer ${tenant.plaintext}`);
      const user = await mint(as(request(t.http).post('/api/tokens')).send({ name: 'user', namespaces: ['tenant-m/u1'] }));
      expect(user.token.namespaces).toEqual(['tenant-m/u1']);
      const wrong: string[] = [];
      const check = async (name: string, r: request.Test, want: number) => {
        const res = await as(r);
        if (res.status !== want) wrong.push(`${name}: ${res.status}, expected ${want} (${res.text.slice(0, 120)})`);
        for (const leak of ['tenant n', outside.token.id]) if (res.text.includes(leak)) wrong.push(`${name} leaked "${leak}"`);
        return res;
      };
      const listed = await check('list', request(t.http).get('/api/tokens'), 200);
      expect((listed.body.tokens as Array<{ id: string }>).map((x) => x.id).sort()).toEqual([tenant.token.id, user.token.id].sort());
      await check(
        'create outside',
        request(t.http)
          .post('/api/tokens')
          .send({ namespaces: ['tenant-n'] }),
        403,
      );
      await check(
        'create *',
        request(t.http)
          .post('/api/tokens')
          .send({ namespaces: ['*'] }),
        403,
      );
      await check(
        'create with a scope it lacks',
        request(t.http)
          .post('/api/tokens')
          .send({ namespaces: ['tenant-m/u2'], scopes: ['memory:write'] }),
        403,
      );
      const id = outside.token.id;
      await check('patch outside', request(t.http).patch(`/api/tokens/${id}`).send({ name: 'x' }), 404);
      await check('revoke outside', request(t.http).post(`/api/tokens/${id}/revoke`), 404);
      await check('delete outside', request(t.http).delete(`/api/tokens/${id}`), 404);
      await check('patch inside', request(t.http).patch(`/api/tokens/${user.token.id}`).send({ name: 'user 1' }), 200);
      await check('revoke inside', request(t.http).post(`/api/tokens/${user.token.id}/revoke`), 200);
      await check('delete inside', request(t.http).delete(`/api/tokens/${user.token.id}`), 200);
      expect(wrong).toEqual([]);
      // The minted token's memory routes work only in its own namespace.
      const fresh = await mint(as(request(t.http).post('/api/tokens')).send({ name: 'user 2', namespaces: ['tenant-m/u2'] }));
      const own = await request(t.http).get('/api/memories').set('Authorization', `Bearer ${fresh.plaintext}`).expect(200);
      expect(own.body).toMatchObject({ ok: true });
      await request(t.http).get('/api/memories').set('Authorization', `Bearer ${fresh.plaintext}`).set('X-Memory-Namespace', 'tenant-m/u1').expect(403);
      expect((await admin.get('/api/tokens').expect(200)).body.tokens.find((x: { id: string }) => x.id === id)).toMatchObject({ name: 'tenant n', status: 'active' });
    });

    it.each(WHO.filter((w) => w !== 'admin'))('MCP as %s: each tool answers or refuses by scope, and a non-reader never sees stored content', async (who) => {
      const connect = async () => {
        const c = new Client({ name: 'matrix', version: '1.0.0' });
        await c.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${bearer[who]}` } } }));
        return c;
      };
      // Listing and calling on separate clients: the client checks answers against the listed output
      // schemas, which do not all name every field the tools answer (`version`): that is the MCP schemas' concern.
      const lister = await connect();
      const client = await connect();
      try {
        const listed = (await lister.listTools()).tools.map((x) => x.name).sort();
        const TOOLS: Array<[string, string, (id: string) => Record<string, unknown>]> = [
          ['search_memories', 'memory:read', () => ({ q: 'kx9' })],
          ['list_recent', 'memory:read', () => ({})],
          ['get_memory', 'memory:read', (id) => ({ id })],
          ['memory_stats', 'memory:read', () => ({})],
          ['recall_context', 'memory:read', () => ({ task: 'victim launch codes kx9' })],
          ['create_memory', 'memory:write', () => ({ content: 'own mcp note', title: 'own' })],
          ['update_memory', 'memory:write', (id) => ({ id })],
          ['delete_memory', 'memory:delete', (id) => ({ id })],
        ];
        expect(listed).toEqual(
          TOOLS.filter(([, scope]) => can(who, scope))
            .map(([n]) => n)
            .sort(),
        );
        for (const [name, scope, args] of TOOLS) {
          const id = await victim();
          const res = await client.callTool({ name, arguments: args(id) });
          expect({ name, isError: res.isError === true }).toEqual({ name, isError: !can(who, scope) });
          expectNoSecrets(who, `MCP ${name}`, JSON.stringify(res));
          if (name === 'update_memory' && can(who, scope) && !READERS.has(who)) {
            expect(Object.keys((res.structuredContent as { memory: object }).memory).sort()).toEqual(['created_at', 'id', 'updated_at', 'version']);
          }
        }
      } finally {
        await client.close();
        await lister.close();
      }
    });

    it('memory ids are not derivable from one another (random after the 4-byte time)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++)
        ids.push(
          (
            await admin
              .post('/api/memories')
              .send({ content: `id probe ${i}` })
              .expect(201)
          ).body.memory.id,
        );
      const tails = ids.map((id) => id.slice(8));
      // ObjectId layout: bytes 4..8 were one constant per process and the last 3 a counter.
      expect(new Set(tails.map((x) => x.slice(0, 10))).size).toBe(5);
      for (let i = 1; i < tails.length; i++) expect(parseInt(tails[i].slice(10), 16) - parseInt(tails[i - 1].slice(10), 16)).not.toBe(1);
    });
  });
});
