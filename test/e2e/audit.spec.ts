import * as fs from 'node:fs';
import * as path from 'node:path';
import * as http from 'node:http';
import request from 'supertest';
import { TokensService } from '../../src/tokens/tokens.service';
import { randomBytes } from 'node:crypto';
import { AUDIT_SPOOL_FILE, AuditService } from '../../src/audit/audit.service';
import { BackendsService } from '../../src/backends/backends.service';
import { newAuditId } from '../../src/backends/ports/audit.repository';
import { ADMIN_PASSWORD, adminAgent, createTestApp, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { parseToken } from '../../src/tokens/token-secret';

type Agent = Awaited<ReturnType<typeof adminAgent>>;
interface Entry {
  id: string;
  at: string;
  action: string;
  outcome: string;
  actor: { kind: string; id: string | null; name: string | null };
  target: string | null;
  address: string | null;
  request_id: string | null;
  detail: Record<string, unknown>;
}

describe.each(testBackends())('audit log on $name', (backend) => {
  let t: TestApp;
  let admin: Agent;
  const secrets: string[] = [ADMIN_PASSWORD];

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    await t.app.listen(0, '127.0.0.1'); // a real socket, for the upload cut off half-way
    admin = await adminAgent(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const all = async (query = ''): Promise<Entry[]> => (await admin.get(`/api/audit?limit=200${query}`).expect(200)).body.entries;
  /** Runs `act` and returns the entries it added (exactly those, newest first). */
  async function added(act: () => Promise<unknown>): Promise<Entry[]> {
    const before = new Set((await all()).map((e) => e.id));
    await act();
    return (await all()).filter((e) => !before.has(e.id));
  }

  it('records a sign-in and a failed sign-in, once each, with the address and no password', async () => {
    const ok = await added(() => request(t.http).post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200));
    expect(ok).toEqual([expect.objectContaining({ action: 'admin.login', outcome: 'success', actor: { kind: 'admin', id: 'admin', name: 'admin' }, target: null })]);
    expect(ok[0].address).toMatch(/127\.0\.0\.1/);
    const bad = await added(() => request(t.http).post('/api/login').send({ username: 'admin', password: 'hunter2-wrong' }).expect(401));
    expect(bad).toEqual([
      expect.objectContaining({ action: 'admin.login', outcome: 'failure', actor: { kind: 'anonymous', id: null, name: null }, detail: { username: 'admin', status: 401, error: expect.any(String) } }),
    ]);
    secrets.push('hunter2-wrong');
  });

  it('records a sign-out that ends a session, an export, a migration attempt and a failed import; not an anonymous sign-out (issue 46)', async () => {
    const session = request.agent(t.http);
    await session.post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200);
    expect(await added(() => session.post('/api/logout').expect(200))).toEqual([
      expect.objectContaining({ action: 'admin.logout', outcome: 'success', actor: { kind: 'admin', id: 'admin', name: 'admin' } }),
    ]);
    expect(await added(() => request(t.http).post('/api/logout').expect(200))).toEqual([]);

    const tok = await admin.post('/api/tokens').send({ name: 'exporter', preset: 'read-write' }).expect(201);
    secrets.push(tok.body.plaintext);
    const bearer = `Bearer ${tok.body.plaintext}`;
    const exported = await added(() => request(t.http).get('/api/export?project=nothing-here').set('Authorization', bearer).expect(200));
    expect(exported).toEqual([
      expect.objectContaining({ action: 'memory.export', outcome: 'success', actor: { kind: 'token', id: tok.body.token.id, name: 'exporter' }, detail: { filters: { project: 'nothing-here' } } }),
    ]);

    const migrated = await added(() => admin.post('/api/migrate').expect(409));
    expect(migrated).toEqual([expect.objectContaining({ action: 'backend.migrate', outcome: 'failure', detail: { status: 409, error: expect.any(String) } })]);

    // An upload cut off half-way by the client: recorded as a failed, aborted import.
    const url = new URL('/api/import?format=jsonl', `http://127.0.0.1:${(t.http.address() as { port: number }).port}`);
    const before = new Set((await all()).map((e) => e.id));
    await new Promise<void>((resolve) => {
      const req = http.request(url, { method: 'POST', headers: { Authorization: bearer, 'Content-Type': 'application/x-ndjson', 'Content-Length': '100000' } });
      req.on('error', () => resolve());
      req.write('{"content":"half an upl');
      setTimeout(() => {
        req.destroy();
        resolve();
      }, 200);
    });
    let aborted: Entry[] = [];
    for (let i = 0; i < 50 && aborted.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      aborted = (await all()).filter((e) => !before.has(e.id));
    }
    expect(aborted).toEqual([
      expect.objectContaining({ action: 'memory.import', outcome: 'failure', actor: expect.objectContaining({ id: tok.body.token.id }), detail: expect.objectContaining({ aborted: true }) }),
    ]);
  });

  it('records refused tokens by token id, never the secret, at most once a minute per address (issue 46)', async () => {
    const tok = await admin.post('/api/tokens').send({ name: 'soon revoked', preset: 'read-only' }).expect(201);
    const id = tok.body.token.id as string;
    secrets.push(tok.body.plaintext);
    await admin.post(`/api/tokens/${id}/revoke`).expect(200);
    const refused = await added(async () => {
      for (let i = 0; i < 5; i++) await request(t.http).get('/api/memories').set('Authorization', `Bearer ${tok.body.plaintext}`).expect(401);
      await request(t.http).get('/api/memories').set('Authorization', 'Bearer mem_tok_0123456789abcdef_not-a-real-secret').expect(401);
    });
    // The first refusal from this address in this minute is an entry; the other five are counted into the next one.
    expect(refused).toEqual([
      expect.objectContaining({
        action: 'token.refused',
        outcome: 'failure',
        target: id,
        actor: { kind: 'anonymous', id: null, name: null },
        detail: { status: 401, error: expect.stringMatching(/revoked/), unrecorded_before: expect.any(Number) },
      }),
    ]);
    secrets.push('not-a-real-secret');
  });

  it('queues an entry the document database refuses in a local spool, and records it once the database takes entries again', async () => {
    const audit = t.app.get(BackendsService).docdb.audit;
    const failing = jest.spyOn(audit, 'append').mockRejectedValue(new Error('database down'));
    let id: string;
    try {
      // The action is confirmed: its entry is on local disk, not lost.
      id = (await admin.post('/api/tokens').send({ name: 'spooled' }).expect(201)).body.token.id as string;
      expect(fs.readFileSync(path.join(t.cfg.dataDir, AUDIT_SPOOL_FILE), 'utf8')).toContain(id);
    } finally {
      failing.mockRestore();
    }
    await t.app.get(AuditService).replaySpool();
    expect(fs.existsSync(path.join(t.cfg.dataDir, AUDIT_SPOOL_FILE))).toBe(false);
    const entries = (await admin.get('/api/audit').query({ action: 'token.create' }).expect(200)).body.entries as Array<{ target: string }>;
    expect(entries.filter((e) => e.target === id)).toHaveLength(1);
  });

  it('fails the action with a 503 naming the document database when its audit entry cannot be written, not even to the local spool (issue 46)', async () => {
    const audit = t.app.get(BackendsService).docdb.audit;
    const failing = jest.spyOn(audit, 'append').mockRejectedValue(new Error('disk full'));
    // The local spool cannot be written either (a directory stands where its file would go).
    const spool = path.join(t.cfg.dataDir, AUDIT_SPOOL_FILE);
    fs.mkdirSync(spool);
    try {
      const res = await admin.post('/api/tokens').send({ name: 'unaudited' }).expect(503);
      expect(res.body).toEqual({ ok: false, error: expect.stringMatching(/^Document database unavailable: .*audit.*disk full/) });
      // A sign-in that cannot be recorded opens no session.
      const agent = request.agent(t.http);
      await agent.post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(503);
      expect((await agent.get('/api/me').expect(200)).body.authenticated).toBe(false);
      // An export that cannot be recorded sends nothing.
      const tok = await t.app.get(TokensService).create({ name: 'reader', preset: 'read-only' } as never);
      const exp = await request(t.http).get('/api/export').set('Authorization', `Bearer ${tok.plaintext}`).expect(503);
      expect(exp.headers['content-type']).toMatch(/application\/json/);
      secrets.push(tok.plaintext);
    } finally {
      failing.mockRestore();
      fs.rmdirSync(spool);
    }
    await admin.get('/api/me').expect(200);
  });

  it('records token create, update, revoke and delete, once each, with the token id as target and never its secret', async () => {
    let id = '';
    const created = await added(async () => {
      const res = await admin.post('/api/tokens').send({ name: 'audited bot', preset: 'full' }).expect(201);
      id = res.body.token.id;
      secrets.push(res.body.plaintext, parseToken(res.body.plaintext)!.secret); // the secret may contain '_'
    });
    expect(created).toEqual([
      expect.objectContaining({
        action: 'token.create',
        outcome: 'success',
        target: id,
        actor: expect.objectContaining({ kind: 'admin' }),
        detail: { name: 'audited bot', scopes: ['memory:read', 'memory:write', 'memory:delete'], namespaces: ['default'] },
      }),
    ]);
    const updated = await added(() => admin.patch(`/api/tokens/${id}`).send({ name: 'renamed bot', allowed_ips: [] }).expect(200));
    expect(updated).toEqual([expect.objectContaining({ action: 'token.update', target: id, detail: { fields: ['allowed_ips', 'name'] } })]);
    const revoked = await added(() => admin.post(`/api/tokens/${id}/revoke`).expect(200));
    expect(revoked).toEqual([expect.objectContaining({ action: 'token.revoke', target: id, outcome: 'success' })]);
    const deleted = await added(() => admin.delete(`/api/tokens/${id}`).expect(200));
    expect(deleted).toEqual([expect.objectContaining({ action: 'token.delete', target: id, outcome: 'success' })]);
    const missing = await added(() => admin.delete(`/api/tokens/${id}`).expect(404));
    expect(missing).toEqual([expect.objectContaining({ action: 'token.delete', target: id, outcome: 'failure', detail: { status: 404, error: 'Token not found' } })]);
  });

  it('records a settings change by key names only, and a backend test with its outcome', async () => {
    const secret = `s3-secret-${randomBytes(8).toString('hex')}`;
    secrets.push(secret);
    const saved = await added(() => admin.post('/api/config').send({ objstore_presign_ttl: 900, objstore_secret_access_key: secret }).expect(200));
    expect(saved).toEqual([expect.objectContaining({ action: 'settings.update', outcome: 'success', detail: { keys: ['objstore_presign_ttl', 'objstore_secret_access_key'] } })]);
    await admin.post('/api/config').send({ objstore_secret_access_key: '' }).expect(200);
    const tested = await added(() => admin.post('/api/test').send({ target: 'docdb' }).expect(200));
    expect(tested).toEqual([expect.objectContaining({ action: 'backend.test', outcome: 'success', target: 'docdb', detail: { docdb: true } })]);
  });

  it('records memory delete and bulk delete by a token, with the token id and name, and never memory content', async () => {
    const res = await admin.post('/api/tokens').send({ name: 'cleaner', preset: 'full' }).expect(201);
    const bearer = `Bearer ${res.body.plaintext}`;
    const tokenId = res.body.token.id;
    secrets.push(res.body.plaintext);
    const content = `confidential memory ${randomBytes(6).toString('hex')}`;
    secrets.push(content);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await request(t.http).post('/api/memories').set('Authorization', bearer).send({ title: content, content }).expect(201)).body.memory.id);
    const one = await added(() => request(t.http).delete(`/api/memories/${ids[0]}`).set('Authorization', bearer).expect(200));
    expect(one).toEqual([expect.objectContaining({ action: 'memory.delete', outcome: 'success', target: ids[0], actor: { kind: 'token', id: tokenId, name: 'cleaner' } })]);
    const bulk = await added(() =>
      request(t.http)
        .post('/api/memories/bulk-delete')
        .set('Authorization', bearer)
        .send({ ids: [ids[1], ids[2], 'ffffffffffffffffffffffff'] })
        .expect(200),
    );
    expect(bulk).toEqual([
      expect.objectContaining({ action: 'memory.bulk_delete', actor: { kind: 'token', id: tokenId, name: 'cleaner' }, detail: { requested: 3, deleted: 2, ids: [ids[1], ids[2]] } }),
    ]);
    // An import that changes memories is recorded with its counts (a dry run is not).
    const jsonl = Buffer.from(JSON.stringify({ content: 'imported by the cleaner', title: 'imp' }) + '\n');
    const importing = (q: string) => request(t.http).post(`/api/import?format=jsonl${q}`).set('Authorization', bearer).set('Content-Type', 'application/x-ndjson').send(jsonl).expect(200);
    expect(await added(() => importing('&dry_run=true'))).toEqual([]);
    expect(await added(() => importing(''))).toEqual([
      expect.objectContaining({ action: 'memory.import', outcome: 'success', actor: { kind: 'token', id: tokenId, name: 'cleaner' }, detail: { created: 1, updated: 0, skipped: 0, invalid: 0 } }),
    ]);
    // Reads and writes are not audited.
    expect(await added(() => request(t.http).get('/api/memories').set('Authorization', bearer).expect(200))).toEqual([]);
    // Filters: by actor, and by action.
    expect((await all(`&actor=${tokenId}`)).map((e) => e.action)).toEqual(['memory.import', 'memory.bulk_delete', 'memory.delete']);
    expect((await all('&action=memory.delete')).map((e) => e.target)).toEqual([ids[0]]);
  });

  it('never holds a secret, a password or memory content', async () => {
    const text = JSON.stringify(await all());
    for (const s of secrets) expect(text).not.toContain(s);
  });

  it('pages newest first with next_cursor, and filters by since', async () => {
    const total = (await all()).length;
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: request.Response = await admin.get(`/api/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`).expect(200);
      expect(res.body.entries.length).toBeLessThanOrEqual(3);
      seen.push(...res.body.entries.map((e: Entry) => e.id));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(total);
    expect([...seen].sort().reverse()).toEqual(seen);
    expect(await all(`&since=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
    expect((await all(`&since=${new Date(Date.now() - 600_000).toISOString()}`)).length).toBe(total);
  });

  it('refuses bad queries with 422 and tokens with 403', async () => {
    for (const q of ['limit=0', 'limit=500', 'cursor=zzz', 'action=memory.read', 'since=yesterday']) {
      const res = await admin.get(`/api/audit?${q}`).expect(422);
      expect(res.body.ok).toBe(false);
    }
    const token = await admin.post('/api/tokens').send({ preset: 'full' }).expect(201);
    await request(t.http).get('/api/audit').set('Authorization', `Bearer ${token.body.plaintext}`).expect(403);
    await request(t.http).get('/api/audit').expect(401);
  });

  it('prunes entries older than the retention period', async () => {
    const db = t.app.get(BackendsService).docdb;
    const at = new Date(Date.now() - 91 * 86_400_000);
    await db.audit.append({
      id: newAuditId(at, randomBytes(6).toString('hex')),
      at,
      action: 'token.create',
      outcome: 'success',
      actor: { kind: 'admin', id: 'admin', name: 'admin' },
      target: null,
      address: null,
      requestId: null,
      detail: {},
    });
    const before = (await all()).length;
    expect(await t.app.get(AuditService).prune()).toBe(1);
    expect((await all()).length).toBe(before - 1);
  });
});
