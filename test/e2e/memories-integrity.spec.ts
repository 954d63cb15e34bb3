import Database from 'better-sqlite3';
import * as path from 'node:path';
import request from 'supertest';
import { BackendsService } from '../../src/backends/backends.service';
import type { MongoDocumentDatabase } from '../../src/backends/mongodb/mongo-document-database';
import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import { ObjectStore } from '../../src/backends/ports/object-store.port';
import { WriteIntentRepository } from '../../src/backends/ports/write-intent.repository';
import { SqliteMemoryIndex } from '../../src/backends/sqlite/sqlite-memory-index';
import { BackendUnavailableError } from '../../src/common/errors';
import { versionKey } from '../../src/memories/memory-id';
import { parseMarkdown, toMarkdown } from '../../src/memories/memory-markdown';
import { ReindexService } from '../../src/memories/reindex.service';
import { WriteSweeper } from '../../src/memories/write-sweeper.service';
import { adminAgent, createTestApp, createToken, TestApp, tempDir } from '../support/app';
import { testBackends } from '../support/backends';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

const SECRET = 'integrity-secret-key-0123456789abcdef0123456789abcdef';

/** Issue 9: versions, If-Match, Idempotency-Key, concurrent writers, start-up sweep — on every backend pair. */
describe.each(testBackends())('write integrity on $name', (backend) => {
  let t: TestApp;
  let api: Api;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = { ...(await backend.env()), MEMSTORE_SECRET_KEY: SECRET };
    t = await createTestApp(env);
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t.close();
  });

  /** What every view of a memory says: fetch, download, search, history head and a reindex of the store into a fresh index. */
  async function views(id: string, word: string) {
    const fetched = (await api.get(`/api/memories/${id}`).expect(200)).body.memory;
    const file = parseMarkdown((await api.get(`/api/memories/${id}/download`).expect(200)).text);
    const found = (await api.get(`/api/memories?q=${word}&limit=50`).expect(200)).body.rows.find((r: { id: string }) => r.id === id);
    const head = (await api.get(`/api/memories/${id}/versions?limit=1`).expect(200)).body.rows[0];
    return { fetched, file, found, head };
  }

  async function reindexCopy(): Promise<MemoryIndex> {
    const db = new Database(path.join(tempDir('memstore-copy-'), 'copy.db'));
    db.pragma('foreign_keys = ON');
    const index = new SqliteMemoryIndex(db, { maintenanceIdleMs: null });
    await new ReindexService(index, t.app.get(ObjectStore), t.app.get(WriteIntentRepository)).reindex();
    return index;
  }

  it('versions: ETag on create/fetch/update, If-Match 412 with the current version, history newest first, fetch and restore of a version', async () => {
    const created = await api.post('/api/memories', { content: 'first body', title: 'v one' }).expect(201);
    expect(created.headers.etag).toBe('"1"');
    const id = created.body.memory.id;
    expect(created.body.memory.version).toBe(1);
    expect((await api.get(`/api/memories/${id}`).expect(200)).headers.etag).toBe('"1"');

    const upd = await api.patch(`/api/memories/${id}`, { content: 'second body', title: 'v two' }).set('If-Match', '"1"').expect(200);
    expect(upd.headers.etag).toBe('"2"');
    expect(upd.body.memory).toMatchObject({ version: 2, title: 'v two' });

    const stale = await api.patch(`/api/memories/${id}`, { title: 'lost' }).set('If-Match', '"1"').expect(412);
    expect(stale.body).toMatchObject({ ok: false, current_version: 2 });
    expect((await api.delete(`/api/memories/${id}`).set('If-Match', 'W/"1"').expect(412)).body.current_version).toBe(2);
    expect((await api.patch(`/api/memories/${id}`, { title: 'x' }).set('If-Match', 'nonsense').expect(422)).body.ok).toBe(false);
    // Bad input is refused as bad input even when the If-Match version is stale too (found by the fuzz step).
    const both = await api
      .patch(`/api/memories/${id}`, { agent: 'a'.repeat(201) })
      .set('If-Match', '"1"')
      .expect(422);
    expect(JSON.stringify(both.body)).toContain('agent');

    const hist = (await api.get(`/api/memories/${id}/versions`).expect(200)).body;
    expect(hist).toMatchObject({ ok: true, total: 2, current_version: 2 });
    expect(hist.rows.map((r: { version: number; title: string; current: boolean }) => [r.version, r.title, r.current])).toEqual([
      [2, 'v two', true],
      [1, 'v one', false],
    ]);
    expect(hist.rows[1]).toMatchObject({ size: Buffer.byteLength('first body'), author: { kind: 'token', id: expect.stringMatching(/^[0-9a-f]{16}$/) } });

    const v1 = (await api.get(`/api/memories/${id}/versions/1`).expect(200)).body;
    expect(v1.memory).toMatchObject({ id, version: 1, title: 'v one', content: 'first body' });
    await api.get(`/api/memories/${id}/versions/9`).expect(404);
    await api.get(`/api/memories/${id}/versions/abc`).expect(422);

    const restored = await api.post(`/api/memories/${id}/versions/1/restore`).expect(200);
    expect(restored.body.memory).toMatchObject({ version: 3, title: 'v one', content: 'first body' });
    expect(restored.headers.etag).toBe('"3"');
    expect((await api.get(`/api/memories/${id}/versions`).expect(200)).body.total).toBe(3);

    await api.delete(`/api/memories/${id}`).set('If-Match', '"3"').expect(200);
    await api.get(`/api/memories/${id}/versions`).expect(404);
    const left: string[] = [];
    for await (const k of t.app.get(ObjectStore).list(`memories/${id}`)) left.push(k);
    expect(left).toEqual([]); // deleting a memory deletes its history
  });

  it('keeps at most 20 versions and deletes the objects of older ones', async () => {
    const m = await createMemory(api, { content: 'v1' });
    for (let i = 2; i <= 24; i++) await api.patch(`/api/memories/${m.id}`, { content: `v${i}` }).expect(200);
    const hist = (await api.get(`/api/memories/${m.id}/versions?limit=100`).expect(200)).body;
    expect(hist.total).toBe(20);
    expect(hist.rows[0].version).toBe(24);
    expect(hist.rows[19].version).toBe(5);
    const keys: string[] = [];
    for await (const k of t.app.get(ObjectStore).list(`memories/${m.id}`)) keys.push(k);
    expect(keys).toHaveLength(20);
  });

  it('the memory_history_keep setting changes how many versions are kept; read scope lists history, restore needs write', async () => {
    const admin = await adminAgent(t);
    await admin.post('/api/config').send({ memory_history_keep: 0 }).expect(422);
    await admin.post('/api/config').send({ memory_history_keep: '3' }).expect(200);
    try {
      const m = await createMemory(api, { content: 'k1' });
      for (let i = 2; i <= 6; i++) await api.patch(`/api/memories/${m.id}`, { content: `k${i}` }).expect(200);
      const hist = (await api.get(`/api/memories/${m.id}/versions`).expect(200)).body;
      expect(hist.rows.map((r: { version: number }) => r.version)).toEqual([6, 5, 4]);
      const reader = (await createToken(t, { preset: 'read-only' })).plaintext;
      await request(t.http).get(`/api/memories/${m.id}/versions`).set('Authorization', `Bearer ${reader}`).expect(200);
      await request(t.http).get(`/api/memories/${m.id}/versions/5`).set('Authorization', `Bearer ${reader}`).expect(200);
      await request(t.http).post(`/api/memories/${m.id}/versions/5/restore`).set('Authorization', `Bearer ${reader}`).expect(403);
      // The admin session restores too, and is recorded as the author.
      const restored = await admin.post(`/api/memories/${m.id}/versions/4/restore`).expect(200);
      expect(restored.body.memory).toMatchObject({ content: 'k4', version: 7 });
      const head = (await api.get(`/api/memories/${m.id}/versions?limit=1`).expect(200)).body.rows[0];
      expect(head.author).toMatchObject({ kind: 'admin' });
    } finally {
      await admin.post('/api/config').send({ memory_history_keep: '' }).expect(200);
    }
  });

  it('Idempotency-Key: same key + same body replays the first response; another body → 422; concurrent duplicates create one memory', async () => {
    const body = { content: 'idempotent create', tags: ['idem'] };
    const first = await api.post('/api/memories', body).set('Idempotency-Key', 'key-1').expect(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await api
      .post('/api/memories', { tags: ['idem'], content: 'idempotent create' })
      .set('Idempotency-Key', 'key-1')
      .expect(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await api.post('/api/memories', { content: 'something else' }).set('Idempotency-Key', 'key-1').expect(422);
    expect(other.body.ok).toBe(false);

    const many = await Promise.all(Array.from({ length: 8 }, () => api.post('/api/memories', { content: 'raced create' }).set('Idempotency-Key', 'key-race')));
    expect(many.map((r) => r.status)).toEqual(Array(8).fill(201));
    expect(new Set(many.map((r) => r.body.memory.id)).size).toBe(1);
    expect((await api.get('/api/memories?q=raced&limit=50').expect(200)).body.total).toBe(1);

    // Scoped to the caller: another token's identical key is a different request.
    const other2 = (await createToken(t, { preset: 'full' })).plaintext;
    const second = await request(t.http).post('/api/memories').set('Authorization', `Bearer ${other2}`).set('Idempotency-Key', 'key-1').send(body).expect(201);
    expect(second.body.memory.id).not.toBe(first.body.memory.id);

    const m = await createMemory(api, { content: 'to bulk delete' });
    const del1 = await api
      .post('/api/memories/bulk-delete', { ids: [m.id] })
      .set('Idempotency-Key', 'bulk-1')
      .expect(200);
    const del2 = await api
      .post('/api/memories/bulk-delete', { ids: [m.id] })
      .set('Idempotency-Key', 'bulk-1')
      .expect(200);
    expect(del2.body).toEqual(del1.body);
    expect(del2.headers['idempotent-replayed']).toBe('true');
  });

  it('20 rounds x 16 parallel PATCHes: fetch, download, search, history and a reindex agree on one write', async () => {
    const m = await createMemory(api, { content: 'start zebraword', title: 'start' });
    for (let round = 0; round < 20; round++) {
      const res = await Promise.all(
        Array.from({ length: 16 }, (_, i) => api.patch(`/api/memories/${m.id}`, { title: `r${round}w${i}`, content: `zebraword body of r${round}w${i}`, tags: [`r${round}w${i}`] })),
      );
      expect(res.map((r) => r.status)).toEqual(Array(16).fill(200));
      const { fetched, file, found, head } = await views(m.id, 'zebraword');
      const w = fetched.title as string;
      expect(fetched.content).toBe(`zebraword body of ${w}`);
      expect(fetched.tags).toEqual([w]);
      expect(file).toMatchObject({ title: w, content: `zebraword body of ${w}`, tags: [w], version: fetched.version });
      expect(found).toMatchObject({ title: w, tags: [w], version: fetched.version });
      expect(head).toMatchObject({ version: fetched.version, title: w });
      expect(fetched.version).toBe(1 + 16 * (round + 1));
    }
    const copy = await reindexCopy();
    const fetched = (await api.get(`/api/memories/${m.id}`).expect(200)).body.memory;
    expect(await copy.get('default', m.id)).toMatchObject({ title: fetched.title, content: fetched.content, version: fetched.version });
  }, 300_000);

  it('PATCH racing DELETE: one wins cleanly, never a resurrected or half memory', async () => {
    for (let round = 0; round < 10; round++) {
      const m = await createMemory(api, { content: `race ${round}` });
      const [p1, d, p2] = await Promise.all([
        api.patch(`/api/memories/${m.id}`, { content: `patched ${round}` }),
        api.delete(`/api/memories/${m.id}`),
        api.patch(`/api/memories/${m.id}`, { content: `patched again ${round}` }),
      ]);
      expect(d.status).toBe(200);
      for (const p of [p1, p2]) expect([200, 404]).toContain(p.status);
      await api.get(`/api/memories/${m.id}`).expect(404);
      const left: string[] = [];
      for await (const k of t.app.get(ObjectStore).list(`memories/${m.id}`)) left.push(k);
      expect(left).toEqual([]);
    }
    const copy = await reindexCopy();
    expect((await copy.list({ filter: { namespace: 'default' }, limit: 100, offset: 0 })).rows.some((r) => r.title === null && r.snippet.startsWith('patched'))).toBe(false);
  }, 120_000);

  it('start-up sweep: the object of a write that crashed before its index write is removed and never comes back', async () => {
    const intents = t.app.get(WriteIntentRepository);
    const store = t.app.get(ObjectStore);
    // The crash: intent recorded, object written, then the process died (no index write).
    const ghostId = '65f0000000000000000000aa';
    const key = versionKey('default', ghostId, 1);
    const at = new Date(Date.now() - 3_600_000);
    await intents.add({ objectKey: key, memoryId: ghostId, createdAt: at });
    await store.put(
      key,
      toMarkdown({ id: ghostId, title: 'ghost', type: 'note', scope: 'global', tags: [], agent: null, project: null, content: 'never acknowledged', createdAt: at, updatedAt: at, version: 1 }),
      'text/markdown',
    );
    // An acknowledged write whose intent was left behind (died after the index write) is kept.
    const kept = await createMemory(api, { content: 'acknowledged' });
    const keptKey = (await t.app.get(MemoryIndex).get('default', kept.id))!.objectKey!;
    // The create drops its own intent off the response path: wait for that before planting the
    // leftover one under the same key.
    const pending = async () => (await intents.olderThan(new Date(Date.now() + 60_000), 1000)).some((i) => i.objectKey === keptKey);
    for (let i = 0; i < 200 && (await pending()); i++) await new Promise((r) => setTimeout(r, 10));
    await intents.add({ objectKey: keptKey, memoryId: kept.id, createdAt: at });

    const report = await t.app.get(WriteSweeper).sweep(60_000);
    expect(report.removed).toContain(key);
    expect(report.settled).toContain(keptKey);
    await expect(store.get(key)).rejects.toThrow();
    expect((await api.get(`/api/memories/${kept.id}`).expect(200)).body.memory.content).toBe('acknowledged');
    const copy = await reindexCopy();
    expect(await copy.get('default', ghostId)).toBeNull();
    expect(await copy.get('default', kept.id)).not.toBeNull();
  });

  it('a crash between object and index write: on restart the sweep removes the object, and it never comes back as a memory', async () => {
    const store = t.app.get(ObjectStore);
    const keys = async () => {
      const out = new Set<string>();
      for await (const k of store.list('memories/')) out.add(k);
      return out;
    };
    const before = await keys();
    // The index write never happens: the process "dies" while it waits.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const insert = jest.spyOn(t.app.get(BackendsService).docdb.memories, 'insert').mockImplementation(async () => {
      await gate;
      throw new BackendUnavailableError('Document database', 'process killed (simulated)');
    });
    const inFlight = api.post('/api/memories', { content: 'crashed create wombatword' }).then((r) => r);
    let orphan: string | undefined;
    for (let i = 0; i < 200 && !orphan; i++) {
      orphan = [...(await keys())].find((k) => !before.has(k));
      if (!orphan) await new Promise((r) => setTimeout(r, 25));
    }
    expect(orphan).toBeDefined();

    // Restart: a new instance on the same data directory / database and store (grace 0: every pending write is stale).
    const t2 = await createTestApp({ ...env, MEMSTORE_DATA_DIR: t.dataDir, MEMSTORE_WRITE_GRACE_SECONDS: '0' });
    try {
      for (let i = 0; i < 200 && (await keys()).has(orphan!); i++) await new Promise((r) => setTimeout(r, 25));
      expect((await keys()).has(orphan!)).toBe(false);
      const api2 = await fullAccessApi(t2);
      expect((await api2.get('/api/memories?q=wombatword').expect(200)).body.total).toBe(0);
      const copy = await reindexCopy();
      expect((await copy.search({ text: 'wombatword', filter: { namespace: 'default' }, limit: 10, offset: 0 })).total).toBe(0);
    } finally {
      release();
      insert.mockRestore();
      expect((await inFlight).status).toBe(503);
      await t2.close();
    }
    expect((await api.get('/api/memories?q=wombatword').expect(200)).body.total).toBe(0);
  });

  /** Every object key of a memory in the store (of every memory without an id). */
  async function objectsOf(id?: string): Promise<string[]> {
    const out: string[] = [];
    for await (const k of t.app.get(ObjectStore).list(id ? `memories/${id}.` : 'memories/')) out.push(k);
    return out.sort();
  }

  it('issue 46 item 5: a delete whose files stay behind (store failing, or the process dying) never comes back through a reindex; the sweep finishes it', async () => {
    const m = await createMemory(api, { content: 'deleted for good yakword', title: 'doomed' });
    await api.patch(`/api/memories/${m.id}`, { content: 'deleted for good yakword, v2' }).expect(200);
    expect(await objectsOf(m.id)).toHaveLength(2);
    // The index row goes, then the files cannot be deleted (what a kill -9 right after the index write leaves too).
    const del = jest.spyOn(t.app.get(BackendsService).objstore, 'delete').mockRejectedValue(new BackendUnavailableError('Object store', 'gone (injected)'));
    try {
      await api.delete(`/api/memories/${m.id}`).expect(200);
    } finally {
      del.mockRestore();
    }
    expect(await objectsOf(m.id)).toHaveLength(2);
    await api.get(`/api/memories/${m.id}`).expect(404);
    const copy = await reindexCopy();
    expect(await copy.get('default', m.id)).toBeNull();
    expect((await copy.search({ text: 'yakword', filter: { namespace: 'default' }, limit: 10, offset: 0 })).total).toBe(0);
    const report = await t.app.get(WriteSweeper).sweep(0);
    expect(report.deleted).toContain(m.id);
    expect(await objectsOf(m.id)).toEqual([]);
  });

  if (backend.docdb === 'mongodb') {
    it('issue 46 item 2: an index write whose outcome is unknown keeps its object; the sweep keeps a committed one and removes one that did not commit', async () => {
      const memories = t.app.get(BackendsService).docdb.memories;
      const store = t.app.get(ObjectStore);
      const dropped = () => new BackendUnavailableError('Document database', 'connection closed while waiting for the answer (injected)');

      // Committed, then the connection dropped before the answer: 503, yet the version is in the index.
      const m = await createMemory(api, { content: 'first state', title: 'unknown outcome' });
      const real = memories.update.bind(memories);
      const update = jest.spyOn(memories, 'update').mockImplementation(async (...args) => {
        await real(...args);
        throw dropped();
      });
      try {
        await api.patch(`/api/memories/${m.id}`, { content: 'committed but unanswered' }).expect(503);
      } finally {
        update.mockRestore();
      }
      const doc = (await memories.get('default', m.id))!;
      expect(doc).toMatchObject({ version: 2, content: 'committed but unanswered' });
      expect((await store.get(doc.objectKey!)).toString('utf8')).toContain('committed but unanswered');

      // The same for a create.
      const realInsert = memories.insert.bind(memories);
      const insert = jest.spyOn(memories, 'insert').mockImplementation(async (d) => {
        await realInsert(d);
        throw dropped();
      });
      let createdKey: string | undefined;
      try {
        const before = new Set(await objectsOf());
        await api.post('/api/memories', { content: 'created but unanswered ibexword' }).expect(503);
        createdKey = (await objectsOf()).find((k) => !before.has(k));
      } finally {
        insert.mockRestore();
      }
      expect(createdKey).toBeDefined();
      const created = (await api.get('/api/memories?q=ibexword').expect(200)).body.rows;
      expect(created).toHaveLength(1);
      expect((await store.get(createdKey!)).toString('utf8')).toContain('created but unanswered ibexword');

      // Not committed (the database dropped before the write): the object stays until the sweep, which removes it.
      const lost = jest.spyOn(memories, 'update').mockRejectedValue(dropped());
      const before = new Set(await objectsOf(m.id));
      try {
        await api.patch(`/api/memories/${m.id}`, { content: 'never committed' }).expect(503);
      } finally {
        lost.mockRestore();
      }
      const pendingKey = (await objectsOf(m.id)).find((k) => !before.has(k));
      expect(pendingKey).toBeDefined();
      expect((await reindexCopy().then((c) => c.get('default', m.id)))?.content).not.toBe('never committed');

      const report = await t.app.get(WriteSweeper).sweep(0);
      expect(report.removed).toContain(pendingKey);
      expect(report.settled).toEqual(expect.arrayContaining([doc.objectKey, createdKey]));
      await expect(store.get(pendingKey!)).rejects.toThrow();
      expect((await store.get(doc.objectKey!)).toString('utf8')).toContain('committed but unanswered');
      expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toMatchObject({ version: 2, content: 'committed but unanswered' });
      expect(await (await reindexCopy()).get('default', m.id)).toMatchObject({ version: 2, content: 'committed but unanswered' });
      // The next write is not held up by what the failed one left behind.
      await api.patch(`/api/memories/${m.id}`, { content: 'third state' }).expect(200);

      // Half-way: the version claim was written, then the memory's update failed. Not held: the
      // sweep removes the claim and the object, and writers can move the memory on again.
      const models = await (t.app.get(BackendsService).docdb as MongoDocumentDatabase).ready();
      const half = jest.spyOn(models.memories.collection, 'updateOne').mockRejectedValueOnce(new Error('interrupted (injected)'));
      const beforeHalf = new Set(await objectsOf(m.id));
      try {
        await api.patch(`/api/memories/${m.id}`, { content: 'claimed, never written' }).expect(503);
      } finally {
        half.mockRestore();
      }
      const halfKey = (await objectsOf(m.id)).find((k) => !beforeHalf.has(k))!;
      expect(halfKey).toBeDefined();
      expect(await memories.holds(m.id, halfKey)).toBe(false);
      expect((await t.app.get(WriteSweeper).sweep(0)).removed).toEqual([halfKey]);
      await expect(store.get(halfKey)).rejects.toThrow();
      expect((await api.get(`/api/memories/${m.id}/versions?limit=1`).expect(200)).body.rows[0]).toMatchObject({ version: 3 });
      expect((await api.patch(`/api/memories/${m.id}`, { content: 'fourth state' }).set('If-Match', '"3"').expect(200)).body.memory.version).toBe(4);
    });

    it('issue 46 item 5 on MongoDB: a delete whose outcome is unknown is finished by the sweep when it committed, dropped when it did not', async () => {
      const memories = t.app.get(BackendsService).docdb.memories;
      const dropped = () => new BackendUnavailableError('Document database', 'connection closed while waiting for the answer (injected)');
      const gone = await createMemory(api, { content: 'delete committed, answer lost' });
      const kept = await createMemory(api, { content: 'delete never reached the database' });
      const real = memories.remove.bind(memories);
      const remove = jest.spyOn(memories, 'remove').mockImplementationOnce(async (...args) => {
        await real(...args);
        throw dropped();
      });
      remove.mockRejectedValueOnce(dropped());
      try {
        await api.delete(`/api/memories/${gone.id}`).expect(503);
        await api.delete(`/api/memories/${kept.id}`).expect(503);
      } finally {
        remove.mockRestore();
      }
      expect(await objectsOf(gone.id)).toHaveLength(1); // the index row went, the file did not
      expect(await (await reindexCopy()).get('default', gone.id)).toBeNull();
      const report = await t.app.get(WriteSweeper).sweep(0);
      expect(report.deleted).toEqual([gone.id]);
      expect(await objectsOf(gone.id)).toEqual([]);
      expect((await api.get(`/api/memories/${kept.id}`).expect(200)).body.memory.content).toBe('delete never reached the database');
      expect(await objectsOf(kept.id)).toHaveLength(1);
    });

    it('two instances on one MongoDB + S3: parallel PATCHes through both agree on one write', async () => {
      const t2 = await createTestApp({ ...env, MEMSTORE_DATA_DIR: tempDir() });
      try {
        const m = await createMemory(api, { content: 'shared quokkaword', title: 'shared' });
        for (let round = 0; round < 5; round++) {
          const res = await Promise.all(
            Array.from({ length: 16 }, (_, i) =>
              request(i % 2 ? t2.http : t.http)
                .patch(`/api/memories/${m.id}`)
                .set('Authorization', `Bearer ${api.bearer}`)
                .send({ title: `s${round}w${i}`, content: `quokkaword body of s${round}w${i}` }),
            ),
          );
          expect(res.map((r) => r.status)).toEqual(Array(16).fill(200));
          const { fetched, file, found } = await views(m.id, 'quokkaword');
          expect(fetched.content).toBe(`quokkaword body of ${fetched.title}`);
          expect(file).toMatchObject({ title: fetched.title, content: fetched.content, version: fetched.version });
          expect(found).toMatchObject({ title: fetched.title, version: fetched.version });
          expect(fetched.version).toBe(1 + 16 * (round + 1));
        }
      } finally {
        await t2.close();
      }
    }, 300_000);
  }
  it("issue 46 item 10: a losing write's object left in the store is never rebuilt: a reindex keeps the version the index acknowledged", async () => {
    const m = await createMemory(api, { content: 'lynxword start', title: 'start' });
    const res = await Promise.all(Array.from({ length: 8 }, (_, i) => api.patch(`/api/memories/${m.id}`, { title: `w${i}`, content: `lynxword body of w${i}` })));
    expect(res.map((r) => r.status)).toEqual(Array(8).fill(200));
    const acked = (await api.get(`/api/memories/${m.id}`).expect(200)).body.memory;
    const loserTitle = acked.title === 'w0' ? 'w1' : 'w0';
    // What a writer that lost the compare-and-swap leaves when its delete is overtaken by its own
    // put (an object store without read-after-write order) or the process dies: an object of the
    // current version, no write intent. Its key sorts first among that version's objects.
    const store = t.app.get(ObjectStore);
    const v3 = (await api.get(`/api/memories/${m.id}/versions/3`).expect(200)).body.memory;
    const at = new Date(acked.updated_at);
    const loser = `memories/${m.id}.v${acked.version}-000000000000.md`;
    const stray = `memories/${m.id}.v3-000000000000.md`; // an earlier round's loser
    const doc = (v: number, title: string) => ({
      id: m.id,
      title,
      type: 'note' as const,
      scope: 'global' as const,
      tags: [],
      agent: null,
      project: null,
      content: `lynxword body of ${title}`,
      createdAt: new Date(m.created_at),
      updatedAt: at,
      version: v,
    });
    await store.put(loser, toMarkdown(doc(acked.version, loserTitle)), 'text/markdown');
    await store.put(stray, toMarkdown(doc(3, loserTitle)), 'text/markdown');

    const report = await t.app.get(ReindexService).reindex();
    expect(report.unreadable).toEqual([]);
    const after = (await api.get(`/api/memories/${m.id}`).expect(200)).body.memory;
    expect(after).toMatchObject({ title: acked.title, content: acked.content, version: acked.version });
    const history = (await api.get(`/api/memories/${m.id}/versions?limit=100`).expect(200)).body.rows;
    expect(history.map((r: { version: number }) => r.version)).toEqual(Array.from({ length: acked.version }, (_, i) => acked.version - i));
    expect((await api.get(`/api/memories/${m.id}/versions/3`).expect(200)).body.memory).toMatchObject({ title: v3.title, content: v3.content });
    expect(report.superseded.sort()).toEqual([loser, stray].sort());
  });
});
