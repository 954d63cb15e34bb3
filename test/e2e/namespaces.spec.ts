/**
 * Issue 43: hard tenant isolation, on every backend pair, with the local embedding model (so the
 * semantic and hybrid searches and the duplicate hints really look at vectors). Tokens of two
 * namespaces (A: acme/a, B: acme/b), one bound to acme/* and one to *: every REST memory route and
 * every MCP tool, resource and prompt is walked as A against B's memory, and A can neither read,
 * find, count, hint, export, restore, download, modify nor delete it. The app runs with namespace
 * quotas (6 memories, 6,000 bytes; decision 0156), which the other cases stay below.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import Database from 'better-sqlite3';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import request from 'supertest';
import { adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { ObjectStore } from '../../src/backends/ports/object-store.port';
import { binaryParser, makeZip, unzip } from '../support/zip';

jest.setTimeout(120_000);

interface Caller {
  get(url: string): request.Test;
  post(url: string, body?: unknown): request.Test;
  patch(url: string, body?: unknown): request.Test;
  delete(url: string): request.Test;
  bearer: string;
}

describe.each(testBackends())('namespaces on $name', (backend) => {
  let t: TestApp;
  let base: string;
  let A: Caller;
  let B: Caller;
  let star: Caller;
  let acme: Caller;
  let legacy: Caller;
  const open: Client[] = [];
  /** B's memory (two versions), A's look-alike. */
  let secret: { id: string };
  let mine: { id: string };
  const WORD = 'quetzalword';
  const MAX_MEMORIES = 6;
  const MAX_BYTES = 6000;
  const SECRET_TEXT = `The payroll export runs every Friday at noon through the ${WORD} batch job of the finance team.`;

  function caller(bearer: string): Caller {
    const auth = (r: request.Test) => r.set('Authorization', `Bearer ${bearer}`);
    return {
      bearer,
      get: (url) => auth(request(t.http).get(url)),
      post: (url, body) => auth(request(t.http).post(url)).send(body as object),
      patch: (url, body) => auth(request(t.http).patch(url)).send(body as object),
      delete: (url) => auth(request(t.http).delete(url)),
    };
  }
  const token = async (namespaces: string[] | undefined, preset = 'full') =>
    caller((await createToken(t, { name: `ns ${namespaces?.join(',') ?? 'none'}`, preset, rate_limit_per_minute: 0, ...(namespaces ? { namespaces } : {}) })).plaintext);

  const settle = async () => {
    const end = Date.now() + 60_000;
    while ((await star.get('/api/status').expect(200)).body.embeddings.pending !== 0) {
      if (Date.now() > end) throw new Error('embeddings still pending');
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  async function mcp(bearer: string, headers: Record<string, string> = {}): Promise<Client> {
    const client = new Client({ name: 'memstore-ns', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${bearer}`, ...headers } } }));
    open.push(client);
    return client;
  }

  beforeAll(async () => {
    t = await createTestApp({ ...(await backend.env()), MEMSTORE_EMBEDDING_PROVIDER: '', MEMSTORE_NAMESPACE_MAX_MEMORIES: String(MAX_MEMORIES), MEMSTORE_NAMESPACE_MAX_BYTES: String(MAX_BYTES) });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    A = await token(['acme/a']);
    B = await token(['acme/b']);
    star = await token(['*']);
    acme = await token(['acme/*']);
    legacy = await token(undefined);
    secret = (await B.post('/api/memories', { title: 'Payroll export', content: SECRET_TEXT, project: 'fin', tags: ['payroll'] }).expect(201)).body.memory;
    await B.patch(`/api/memories/${secret.id}`, { title: 'Payroll export (v2)' }).expect(200);
    mine = (await A.post('/api/memories', { title: 'Garden', content: `Water the tomatoes on Mondays; ${WORD} is the name of the hose.`, project: 'fin' }).expect(201)).body.memory;
    await settle();
  });
  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await t?.close();
  });

  it('binds tokens: default ["default"], entries checked (422), answers name the namespace', async () => {
    const admin = await adminAgent(t);
    const made = await admin.post('/api/tokens').send({ name: 'plain', preset: 'read-only' }).expect(201);
    expect(made.body.token.namespaces).toEqual(['default']);
    const bad = await admin
      .post('/api/tokens')
      .send({ name: 'bad', namespaces: ['Acme'] })
      .expect(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'namespaces', 0]);
    await admin
      .post('/api/tokens')
      .send({ name: 'bad', namespaces: ['acme/**'] })
      .expect(422);
    expect((await B.get(`/api/memories/${secret.id}`).expect(200)).body.memory.namespace).toBe('acme/b');
  });

  it('GET /api/namespaces: each caller sees its own namespaces with memories and bytes, by name, paged', async () => {
    const names = (body: { namespaces: Array<{ namespace: string }> }) => body.namespaces.map((n) => n.namespace);
    const mineBytes = Buffer.byteLength(`Water the tomatoes on Mondays; ${WORD} is the name of the hose.`);
    const a = (await A.get('/api/namespaces').expect(200)).body;
    expect(a).toEqual({
      ok: true,
      namespaces: [{ namespace: 'acme/a', memories: 1, bytes: mineBytes }],
      has_next: false,
      next_cursor: null,
      quota: { max_memories: MAX_MEMORIES, max_bytes: MAX_BYTES },
    });
    // A prefix binding sees what holds memories under it; an exact name is listed even when empty; nothing of default.
    expect((await acme.get('/api/namespaces').expect(200)).body.namespaces).toEqual([
      { namespace: 'acme/a', memories: 1, bytes: mineBytes },
      { namespace: 'acme/b', memories: 1, bytes: Buffer.byteLength(SECRET_TEXT) },
    ]);
    const mixed = await token(['acme/empty', 'acme/b', 'zeta/*']);
    expect(names((await mixed.get('/api/namespaces').expect(200)).body)).toEqual(['acme/b', 'acme/empty']);
    // '*' and the admin see all; pages follow next_cursor.
    expect(names((await star.get('/api/namespaces').expect(200)).body)).toEqual(['acme/a', 'acme/b']);
    const admin = await adminAgent(t);
    expect(names((await admin.get('/api/namespaces').expect(200)).body)).toEqual(['acme/a', 'acme/b']);
    const first = (await star.get('/api/namespaces?limit=1').expect(200)).body;
    expect([names(first), first.has_next, first.next_cursor]).toEqual([['acme/a'], true, 'acme/a']);
    const second = (await star.get(`/api/namespaces?limit=1&after=${first.next_cursor}`).expect(200)).body;
    expect([names(second), second.has_next, second.next_cursor]).toEqual([['acme/b'], false, null]);
    // The header narrows to one namespace, within the binding only.
    expect(names((await acme.get('/api/namespaces').set('X-Memory-Namespace', 'acme/b').expect(200)).body)).toEqual(['acme/b']);
    expect((await A.get('/api/namespaces').set('X-Memory-Namespace', 'acme/b').expect(403)).body.error).toContain('acme/b');
    // Bad input and a token without memory:read.
    await A.get('/api/namespaces?limit=0').expect(422);
    await A.get('/api/namespaces?bogus=1').expect(422);
    const writeOnly = caller((await createToken(t, { name: 'w', scopes: ['memory:write'], namespaces: ['acme/a'] })).plaintext);
    await writeOnly.get('/api/namespaces').expect(403);
  });

  it('REST: A cannot read, find, count, hint, export, download, restore, modify or delete B’s memory', async () => {
    const id = secret.id;
    for (const url of [`/api/memories/${id}`, `/api/memories/${id}/download`, `/api/memories/${id}/download?url=true`, `/api/memories/${id}/versions`, `/api/memories/${id}/versions/1`]) {
      const res = await A.get(url);
      expect({ url, status: res.status }).toEqual({ url, status: 404 });
    }
    await A.post(`/api/memories/${id}/versions/1/restore`).expect(404);
    await A.patch(`/api/memories/${id}`, { content: 'overwritten by A' }).expect(404);
    await A.delete(`/api/memories/${id}`).expect(404);
    expect((await A.post('/api/memories/bulk-delete', { ids: [id] }).expect(200)).body).toMatchObject({ deleted: 0, missing: [id] });

    // min_score 0: every candidate the search has, however weak, so no relevance floor hides a leak.
    for (const mode of ['keyword', 'semantic', 'hybrid']) {
      const found = (await A.get(`/api/memories?${new URLSearchParams({ q: `${WORD} payroll export friday`, mode, min_score: '0' })}`).expect(200)).body;
      expect({ mode, ids: found.rows.map((r: { id: string }) => r.id) }).toEqual({ mode, ids: [mine.id] });
      expect(found.total).toBe(1);
      // The same query from B finds B's memory: the search itself works.
      const theirs = (await B.get(`/api/memories?${new URLSearchParams({ q: `${WORD} payroll export friday`, mode, min_score: '0' })}`).expect(200)).body;
      expect(theirs.rows.map((r: { id: string }) => r.id)).toEqual([id]);
    }
    expect((await A.get('/api/memories?project=fin').expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([mine.id]);
    expect((await A.get('/api/stats').expect(200)).body.stats).toMatchObject({ total: 1, by_project: { fin: 1 } });
    // Duplicate hints: a near-copy of B's memory written by A names nothing of B's; written by B it does.
    const copyA = await A.post('/api/memories', { title: 'Payroll export', content: SECRET_TEXT, project: 'fin' }).expect(201);
    expect(copyA.body.similar.map((s: { id: string }) => s.id)).not.toContain(id);
    const copyB = await B.post('/api/memories', { title: 'Payroll export', content: SECRET_TEXT, project: 'fin' }).expect(201);
    expect(copyB.body.similar.map((s: { id: string }) => s.id)).toContain(id);
    await A.delete(`/api/memories/${copyA.body.memory.id}`).expect(200);
    await B.delete(`/api/memories/${copyB.body.memory.id}`).expect(200);

    // Export: only A's namespace.
    const zip = await A.get('/api/export')
      .buffer(true)
      .parse(binaryParser as never)
      .expect(200);
    const files = [...(await unzip(zip.body as Buffer)).keys()].filter((f) => f.startsWith('memories/'));
    expect(files).toEqual([`memories/${mine.id}.md`]);

    // B's memory is untouched: same version, same content.
    const after = (await B.get(`/api/memories/${id}`).expect(200)).body.memory;
    expect(after).toMatchObject({ version: 2, title: 'Payroll export (v2)', content: SECRET_TEXT });
  });

  it('import goes into the request’s namespace; an archive naming B’s id makes a copy in A, B’s memory stays', async () => {
    const file = (await B.get(`/api/memories/${secret.id}/download`).expect(200)).text.replace(SECRET_TEXT, 'planted by A');
    const archive = await makeZip({ [`memories/${secret.id}.md`]: file });
    const res = await request(t.http).post('/api/import').set('Authorization', `Bearer ${A.bearer}`).set('Content-Type', 'application/zip').send(archive).expect(200);
    expect(res.body.created).toBe(1);
    const copyId = res.body.items.find((i: { status: string }) => i.status === 'created').id;
    expect(copyId).not.toBe(secret.id);
    expect((await A.get(`/api/memories/${copyId}`).expect(200)).body.memory).toMatchObject({ namespace: 'acme/a', content: 'planted by A' });
    expect((await B.get(`/api/memories/${secret.id}`).expect(200)).body.memory.content).toBe(SECRET_TEXT);
    await A.delete(`/api/memories/${copyId}`).expect(200);
  });

  it('choosing a namespace: 403 outside the binding (naming it), 400 when ambiguous or contradictory, * and prefixes work', async () => {
    const forbidden = await A.get('/api/memories').set('X-Memory-Namespace', 'acme/b').expect(403);
    expect(forbidden.body.error).toContain('acme/b');
    await A.get('/api/memories?namespace=acme/b').expect(403);
    await A.post('/api/memories', { content: 'x', namespace: 'acme/b' }).expect(403);
    const ambiguous = await acme.get('/api/memories').expect(400);
    expect(ambiguous.body.error).toMatch(/X-Memory-Namespace|x-memory-namespace/i);
    await A.get('/api/memories?namespace=acme/a').set('X-Memory-Namespace', 'acme/b').expect(400);
    await A.get('/api/memories').set('X-Memory-Namespace', 'Not A Name').expect(400);
    expect((await acme.get('/api/memories?namespace=acme/b').expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([secret.id]);
    expect((await star.get(`/api/memories/${secret.id}`).set('X-Memory-Namespace', 'acme/b').expect(200)).body.memory.id).toBe(secret.id);
    // A token bound to * (and the admin) works in default without a choice; a token from before namespaces is default's.
    await star.get(`/api/memories/${secret.id}`).expect(404);
    const d = (await legacy.post('/api/memories', { content: 'in default' }).expect(201)).body.memory;
    expect(d.namespace).toBe('default');
    expect((await star.get(`/api/memories/${d.id}`).expect(200)).body.memory.id).toBe(d.id);
    const admin = await adminAgent(t);
    expect((await admin.get(`/api/memories?namespace=acme/b`).expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([secret.id]);
    await admin.get(`/api/memories/${secret.id}`).expect(404);
  });

  it('purge: deletes a namespace (or a project in it), resumable, with a receipt in the audit log; nothing left in the index, the object store or the idempotency records', async () => {
    const C = (r: request.Test) => r.set('X-Memory-Namespace', 'acme/c');
    const bodies = [{ content: 'c one', project: 'p' }, { content: 'c two' }, { content: 'c three' }];
    // Created with an Idempotency-Key: a repeat within a day would replay the stored answer (the whole memory).
    const create = (i: number) => C(acme.post('/api/memories', bodies[i])).set('Idempotency-Key', `purge-${i}`);
    const ids: string[] = [];
    for (let i = 0; i < bodies.length; i++) ids.push((await create(i).expect(201)).body.memory.id);
    const keep = () => acme.post('/api/memories', { content: 'kept elsewhere' }).set('X-Memory-Namespace', 'acme/keep').set('Idempotency-Key', 'purge-0');
    const kept = (await keep().expect(201)).body.memory.id;
    await C(acme.patch(`/api/memories/${ids[1]}`, { content: 'c two, edited' })).expect(200);
    await acme.post('/api/namespaces/purge', {}).expect(400); // ambiguous
    await star.post('/api/namespaces/purge', {}).expect(400); // resolvable to default, but a purge must name its namespace
    await A.post('/api/namespaces/purge', { namespace: 'acme/c' }).expect(403);
    // The running counts and usage (SQLite) keep no row naming what a purge deleted.
    const counted = () => {
      if (backend.docdb !== 'sqlite') return [];
      const db = new Database(path.join(t.dataDir, 'memstore.db'), { readonly: true });
      try {
        const counts = db.prepare("SELECT dim || '=' || key AS k FROM memory_counts WHERE namespace = 'acme/c' ORDER BY 1").pluck().all() as string[];
        const usage = db.prepare("SELECT 'usage' FROM namespace_usage WHERE namespace = 'acme/c'").pluck().all() as string[];
        return [...counts.filter((k) => k.startsWith('project=')), ...usage];
      } finally {
        db.close();
      }
    };
    if (backend.docdb === 'sqlite') expect(counted()).toEqual(['project=', 'project=p', 'usage']);
    expect((await C(acme.post('/api/namespaces/purge', { project: 'p' })).expect(200)).body).toMatchObject({ namespace: 'acme/c', deleted: 1 });
    expect(counted()).toEqual(backend.docdb === 'sqlite' ? ['project=', 'usage'] : []);
    // The purged memory's key answers no more (the request runs again); the others still replay.
    const again = await create(0).expect(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.body.memory.id).not.toBe(ids[0]);
    const replayed = await create(1).expect(201);
    expect([replayed.headers['idempotent-replayed'], replayed.body.memory.id]).toEqual(['true', ids[1]]);
    expect((await C(acme.post('/api/namespaces/purge', {})).expect(200)).body).toMatchObject({ namespace: 'acme/c', deleted: 3 });
    expect(counted()).toEqual([]);
    for (const i of [1, 2]) expect((await create(i).expect(201)).headers['idempotent-replayed']).toBeUndefined();
    expect((await C(acme.post('/api/namespaces/purge', {})).expect(200)).body.deleted).toBe(2);
    expect((await C(acme.post('/api/namespaces/purge', {})).expect(200)).body.deleted).toBe(0); // again: nothing left
    expect((await C(acme.get('/api/memories')).expect(200)).body.total).toBe(0);
    for (const id of ids) await C(acme.get(`/api/memories/${id}/versions`)).expect(404);
    const left: string[] = [];
    for await (const key of t.app.get(ObjectStore).list('ns/acme/c/')) left.push(key);
    expect(left).toEqual([]);
    const audit = await (await adminAgent(t)).get('/api/audit?action=namespace.purge').expect(200);
    expect(audit.body.entries[0]).toMatchObject({ action: 'namespace.purge', target: 'acme/c' });
    expect((await B.get(`/api/memories/${secret.id}`).expect(200)).body.memory.version).toBe(2);
    // Another namespace's record under the same key is untouched.
    const other = await keep().expect(201);
    expect([other.headers['idempotent-replayed'], other.body.memory.id]).toEqual(['true', kept]);
  });

  it('MCP: every tool, resource and prompt of A stays in acme/a', async () => {
    const a = await mcp(A.bearer);
    const id = secret.id;
    const text = (r: unknown) => JSON.stringify(r);
    for (const [name, args] of [
      ['get_memory', { id }],
      ['update_memory', { id, content: 'overwritten over MCP' }],
      ['delete_memory', { id }],
    ] as const) {
      const r = await a.callTool({ name, arguments: args });
      expect({ name, isError: r.isError }).toEqual({ name, isError: true });
    }
    for (const mode of ['keyword', 'semantic', 'hybrid'] as const) {
      const s = await a.callTool({ name: 'search_memories', arguments: { q: `${WORD} payroll export friday`, mode, min_score: 0 } });
      expect((s.structuredContent as { rows: Array<{ id: string }> }).rows.map((r) => r.id)).toEqual([mine.id]);
    }
    expect(text((await a.callTool({ name: 'list_recent', arguments: {} })).structuredContent)).not.toContain(id);
    expect((await a.callTool({ name: 'memory_stats', arguments: {} })).structuredContent).toMatchObject({ stats: { total: 1 } });
    const recall = await a.callTool({ name: 'recall_context', arguments: { task: 'run the payroll export on Friday' } });
    expect(text(recall.structuredContent)).not.toContain(id);
    expect(text(recall.structuredContent)).not.toContain('finance team');
    const created = await a.callTool({ name: 'create_memory', arguments: { title: 'Payroll export', content: SECRET_TEXT } });
    expect(text(created.structuredContent)).not.toContain(id);
    await A.delete(`/api/memories/${(created.structuredContent as { memory: { id: string } }).memory.id}`).expect(200);
    // The namespace argument: outside the binding is refused, naming it.
    const other = await a.callTool({ name: 'list_recent', arguments: { namespace: 'acme/b' } });
    expect(other.isError).toBe(true);
    expect(text(other.content)).toContain('acme/b');
    // Resources: memory://<B's id> is not found; the list has only A's.
    await expect(a.readResource({ uri: `memory://${id}` })).rejects.toThrow();
    expect(text(await a.listResources())).not.toContain(id);
    // A multi-namespace token chooses with the argument, or with the header for resources.
    const m = await mcp(acme.bearer);
    expect((await m.callTool({ name: 'list_recent', arguments: {} })).isError).toBe(true);
    const theirs = await m.callTool({ name: 'get_memory', arguments: { id, namespace: 'acme/b' } });
    expect((theirs.structuredContent as { memory: { content: string } }).memory.content).toBe(SECRET_TEXT);
    const viaHeader = await mcp(acme.bearer, { 'X-Memory-Namespace': 'acme/b' });
    expect(((await viaHeader.readResource({ uri: `memory://${id}` })).contents[0] as { text: string }).text).toContain(SECRET_TEXT);
    // Prompts only phrase instructions; they carry no memory.
    const prompts = await a.listPrompts();
    for (const p of prompts.prompts) {
      const got = await a.getPrompt({ name: p.name, arguments: p.arguments?.some((x) => x.name === 'topic') ? { topic: 'payroll' } : {} }).catch(() => null);
      expect(text(got)).not.toContain(SECRET_TEXT);
    }
    expect((await B.get(`/api/memories/${id}`).expect(200)).body.memory).toMatchObject({ version: 2, content: SECRET_TEXT });
  });

  it('quotas: a create, update or import over a namespace quota is a 403 naming the quota, the namespace, the limit and the usage', async () => {
    const inNs = (ns: string, r: request.Test) => r.set('X-Memory-Namespace', ns);
    // Memories: six fit, the seventh is refused; after a delete there is room again.
    const ids: string[] = [];
    for (let i = 0; i < MAX_MEMORIES; i++) ids.push((await inNs('acme/q', acme.post('/api/memories', { content: `quota note ${i}` })).expect(201)).body.memory.id);
    const over = await inNs('acme/q', acme.post('/api/memories', { content: 'one too many' })).expect(403);
    expect(over.body).toMatchObject({ ok: false, code: 'namespace_quota_exceeded', quota: { name: 'memories', namespace: 'acme/q', limit: MAX_MEMORIES, used: MAX_MEMORIES, requested: 1 } });
    expect(over.body.error).toContain('acme/q');
    await inNs('acme/q', acme.delete(`/api/memories/${ids[0]}`)).expect(200);
    await inNs('acme/q', acme.post('/api/memories', { content: 'fits again' })).expect(201);
    // Over MCP too (the same write path).
    const viaMcp = await (await mcp(acme.bearer)).callTool({ name: 'create_memory', arguments: { content: 'mcp one too many', namespace: 'acme/q' } });
    expect(viaMcp.isError).toBe(true);
    expect(JSON.stringify(viaMcp.content)).toContain('quota');
    // Bytes: a create or an update that grows the content past the quota is refused; shrinking always works.
    const big = (await inNs('acme/qb', acme.post('/api/memories', { content: 'x'.repeat(5000) })).expect(201)).body.memory;
    const tooBig = await inNs('acme/qb', acme.post('/api/memories', { content: 'y'.repeat(1500) })).expect(403);
    expect(tooBig.body.quota).toEqual({ name: 'bytes', namespace: 'acme/qb', limit: MAX_BYTES, used: 5000, requested: 1500 });
    await inNs('acme/qb', acme.patch(`/api/memories/${big.id}`, { content: 'x'.repeat(5900) })).expect(200);
    const grown = await inNs('acme/qb', acme.patch(`/api/memories/${big.id}`, { content: 'x'.repeat(6500) })).expect(403);
    expect(grown.body.quota).toMatchObject({ name: 'bytes', used: 5900, requested: 600 });
    await inNs('acme/qb', acme.patch(`/api/memories/${big.id}`, { content: 'small now' })).expect(200);
    // Import stops at the first memory over the quota; what came before stays and is counted in the answer.
    const files: Record<string, string> = {};
    for (let i = 0; i < MAX_MEMORIES + 3; i++) files[`notes/n${i}.md`] = `# Note ${i}\n\nimported quota note number ${i}`;
    const res = await request(t.http)
      .post('/api/import')
      .set('Authorization', `Bearer ${acme.bearer}`)
      .set('X-Memory-Namespace', 'acme/qi')
      .set('Content-Type', 'application/zip')
      .send(await makeZip(files))
      .expect(403);
    expect(res.body).toMatchObject({ code: 'namespace_quota_exceeded', quota: { name: 'memories', namespace: 'acme/qi', limit: MAX_MEMORIES, used: MAX_MEMORIES }, report: { created: MAX_MEMORIES } });
    // With progress=true the stop is the stream's last line, with the same fields.
    const streamed = await request(t.http)
      .post('/api/import?progress=true&format=markdown')
      .set('Authorization', `Bearer ${acme.bearer}`)
      .set('X-Memory-Namespace', 'acme/qi')
      .set('Content-Type', 'text/markdown')
      .send('# One more\n\nover the quota')
      .expect(200);
    expect(JSON.parse(streamed.text.trim().split('\n').pop()!)).toMatchObject({ type: 'error', status: 403, code: 'namespace_quota_exceeded', quota: { name: 'memories', namespace: 'acme/qi' } });
    const listed = (await acme.get('/api/namespaces').expect(200)).body.namespaces;
    expect(listed).toEqual(
      expect.arrayContaining([
        { namespace: 'acme/q', memories: MAX_MEMORIES, bytes: expect.any(Number) },
        { namespace: 'acme/qb', memories: 1, bytes: Buffer.byteLength('small now') },
        { namespace: 'acme/qi', memories: MAX_MEMORIES, bytes: expect.any(Number) },
      ]),
    );
  });
});
