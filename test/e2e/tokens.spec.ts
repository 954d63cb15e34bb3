import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { ADMIN_PASSWORD, adminAgent, createTestApp, TestApp } from '../support/app';
import { testBackends } from '../support/backends';

type Agent = Awaited<ReturnType<typeof adminAgent>>;

const NOT_FOUND = { ok: false, error: 'Token not found' };
const MISSING_ID = '0123456789abcdef';
const A_MEMORY_ID = 'ffffffffffffffffffffffff';
const TOKEN_RE = /^mem_tok_([0-9a-f]{16})_([A-Za-z0-9_-]{43,})$/;
const RECORD_KEYS = [
  'allowed_ips',
  'created_at',
  'created_by',
  'expires_at',
  'id',
  'last_used_at',
  'name',
  'namespaces',
  'prefix',
  'rate_limit_per_minute',
  'recent_requests_per_minute',
  'revoked_at',
  'scopes',
  'status',
];

async function sessionCookieFor(app: TestApp): Promise<string> {
  const res = await request(app.http).post('/api/login').send({ username: app.cfg.adminUsername, password: ADMIN_PASSWORD }).expect(200);
  return (res.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('memstore.sid='))!.split(';')[0];
}

const nowS = () => Math.floor(Date.now() / 1000);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(testBackends())('API tokens on $name', (backend) => {
  let t: TestApp;
  let admin: Agent;

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    admin = await adminAgent(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function create(body: Record<string, unknown> = {}) {
    const res = await admin.post('/api/tokens').send(body);
    expect(res.status).toBe(201);
    return { token: res.body.token, plaintext: res.body.plaintext as string, id: res.body.token.id as string };
  }

  /** A memory:read route: the "use" of a token. */
  const read = (bearer: string) => request(t.http).get('/api/memories').set('Authorization', `Bearer ${bearer}`);
  const write = (bearer: string) => request(t.http).post('/api/memories').set('Authorization', `Bearer ${bearer}`).send({ content: 'token test' });
  const del = (bearer: string) => request(t.http).delete(`/api/memories/${A_MEMORY_ID}`).set('Authorization', `Bearer ${bearer}`);

  describe('create', () => {
    it('returns 201 with the record and the plaintext once', async () => {
      const res = await admin
        .post('/api/tokens')
        .send({ name: ' ci agent ', preset: 'read-write', allowed_ips: ['127.0.0.0/8'] })
        .expect(201);
      expect(res.body.ok).toBe(true);
      const { token, plaintext } = res.body;
      expect(Object.keys(token).sort()).toEqual(RECORD_KEYS);
      const m = TOKEN_RE.exec(plaintext);
      expect(m).not.toBeNull();
      expect(Buffer.from(m![2], 'base64url').length).toBeGreaterThanOrEqual(32);
      expect(token).toEqual({
        id: m![1],
        name: 'ci agent',
        prefix: `mem_tok_${m![1]}`,
        scopes: ['memory:read', 'memory:write'],
        namespaces: ['default'], // issue 43: a token the admin binds to nothing works in default
        status: 'active',
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        expires_at: null,
        allowed_ips: ['127.0.0.0/8'],
        last_used_at: null,
        revoked_at: null,
        created_by: null,
        rate_limit_per_minute: 600,
        recent_requests_per_minute: 0,
      });
    });

    it('never shows the secret or its hash again (list, patch, revoke)', async () => {
      const { plaintext, id } = await create({ preset: 'full' });
      const secret = TOKEN_RE.exec(plaintext)![2];
      const list = await admin.get('/api/tokens').expect(200);
      const patched = await admin.patch(`/api/tokens/${id}`).send({ name: 'x' }).expect(200);
      const revoked = await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      for (const body of [list.body, patched.body, revoked.body]) {
        const text = JSON.stringify(body);
        expect(text).not.toContain(secret);
        expect(text).not.toMatch(/hash|secret|plaintext/i);
      }
      const rec = list.body.tokens.find((x: { id: string }) => x.id === id);
      expect(Object.keys(rec).sort()).toEqual(RECORD_KEYS);
    });

    it.each([
      [{}, ['memory:read']],
      [{ preset: 'read-only' }, ['memory:read']],
      [{ preset: 'read-write' }, ['memory:read', 'memory:write']],
      [{ preset: 'full' }, ['memory:read', 'memory:write', 'memory:delete']],
      [{ preset: 'full', scopes: ['memory:delete'] }, ['memory:delete']],
      [{ scopes: ['memory:delete', 'memory:read', 'memory:read'] }, ['memory:read', 'memory:delete']],
      [{ preset: null, scopes: null }, ['memory:read']],
    ])('scopes for %j are %j', async (body, scopes) => {
      const { token } = await create(body);
      expect(token.scopes).toEqual(scopes);
    });

    it('expires_in_days sets expires_at in epoch seconds', async () => {
      const before = nowS();
      const { token } = await create({ expires_in_days: 30 });
      expect(Number.isInteger(token.expires_at)).toBe(true);
      expect(token.expires_at).toBeGreaterThanOrEqual(before + 30 * 86400);
      expect(token.expires_at).toBeLessThanOrEqual(nowS() + 30 * 86400);
    });

    it('expires_at is taken as given', async () => {
      const at = nowS() + 3600;
      const { token } = await create({ expires_at: at });
      expect(token.expires_at).toBe(at);
      expect(token.status).toBe('active');
    });

    it('normalizes allowed_ips (IPv4, IPv6, CIDR, IPv4-mapped)', async () => {
      const { token } = await create({ allowed_ips: ['10.0.0.0/8', '::FFFF:192.0.2.1', '2001:DB8::/32', '::1'] });
      expect(token.allowed_ips).toEqual(['10.0.0.0/8', '192.0.2.1', '2001:db8::/32', '::1']);
    });

    it('lists newest first', async () => {
      const a = await create({ name: 'older' });
      await sleep(5);
      const b = await create({ name: 'newer' });
      const ids = (await admin.get('/api/tokens').expect(200)).body.tokens.map((x: { id: string }) => x.id);
      expect(ids.indexOf(b.id)).toBeLessThan(ids.indexOf(a.id));
    });
  });

  describe('validation (422)', () => {
    const cases: Array<[string, unknown, (string | number)[], string]> = [
      ['unknown scope', { scopes: ['memory:admin'] }, ['body', 'scopes'], 'enum'],
      ['scopes not a list', { scopes: 'memory:read' }, ['body', 'scopes'], 'list_type'],
      ['empty scopes', { scopes: [] }, ['body', 'scopes'], 'too_short'],
      ['unknown preset', { preset: 'admin' }, ['body', 'preset'], 'enum'],
      ['expires_in_days 0', { expires_in_days: 0 }, ['body', 'expires_in_days'], 'greater_than_equal'],
      ['expires_in_days 3651', { expires_in_days: 3651 }, ['body', 'expires_in_days'], 'less_than_equal'],
      ['expires_in_days not an integer', { expires_in_days: 'soon' }, ['body', 'expires_in_days'], 'int_parsing'],
      ['expires_at in the past', { expires_at: nowS() - 10 }, ['body', 'expires_at'], 'value_error'],
      ['expires_at not an integer', { expires_at: 1.5 }, ['body', 'expires_at'], 'int_parsing'],
      ['both expiry fields', { expires_in_days: 1, expires_at: nowS() + 3600 }, ['body'], 'value_error'],
      ['invalid allowed_ips entry', { allowed_ips: ['127.0.0.1', 'not-an-ip'] }, ['body', 'allowed_ips', 1], 'value_error'],
      ['CIDR prefix too long', { allowed_ips: ['10.0.0.0/33'] }, ['body', 'allowed_ips', 0], 'value_error'],
      ['allowed_ips not a list', { allowed_ips: '127.0.0.1' }, ['body', 'allowed_ips'], 'list_type'],
      ['name not a string', { name: 42 }, ['body', 'name'], 'string_type'],
      ['name too long', { name: 'x'.repeat(201) }, ['body', 'name'], 'string_too_long'],
    ];
    it.each(cases)('%s', async (_label, body, loc, type) => {
      const res = await admin
        .post('/api/tokens')
        .send(body as object)
        .expect(422);
      expect(res.body.ok).toBe(false);
      expect(typeof res.body.error).toBe('string');
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type })]));
    });

    it('a body that is not a JSON object', async () => {
      const res = await admin.post('/api/tokens').set('Content-Type', 'application/json').send('[1,2]').expect(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body'] });
    });

    it('malformed JSON', async () => {
      const res = await admin.post('/api/tokens').set('Content-Type', 'application/json').send('{"name":').expect(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    });

    it('creates nothing on a 422', async () => {
      const before = (await admin.get('/api/tokens')).body.tokens.length;
      await admin
        .post('/api/tokens')
        .send({ allowed_ips: ['bad'] })
        .expect(422);
      expect((await admin.get('/api/tokens')).body.tokens.length).toBe(before);
    });

    it.each<[string, object, (string | number)[], string]>([
      ['expires_at with clear_expiry', { expires_at: nowS() + 3600, clear_expiry: true }, ['body'], 'value_error'],
      ['past expires_at', { expires_at: nowS() - 1 }, ['body', 'expires_at'], 'value_error'],
      ['unrevoke not a boolean', { unrevoke: 'yes' }, ['body', 'unrevoke'], 'bool_parsing'],
      ['clear_expiry not a boolean', { clear_expiry: 1 }, ['body', 'clear_expiry'], 'bool_parsing'],
      ['unknown scope', { scopes: ['nope'] }, ['body', 'scopes'], 'enum'],
      ['invalid allowed_ips', { allowed_ips: ['300.1.1.1'] }, ['body', 'allowed_ips', 0], 'value_error'],
    ])('PATCH: %s', async (_label, body, loc, type) => {
      const { id } = await create();
      const res = await admin.patch(`/api/tokens/${id}`).send(body).expect(422);
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, type })]));
    });
  });

  describe('unknown token id (404)', () => {
    it.each([MISSING_ID, 'not-hex', 'ABCDEF0123456789', '0123456789abcdef0'])('%s', async (id) => {
      expect((await admin.patch(`/api/tokens/${id}`).send({ name: 'x' }).expect(404)).body).toEqual(NOT_FOUND);
      expect((await admin.post(`/api/tokens/${id}/revoke`).expect(404)).body).toEqual(NOT_FOUND);
      expect((await admin.delete(`/api/tokens/${id}`).expect(404)).body).toEqual(NOT_FOUND);
    });
  });

  describe('patch, revoke, delete', () => {
    it('patch changes name, scopes and allow-list and keeps the secret', async () => {
      const { id, plaintext } = await create({ name: 'a', preset: 'read-only' });
      const res = await admin
        .patch(`/api/tokens/${id}`)
        .send({ name: 'b', scopes: ['memory:write'], allowed_ips: ['127.0.0.1'] })
        .expect(200);
      expect(res.body).toEqual({ ok: true, token: expect.objectContaining({ id, name: 'b', scopes: ['memory:write'], allowed_ips: ['127.0.0.1'] }) });
      expect(res.body.plaintext).toBeUndefined();
      // same plaintext still authenticates, with the new scopes
      await read(plaintext).expect(403);
    });

    it('patch with absent or null fields changes nothing', async () => {
      const { id, token } = await create({ name: 'keep', preset: 'full', allowed_ips: ['127.0.0.1'], expires_in_days: 5 });
      const res = await admin.patch(`/api/tokens/${id}`).send({ name: null, scopes: null, allowed_ips: null, expires_at: null }).expect(200);
      expect(res.body.token).toEqual(token);
    });

    it('allowed_ips [] allows any address again', async () => {
      const { id, plaintext } = await create({ allowed_ips: ['10.0.0.0/8'] });
      await read(plaintext).expect(403);
      const res = await admin.patch(`/api/tokens/${id}`).send({ allowed_ips: [] }).expect(200);
      expect(res.body.token.allowed_ips).toEqual([]);
      await read(plaintext).expect(200);
    });

    it('revoke is idempotent and keeps the first revocation time', async () => {
      const { id } = await create();
      const first = await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      expect(first.body.token.status).toBe('revoked');
      expect(first.body.token.revoked_at).toEqual(expect.any(String));
      await sleep(5);
      const again = await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      expect(again.body).toEqual(first.body);
    });

    it('revoked wins over expired in status', async () => {
      const { id } = await create({ expires_at: nowS() + 2 });
      await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      await sleep(2100);
      const rec = (await admin.get('/api/tokens')).body.tokens.find((x: { id: string }) => x.id === id);
      expect(rec.status).toBe('revoked');
    });

    it('delete answers {ok, deleted, id} and the token is gone from the list', async () => {
      const { id } = await create();
      expect((await admin.delete(`/api/tokens/${id}`).expect(200)).body).toEqual({ ok: true, deleted: true, id });
      const ids = (await admin.get('/api/tokens')).body.tokens.map((x: { id: string }) => x.id);
      expect(ids).not.toContain(id);
      expect((await admin.delete(`/api/tokens/${id}`).expect(404)).body).toEqual(NOT_FOUND);
    });
  });

  describe('OpenAPI', () => {
    it('documents the token and session routes with request and response schemas and their security', async () => {
      const doc = (await request(t.http).get('/openapi.json').expect(200)).body;
      const op = (p: string, m: string) => doc.paths[p]?.[m];
      const ref = (s: { $ref?: string } | undefined) => s?.$ref?.split('/').pop();
      const json = (o: { content?: Record<string, { schema?: { $ref?: string } }> } | undefined) => ref(o?.content?.['application/json']?.schema);
      expect(json(op('/api/tokens', 'post').requestBody)).toBe('CreateTokenDto');
      expect(json(op('/api/tokens', 'post').responses['201'])).toBe('CreatedTokenResponseDto');
      expect(json(op('/api/tokens', 'get').responses['200'])).toBe('TokenListResponseDto');
      expect(json(op('/api/tokens/{token_id}', 'patch').requestBody)).toBe('UpdateTokenDto');
      expect(json(op('/api/tokens/{token_id}', 'patch').responses['200'])).toBe('TokenResponseDto');
      expect(json(op('/api/tokens/{token_id}', 'delete').responses['200'])).toBe('TokenDeletedResponseDto');
      expect(json(op('/api/tokens/{token_id}/revoke', 'post').responses['200'])).toBe('TokenResponseDto');
      expect(json(op('/api/login', 'post').requestBody)).toBe('LoginDto');
      expect(json(op('/api/me', 'get').responses['200'])).toBe('MeResponseDto');
      for (const m of ['get', 'post']) expect(op('/api/tokens', m).security).toEqual([{ bearer: [] }, { session: [] }]);
      expect(op('/api/login', 'post').security).toBeUndefined();
      const create = doc.components.schemas.CreateTokenDto.properties;
      expect(create.preset.enum).toEqual(['read-only', 'read-write', 'full', null]); // nullable: OAS 3.0.3 lists null in the enum
      expect(create.scopes.items.enum).toEqual(['memory:read', 'memory:write', 'memory:delete', 'metrics:read', 'tokens:manage']);
      expect(create.expires_at).toMatchObject({ type: 'integer' });
      const record = doc.components.schemas.TokenDto.properties;
      expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
      expect(record.status.enum).toEqual(['active', 'revoked', 'expired']);
    });
  });

  it('a signed download link dies with the token that made it (revoked, unrevoked, deleted; issue 46)', async () => {
    const { id, plaintext } = await create({ name: 'linker', preset: 'read-write' });
    const memId = (await write(plaintext).expect(201)).body.memory.id;
    const link = await request(t.http).get(`/api/memories/${memId}/download?url=true`).set('Authorization', `Bearer ${plaintext}`).expect(200);
    const u = new URL(link.body.url);
    const follow = () => request(t.http).get(u.pathname + u.search);
    expect((await follow().expect(200)).text).toContain('token test');
    await admin.post(`/api/tokens/${id}/revoke`).expect(200);
    expect((await follow().expect(403)).body).toEqual({ ok: false, error: expect.stringMatching(/revoked/) });
    await admin.patch(`/api/tokens/${id}`).send({ unrevoke: true }).expect(200);
    await follow().expect(200);
    // The token id is signed: a link cannot be moved to another token, nor stripped of it.
    const other = await create({ preset: 'read-only' });
    await request(t.http)
      .get(u.pathname + u.search.replace(id, other.id))
      .expect(403);
    await request(t.http)
      .get(u.pathname + u.search.replace(`&tok=${id}`, ''))
      .expect(403);
    await admin.delete(`/api/tokens/${id}`).expect(200);
    await follow().expect(403);
  });

  describe('life cycle', () => {
    it('create → use → revoke → 401 → unrevoke → works → expire → 401 → clear expiry → works → delete → 401', async () => {
      const { id, plaintext } = await create({ name: 'life', preset: 'read-only' });
      await read(plaintext).expect(200);

      const revoked = await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      expect(revoked.body.token.status).toBe('revoked');
      const r1 = await read(plaintext).expect(401);
      expect(r1.body).toEqual({ ok: false, error: expect.any(String) });

      const restored = await admin.patch(`/api/tokens/${id}`).send({ unrevoke: true }).expect(200);
      expect(restored.body.token).toMatchObject({ status: 'active', revoked_at: null });
      await read(plaintext).expect(200);

      const soon = nowS() + 2;
      const expiring = await admin.patch(`/api/tokens/${id}`).send({ expires_at: soon }).expect(200);
      expect(expiring.body.token).toMatchObject({ status: 'active', expires_at: soon });
      await read(plaintext).expect(200);
      await sleep(soon * 1000 - Date.now() + 50);
      await read(plaintext).expect(401);
      const listed = (await admin.get('/api/tokens')).body.tokens.find((x: { id: string }) => x.id === id);
      expect(listed.status).toBe('expired');

      const cleared = await admin.patch(`/api/tokens/${id}`).send({ clear_expiry: true }).expect(200);
      expect(cleared.body.token).toMatchObject({ status: 'active', expires_at: null });
      await read(plaintext).expect(200);

      await admin.delete(`/api/tokens/${id}`).expect(200);
      await read(plaintext).expect(401);
    });
  });

  describe('authentication (401) and authorization (403)', () => {
    let full: string;
    let readOnly: string;
    beforeAll(async () => {
      full = (await create({ preset: 'full' })).plaintext;
      readOnly = (await create({ preset: 'read-only' })).plaintext;
    });

    it('no credentials on a memory route → 401', async () => {
      const res = await request(t.http).get('/api/memories').expect(401);
      expect(res.body).toEqual({ ok: false, error: expect.any(String) });
    });

    it.each([
      ['a non-Bearer scheme', 'Basic dXNlcjpwYXNz'],
      ['an empty Bearer', 'Bearer '],
      ['a token without the prefix', 'Bearer abc'],
      ['a token without a secret', 'Bearer mem_tok_0123456789abcdef'],
      ['a token with an empty secret', 'Bearer mem_tok_0123456789abcdef_'],
      ['a token with a short id', 'Bearer mem_tok_0123_secret'],
      ['an unknown token id', `Bearer mem_tok_${MISSING_ID}_${'A'.repeat(43)}`],
    ])('%s → 401', async (_label, header) => {
      const res = await request(t.http).get('/api/memories').set('Authorization', header).expect(401);
      expect(res.body.ok).toBe(false);
    });

    it('the right id with a wrong secret → 401', async () => {
      const m = TOKEN_RE.exec(full)!;
      const wrong = `mem_tok_${m[1]}_${m[2].slice(0, -1)}${m[2].endsWith('A') ? 'B' : 'A'}`;
      await read(wrong).expect(401);
      await read(`${full}x`).expect(401);
    });

    it('a valid token without the scope → 403; with it → allowed', async () => {
      const res = await write(readOnly).expect(403);
      expect(res.body).toEqual({ ok: false, error: expect.stringContaining('memory:write') });
      await del(readOnly).expect(403);
      await read(readOnly).expect(200);
      const rw = (await create({ preset: 'read-write' })).plaintext;
      await del(rw).expect(403);
      expect((await del(full)).status).not.toBe(403);
      expect((await del(full)).status).not.toBe(401);
    });

    it.each([
      ['GET', '/api/tokens'],
      ['POST', '/api/tokens'],
      ['PATCH', `/api/tokens/${MISSING_ID}`],
      ['DELETE', `/api/tokens/${MISSING_ID}`],
      ['POST', `/api/tokens/${MISSING_ID}/revoke`],
    ])('%s %s: token → 403, nothing → 401, bad token → 401', async (method, path) => {
      const m = method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete';
      const withToken = await request(t.http)[m](path).set('Authorization', `Bearer ${full}`).send({});
      expect(withToken.status).toBe(403);
      expect(withToken.body).toEqual({ ok: false, error: expect.any(String) });
      expect((await request(t.http)[m](path).send({})).status).toBe(401);
      expect((await request(t.http)[m](path).set('Authorization', 'Bearer mem_tok_nope').send({})).status).toBe(401);
    });

    it('a Bearer token wins over the admin session cookie', async () => {
      await admin.get('/api/tokens').set('Authorization', `Bearer ${full}`).expect(403);
      await admin.get('/api/tokens').set('Authorization', 'Bearer bogus').expect(401);
    });

    it('/api/me tells which token is calling', async () => {
      const { id, plaintext } = await create({ preset: 'read-write' });
      const res = await request(t.http).get('/api/me').set('Authorization', `Bearer ${plaintext}`).expect(200);
      expect(res.body).toEqual({ ok: true, authenticated: true, kind: 'token', token_id: id, scopes: ['memory:read', 'memory:write'] });
      const bad = await request(t.http).get('/api/me').set('Authorization', 'Bearer mem_tok_bad').expect(200);
      expect(bad.body).toEqual({ ok: true, authenticated: false });
    });
  });

  describe('IP allow-lists', () => {
    it('127.0.0.0/8 lets the loopback client in; 10.0.0.0/8 → 403', async () => {
      const inside = (await create({ allowed_ips: ['127.0.0.0/8'] })).plaintext;
      const outside = (await create({ allowed_ips: ['10.0.0.0/8', '2001:db8::/32'] })).plaintext;
      await read(inside).expect(200);
      const res = await read(outside).expect(403);
      expect(res.body).toEqual({ ok: false, error: expect.stringContaining('may not be used from') });
    });

    it('an exact IPv4 address works', async () => {
      await read((await create({ allowed_ips: ['127.0.0.1'] })).plaintext).expect(200);
      await read((await create({ allowed_ips: ['127.0.0.2'] })).plaintext).expect(403);
    });

    it('IPv6 ::1 from an IPv6 loopback client', async () => {
      const v6 = (await create({ allowed_ips: ['::1'] })).plaintext;
      const v4only = (await create({ allowed_ips: ['127.0.0.0/8'] })).plaintext;
      await read(v6).expect(403); // supertest connects over IPv4
      const server = http.createServer(t.app.getHttpAdapter().getInstance());
      await new Promise<void>((resolve) => server.listen(0, '::1', resolve));
      try {
        const base = `http://[::1]:${(server.address() as AddressInfo).port}`;
        await request(base).get('/api/memories').set('Authorization', `Bearer ${v6}`).expect(200);
        await request(base).get('/api/memories').set('Authorization', `Bearer ${v4only}`).expect(403);
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it('X-Forwarded-For is ignored unless MEMSTORE_TRUST_PROXY is set, and then only the proxy-added hop counts', async () => {
      const only10 = (await create({ allowed_ips: ['10.0.0.0/8'] })).plaintext;
      await read(only10).set('X-Forwarded-For', '10.0.0.5').expect(403);

      const proxied = await createTestApp({ ...(await backend.env()), MEMSTORE_TRUST_PROXY: 'true' });
      try {
        const res = await request(proxied.http)
          .post('/api/tokens')
          .set('Cookie', await sessionCookieFor(proxied))
          .send({ allowed_ips: ['10.0.0.0/8'] })
          .expect(201);
        const via = (xff: string) => request(proxied.http).get('/api/memories').set('Authorization', `Bearer ${res.body.plaintext}`).set('X-Forwarded-For', xff);
        await via('10.0.0.5').expect(200); // the proxy saw 10.0.0.5
        await via('10.0.0.5, 203.0.113.7').expect(403); // a client-sent 10.0.0.5, the proxy saw 203.0.113.7
      } finally {
        await proxied.close();
      }
    });

    it('a revoked token from a disallowed address is 401, not 403 (credentials first)', async () => {
      const { id, plaintext } = await create({ allowed_ips: ['10.0.0.0/8'] });
      await admin.post(`/api/tokens/${id}/revoke`).expect(200);
      await read(plaintext).expect(401);
    });
  });

  describe('tokens:manage: a tenant manages the tokens inside its own namespaces (issue 43)', () => {
    const as = (bearer: string) => ({
      get: (path: string) => request(t.http).get(path).set('Authorization', `Bearer ${bearer}`),
      post: (path: string) => request(t.http).post(path).set('Authorization', `Bearer ${bearer}`),
      patch: (path: string) => request(t.http).patch(path).set('Authorization', `Bearer ${bearer}`),
      delete: (path: string) => request(t.http).delete(path).set('Authorization', `Bearer ${bearer}`),
    });
    let acme: ReturnType<typeof as>;
    let acmeId: string;
    let otherId: string;
    beforeAll(async () => {
      const m = await create({ name: 'acme app', scopes: ['memory:read', 'memory:write', 'tokens:manage'], namespaces: ['acme/*'], rate_limit_per_minute: 500 });
      acme = as(m.plaintext);
      acmeId = m.id;
      otherId = (await create({ name: 'other tenant', preset: 'full', namespaces: ['other'] })).id;
    });
    const ids = async (who: ReturnType<typeof as>) => ((await who.get('/api/tokens').expect(200)).body.tokens as Array<{ id: string }>).map((x) => x.id);

    it('mints a per-user token for acme/alice that works only there; the audit log names the minting token', async () => {
      const res = await acme
        .post('/api/tokens')
        .send({ name: 'alice', scopes: ['memory:read', 'memory:write'], namespaces: ['acme/alice'] })
        .expect(201);
      expect(res.body.token).toMatchObject({ name: 'alice', scopes: ['memory:read', 'memory:write'], namespaces: ['acme/alice'], rate_limit_per_minute: 500 });
      const alice = res.body.plaintext as string;
      const made = await write(alice).expect(201);
      expect(made.body.memory.namespace).toBe('acme/alice');
      const memId = made.body.memory.id as string;
      await request(t.http).get('/api/memories').set('Authorization', `Bearer ${alice}`).set('X-Memory-Namespace', 'acme/bob').expect(403);
      await admin.get(`/api/memories/${memId}`).expect(404); // the admin works in default unless it chooses
      await admin.get(`/api/memories/${memId}`).set('X-Memory-Namespace', 'acme/alice').expect(200);
      const audit = (await admin.get('/api/audit?action=token.create').expect(200)).body.entries as Array<{ target: string; actor: { kind: string; id: string }; detail: unknown }>;
      expect(audit.find((e) => e.target === res.body.token.id)).toMatchObject({ actor: { kind: 'token', id: acmeId }, detail: { namespaces: ['acme/alice'] } });
    });

    it("without namespaces a minted token gets the manager's own binding; it may pass on tokens:manage itself", async () => {
      const res = await acme
        .post('/api/tokens')
        .send({ scopes: ['memory:read', 'tokens:manage'] })
        .expect(201);
      expect(res.body.token.namespaces).toEqual(['acme/*']);
      const sub = await acme
        .post('/api/tokens')
        .send({ scopes: ['tokens:manage'], namespaces: ['acme/team/*'] })
        .expect(201);
      const team = as(sub.body.plaintext);
      await team
        .post('/api/tokens')
        .send({ scopes: ['tokens:manage'], namespaces: ['acme/team/bot'] })
        .expect(201);
      const wider = await team
        .post('/api/tokens')
        .send({ scopes: ['tokens:manage'], namespaces: ['acme/bob'] })
        .expect(403);
      expect(wider.body.error).toContain('acme/bob');
      expect(await ids(team)).not.toContain(acmeId); // acme/* is wider than acme/team/*
    });

    it('refuses (403 naming it) a namespace outside its own, *, a scope it lacks, a rate limit above its own; creates nothing', async () => {
      const before = (await ids(admin)).length;
      for (const [body, named] of [
        [{ namespaces: ['other'] }, 'other'],
        [{ namespaces: ['acme/alice', '*'] }, '*'],
        [{ namespaces: ['acme-corp'] }, 'acme-corp'],
        [{ namespaces: ['acme/alice'], scopes: ['memory:read', 'memory:delete'] }, 'memory:delete'],
        [{ namespaces: ['acme/alice'], scopes: ['metrics:read'] }, 'metrics:read'],
        [{ namespaces: ['acme/alice'], preset: 'full' }, 'memory:delete'],
        [{ namespaces: ['acme/alice'], rate_limit_per_minute: 0 }, 'unlimited'],
        [{ namespaces: ['acme/alice'], rate_limit_per_minute: 501 }, '500'],
      ] as const) {
        const res = await acme.post('/api/tokens').send(body);
        expect({ body, status: res.status }).toEqual({ body, status: 403 });
        expect(res.body.error).toContain(named);
      }
      expect((await ids(admin)).length).toBe(before);
    });

    it("sees, changes, revokes and deletes only tokens inside its binding: another tenant's is absent (404)", async () => {
      const alice = (
        await acme
          .post('/api/tokens')
          .send({ name: 'alice 2', namespaces: ['acme/alice'] })
          .expect(201)
      ).body.token.id as string;
      const listed = await ids(acme);
      expect(listed).toEqual(expect.arrayContaining([acmeId, alice]));
      expect(listed).not.toContain(otherId);
      expect((await admin.get('/api/tokens').expect(200)).body.tokens.map((x: { id: string }) => x.id)).toEqual(expect.arrayContaining([otherId, alice]));
      expect((await acme.patch(`/api/tokens/${otherId}`).send({ name: 'mine now' }).expect(404)).body).toEqual(NOT_FOUND);
      expect((await acme.post(`/api/tokens/${otherId}/revoke`).expect(404)).body).toEqual(NOT_FOUND);
      expect((await acme.delete(`/api/tokens/${otherId}`).expect(404)).body).toEqual(NOT_FOUND);
      const other = (await admin.get('/api/tokens')).body.tokens.find((x: { id: string }) => x.id === otherId);
      expect(other).toMatchObject({ name: 'other tenant', status: 'active' });
      // Its own: changed only into a token it could mint.
      expect(
        (
          await acme
            .patch(`/api/tokens/${alice}`)
            .send({ namespaces: ['other'] })
            .expect(403)
        ).body.error,
      ).toContain('other');
      expect(
        (
          await acme
            .patch(`/api/tokens/${alice}`)
            .send({ scopes: ['memory:delete'] })
            .expect(403)
        ).body.error,
      ).toContain('memory:delete');
      await acme
        .patch(`/api/tokens/${alice}`)
        .send({ name: 'alice renamed', namespaces: ['acme/alice', 'acme/shared'] })
        .expect(200);
      expect((await acme.post(`/api/tokens/${alice}/revoke`).expect(200)).body.token.status).toBe('revoked');
      await acme.delete(`/api/tokens/${alice}`).expect(200);
      expect(await ids(admin)).not.toContain(alice);
    });

    it('a manager that expires mints no token that outlives it (403; by default the token expires with it)', async () => {
      const manager = await create({ scopes: ['memory:read', 'tokens:manage'], namespaces: ['acme/*'], expires_in_days: 7 });
      const m = as(manager.plaintext);
      const made = await m
        .post('/api/tokens')
        .send({ namespaces: ['acme/alice'] })
        .expect(201);
      expect(made.body.token.expires_at).toBe(manager.token.expires_at);
      await m
        .post('/api/tokens')
        .send({ namespaces: ['acme/alice'], expires_in_days: 1 })
        .expect(201);
      expect(
        (
          await m
            .post('/api/tokens')
            .send({ namespaces: ['acme/alice'], expires_in_days: 30 })
            .expect(403)
        ).body.error,
      ).toContain('outlive');
      expect((await m.patch(`/api/tokens/${made.body.token.id}`).send({ clear_expiry: true }).expect(403)).body.error).toContain('outlive');
    });

    it('a manager with an allow-list mints tokens only inside it (by default its own list)', async () => {
      const manager = await create({ scopes: ['memory:read', 'tokens:manage'], namespaces: ['acme/*'], allowed_ips: ['127.0.0.0/8'] });
      const m = as(manager.plaintext);
      const made = await m
        .post('/api/tokens')
        .send({ namespaces: ['acme/alice'] })
        .expect(201);
      expect(made.body.token.allowed_ips).toEqual(['127.0.0.0/8']);
      await m
        .post('/api/tokens')
        .send({ namespaces: ['acme/alice'], allowed_ips: ['127.0.0.1'] })
        .expect(201);
      for (const [wider, named] of [
        [['127.0.0.1', '10.0.0.0/8'], '10.0.0.0/8'],
        [[], 'every address'],
      ] as const) {
        const res = await m
          .post('/api/tokens')
          .send({ namespaces: ['acme/alice'], allowed_ips: wider })
          .expect(403);
        expect(res.body.error).toContain(named);
        expect((await m.patch(`/api/tokens/${made.body.token.id}`).send({ allowed_ips: wider }).expect(403)).body.error).toContain(named);
      }
      expect((await admin.get('/api/tokens')).body.tokens.find((x: { id: string }) => x.id === made.body.token.id).allowed_ips).toEqual(['127.0.0.0/8']);
    });

    it('revoking or deleting a manager token revokes what it minted and what those minted (decision 0163)', async () => {
      const reads = async (bearer: string) => (await read(bearer).set('X-Memory-Namespace', 'acme/team')).status;
      const mint = async (by: ReturnType<typeof as>, scopes: string[]) =>
        (await by.post('/api/tokens').send({ scopes }).expect(201)).body as { token: { id: string; created_by: string | null }; plaintext: string };
      const tokenById = async (id: string) => ((await admin.get('/api/tokens').expect(200)).body.tokens as Array<{ id: string; status: string; revoked_at: string | null }>).find((x) => x.id === id);
      for (const end of ['revoke', 'delete'] as const) {
        const boss = await create({ name: `boss to ${end}`, scopes: ['memory:read', 'tokens:manage'], namespaces: ['acme/*'] });
        const child = await mint(as(boss.plaintext), ['memory:read', 'tokens:manage']);
        const grandchild = await mint(as(child.plaintext), ['memory:read']);
        const bystander = await mint(acme, ['memory:read']);
        expect([child.token.created_by, grandchild.token.created_by, bystander.token.created_by]).toEqual([boss.id, child.token.id, acmeId]);
        expect(await reads(grandchild.plaintext)).toBe(200);
        if (end === 'revoke') await admin.post(`/api/tokens/${boss.id}/revoke`).expect(200);
        else await admin.delete(`/api/tokens/${boss.id}`).expect(200);
        for (const gone of [child, grandchild]) {
          expect(await reads(gone.plaintext)).toBe(401);
          expect(await tokenById(gone.token.id)).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });
        }
        expect(await reads(bystander.plaintext)).toBe(200);
      }
      // A token the administrator made has no minter.
      expect((await admin.post('/api/tokens').send({ preset: 'read-only' }).expect(201)).body.token.created_by).toBeNull();
    });

    it('a token without tokens:manage gets 403 naming the scope on every token route', async () => {
      const plain = as((await create({ preset: 'full', namespaces: ['*'] })).plaintext);
      for (const res of [
        await plain.get('/api/tokens'),
        await plain.post('/api/tokens').send({}),
        await plain.patch(`/api/tokens/${otherId}`).send({}),
        await plain.post(`/api/tokens/${otherId}/revoke`),
        await plain.delete(`/api/tokens/${otherId}`),
      ]) {
        expect(res.status).toBe(403);
        expect(res.body.error).toContain('tokens:manage');
      }
    });
  });

  describe('last_used_at', () => {
    it('is set on first use and not rewritten within a minute', async () => {
      const { id, plaintext } = await create();
      const lastUsed = async () => (await admin.get('/api/tokens')).body.tokens.find((x: { id: string }) => x.id === id).last_used_at;
      expect(await lastUsed()).toBeNull();
      const before = Date.now();
      await read(plaintext).expect(200);
      const first = await lastUsed();
      expect(Date.parse(first)).toBeGreaterThanOrEqual(before - 5);
      await sleep(20);
      await read(plaintext).expect(200);
      expect(await lastUsed()).toBe(first);
    });
  });
});
