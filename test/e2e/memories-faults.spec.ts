import * as fs from 'node:fs';
import * as path from 'node:path';
import request from 'supertest';
import { BackendsService } from '../../src/backends/backends.service';
import { BackendUnavailableError } from '../../src/common/errors';
import { runCli } from '../../src/cli';
import { ReindexService } from '../../src/memories/reindex.service';
import { createTestApp, TestApp } from '../support/app';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

/** Every memory file (both layouts: memories/<id>.md and memories/<id>.v<n>-<write>.md), relative to memories/. */
const memoryFiles = (t: TestApp) => {
  const dir = path.join(t.dataDir, 'objects', 'memories');
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)))
    .sort();
};
/** The file of a memory's current version. */
const currentFile = async (t: TestApp, id: string) => {
  const doc = await t.app.get(BackendsService).docdb.memories.get('default', id);
  return path.join(t.dataDir, 'objects', ...doc!.objectKey!.split('/'));
};

describe('memories: consistency between index and object store', () => {
  let t: TestApp;
  let api: Api;
  let backends: BackendsService;

  beforeEach(async () => {
    t = await createTestApp();
    api = await fullAccessApi(t);
    backends = t.app.get(BackendsService);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await t.close();
  });

  it('index write fails after the object write: 503 naming the backend, and no orphan file', async () => {
    await createMemory(api, { content: 'existing' });
    const before = memoryFiles(t);
    jest.spyOn(backends.docdb.memories, 'insert').mockRejectedValue(new BackendUnavailableError('Document database', 'disk I/O error (injected)'));
    const res = await api.post('/api/memories', { content: 'doomed' }).expect(503);
    expect(res.body).toEqual({ ok: false, error: 'Document database unavailable: disk I/O error (injected)' });
    expect(memoryFiles(t)).toEqual(before);
    expect(fs.readdirSync(path.join(t.dataDir, 'objects')).filter((f) => f !== 'memories' && f !== '.tmp')).toEqual([]);
  });

  it('object store write fails: 503 naming the backend, and no index row', async () => {
    jest.spyOn(backends.objstore, 'put').mockRejectedValue(new BackendUnavailableError('Object store', 'no space left on device (injected)'));
    const res = await api.post('/api/memories', { content: 'doomed' }).expect(503);
    expect(res.body.error).toBe('Object store unavailable: no space left on device (injected)');
    jest.restoreAllMocks();
    expect((await api.get('/api/memories').expect(200)).body.total).toBe(0);
    expect((await api.get('/api/memories?q=doomed').expect(200)).body.total).toBe(0);
  });

  it('update: index write fails after the new version object was written → that object is removed, the memory unchanged', async () => {
    const m = await createMemory(api, { content: 'version one', title: 'v1' });
    const file = await currentFile(t, m.id);
    const original = fs.readFileSync(file, 'utf8');
    const before = memoryFiles(t);
    jest.spyOn(backends.docdb.memories, 'update').mockRejectedValue(new BackendUnavailableError('Document database', 'locked (injected)'));
    await api.patch(`/api/memories/${m.id}`, { content: 'version two' }).expect(503);
    jest.restoreAllMocks();
    expect(fs.readFileSync(file, 'utf8')).toBe(original);
    expect(memoryFiles(t)).toEqual(before);
    expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toEqual(m);
  });

  it('update: an object store that cannot write fails before the index changes (versions are never overwritten in place)', async () => {
    const m = await createMemory(api, { content: 'version one' });
    const before = memoryFiles(t);
    jest.spyOn(backends.objstore, 'put').mockRejectedValue(new BackendUnavailableError('Object store', 'EIO (injected)'));
    await api.patch(`/api/memories/${m.id}`, { content: 'version two' }).expect(503);
    jest.restoreAllMocks();
    expect(memoryFiles(t)).toEqual(before);
    expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toMatchObject({ content: 'version one', version: 1 });
  });

  it('delete removes the index entry first: if that fails, the file stays and the memory is intact', async () => {
    const m = await createMemory(api, { content: 'survivor' });
    jest.spyOn(backends.docdb.memories, 'remove').mockRejectedValue(new BackendUnavailableError('Document database', 'down (injected)'));
    await api.delete(`/api/memories/${m.id}`).expect(503);
    jest.restoreAllMocks();
    expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory.content).toBe('survivor');
  });

  describe('create with supersedes whose link fails after the insert (decision 0166)', () => {
    const down = () => new BackendUnavailableError('Document database', 'locked (injected)');
    /** Every current memory's content, as a plain list shows them (superseded ones left out). */
    const listed = async () => ((await api.get('/api/memories?limit=100').expect(200)).body.rows as Array<{ snippet: string }>).map((r) => r.snippet).sort();

    it('takes the new memory back, so the 503 stored nothing and a retry stores it once', async () => {
      const old = await createMemory(api, { content: 'Pre-approved for $350,000' });
      jest.spyOn(backends.docdb.memories, 'update').mockRejectedValueOnce(down());
      const body = { content: 'Pre-approved for $400,000', supersedes: [old.id] };
      expect((await api.post('/api/memories', body).expect(503)).body.error).toBe('Document database unavailable: locked (injected)');
      expect(await listed()).toEqual(['Pre-approved for $350,000']);
      expect((await api.get(`/api/memories/${old.id}`).expect(200)).body.memory).not.toHaveProperty('superseded_by');
      jest.restoreAllMocks();
      const again = (await api.post('/api/memories', body).expect(201)).body.memory;
      expect(await listed()).toEqual(['Pre-approved for $400,000']);
      expect((await api.get(`/api/memories/${old.id}`).expect(200)).body.memory.superseded_by).toBe(again.id);
    });

    /**
     * Two older memories, then a create superseding both whose first link goes through and whose
     * second fails: only that write (`failing` 'next'), or every write after the first ('rest').
     */
    const secondLinkFails = async (failing: 'next' | 'rest') => {
      const older = [await createMemory(api, { content: 'Lives in Lyon' }), await createMemory(api, { content: 'Works in Lyon' })];
      const memories = backends.docdb.memories;
      const real = memories.update.bind(memories);
      const update = jest.spyOn(memories, 'update').mockImplementationOnce((...args) => real(...args));
      if (failing === 'next') update.mockRejectedValueOnce(down());
      else update.mockRejectedValue(down());
      await api.post('/api/memories', { content: 'Lives and works in Paris now', supersedes: older.map((m) => m.id) }).expect(503);
      return older;
    };

    it('undoes a link already made when a later one fails', async () => {
      const [a, b] = await secondLinkFails('next');
      expect(await listed()).toEqual(['Lives in Lyon', 'Works in Lyon']);
      const after = (await api.get(`/api/memories/${a.id}`).expect(200)).body.memory;
      expect(after.version).toBe(3); // linked, then unlinked: history keeps both
      expect(after).not.toHaveProperty('superseded_by');
      expect(after).not.toHaveProperty('valid_to');
      expect((await api.get(`/api/memories/${b.id}`).expect(200)).body.memory.version).toBe(1);
    });

    it('leaves the new memory where the links cannot be undone either: an older memory is never hidden behind one that is gone', async () => {
      const [a] = await secondLinkFails('rest');
      jest.restoreAllMocks();
      const by = (await api.get(`/api/memories/${a.id}`).expect(200)).body.memory.superseded_by as string;
      expect((await api.get(`/api/memories/${by}`).expect(200)).body.memory.content).toBe('Lives and works in Paris now');
      expect(await listed()).toEqual(['Lives and works in Paris now', 'Works in Lyon']);
    });
  });

  it('a missing file: fetch and download serve the indexed copy (same markdown), reindex reports it', async () => {
    const m = await createMemory(api, { content: 'indexed copy', title: 'T', tags: ['a'] });
    const file = await currentFile(t, m.id);
    const markdown = fs.readFileSync(file, 'utf8');
    fs.rmSync(file);
    expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toEqual(m);
    expect((await api.get(`/api/memories/${m.id}/download`).expect(200)).text).toBe(markdown);
  });

  it('an unreadable store answers 503 on fetch and download, never 500', async () => {
    const m = await createMemory(api, { content: 'x' });
    jest.spyOn(backends.objstore, 'get').mockRejectedValue(new BackendUnavailableError('Object store', 'EIO (injected)'));
    expect((await api.get(`/api/memories/${m.id}/download`).expect(503)).body.error).toBe('Object store unavailable: EIO (injected)');
    await api.get(`/api/memories/${m.id}`).expect(503);
  });
});

describe('memories: reindex from the object store alone', () => {
  it('restores every memory with all its fields after the index database is deleted', async () => {
    let t = await createTestApp();
    const dataDir = t.dataDir;
    let api = await fullAccessApi(t);
    const originals = [];
    for (let i = 0; i < 12; i++) {
      originals.push(
        await createMemory(api, {
          content: `Body ${i}\n\n- with *markdown*\n---\nand a rule: café ${i % 2 ? 'deployments' : 'zebra'}`,
          title: i % 3 ? `Title ${i}: "quoted"` : undefined,
          type: (['note', 'fact', 'decision', 'code'] as const)[i % 4],
          scope: (['global', 'project', 'agent', 'user'] as const)[i % 4],
          agent: i % 2 ? 'agent-x' : undefined,
          project: i % 5 ? 'proj' : undefined,
          tags: i % 2 ? ['a', 'b c', 'null', 'true', '123'] : [],
        }),
      );
    }
    await api.patch(`/api/memories/${originals[0].id}`, { title: 'patched' }).expect(200);
    originals[0] = (await api.get(`/api/memories/${originals[0].id}`).expect(200)).body.memory;
    const statsBefore = (await api.get('/api/stats').expect(200)).body;
    await t.close();

    for (const f of ['memstore.db', 'memstore.db-wal', 'memstore.db-shm']) fs.rmSync(path.join(dataDir, f), { force: true });
    t = await createTestApp({ MEMSTORE_DATA_DIR: dataDir });
    api = await fullAccessApi(t);
    expect((await api.get('/api/memories').expect(200)).body.total).toBe(0);

    const report = await t.app.get(ReindexService).reindex();
    // 13 files: the patched memory has two versions (the older one becomes its history).
    expect(report).toEqual({ files: 13, indexed: 12, orphans: [], unreadable: [], unacknowledged: [], superseded: [], deleted: [], previous: 0, dryRun: false });
    expect((await api.get(`/api/memories/${originals[0].id}/versions`).expect(200)).body.total).toBe(2);
    for (const m of originals) expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toEqual(m);
    const listed = (await api.get('/api/memories?limit=50').expect(200)).body.rows.map((r: { id: string }) => r.id);
    expect(listed).toEqual([...originals].sort((a, b) => (a.created_at < b.created_at || (a.created_at === b.created_at && a.id < b.id) ? 1 : -1)).map((m) => m.id));
    expect((await api.get('/api/memories?q=deploy').expect(200)).body.total).toBe(6);
    expect((await api.get('/api/stats').expect(200)).body).toEqual(statsBefore);
    await t.close();
  });

  it('reports orphans (index entries without a file) and unreadable files, through the CLI too', async () => {
    const t = await createTestApp();
    const api = await fullAccessApi(t);
    const keep = await createMemory(api, { content: 'keep' });
    const orphan = await createMemory(api, { content: 'orphan' });
    const dir = path.join(t.dataDir, 'objects', 'memories');
    for (const f of fs.readdirSync(dir)) if (f.startsWith(`${orphan.id}.`)) fs.rmSync(path.join(dir, f));
    fs.writeFileSync(path.join(dir, '0123456789abcdef01234567.md'), 'no front matter here');
    fs.writeFileSync(path.join(dir, 'notes.txt'), 'stray file');
    const report = await t.app.get(ReindexService).reindex();
    expect(report.files).toBe(2);
    expect(report.indexed).toBe(1);
    expect(report.orphans).toEqual([orphan.id]);
    expect(report.unreadable.map((u) => u.key).sort()).toEqual(['memories/0123456789abcdef01234567.md', 'memories/notes.txt']);
    expect((await api.get(`/api/memories/${keep.id}`).expect(200)).body.memory.content).toBe('keep');
    await api.get(`/api/memories/${orphan.id}`).expect(404);
    await t.close();

    // The same through the command line entry point (its own application context on the data dir).
    const out: string[] = [];
    const code = await runCli(
      ['reindex'],
      { MEMSTORE_DATA_DIR: t.dataDir, MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_SECRET_KEY: 'test-secret-key-0123456789abcdef0123456789abcdef' },
      {
        out: (l) => out.push(l),
        err: (l) => out.push(l),
      },
    );
    expect(code).toBe(1); // unreadable files make the exit code non-zero
    const text = out.join('\n');
    expect(text).toContain('memory files found: 2');
    expect(text).toContain('memories indexed:   1');
    expect(text).toContain('memories/notes.txt');
    expect(await runCli(['bogus'], {}, { out: () => undefined, err: () => undefined })).toBe(2);
  });
});

describe('memories: signed URL lifetime from objstore_presign_ttl', () => {
  it('works until the TTL runs out, then answers 403', async () => {
    const t = await createTestApp({ MEMSTORE_OBJSTORE_PRESIGN_TTL: '1' });
    try {
      const api = await fullAccessApi(t);
      const m = await createMemory(api, { content: 'short-lived' });
      // The service's clock, not the test's speed, decides: it stands still while the link is made and used, then moves past the TTL.
      const signedAt = Date.now();
      const clock = jest.spyOn(Date, 'now').mockReturnValue(signedAt);
      const res = await api.get(`/api/memories/${m.id}/download?url=true`).expect(200);
      expect(res.body.expires_in).toBe(1);
      const u = new URL(res.body.url);
      await request(t.http)
        .get(u.pathname + u.search)
        .expect(200);
      clock.mockReturnValue(signedAt + 2100);
      expect(
        (
          await request(t.http)
            .get(u.pathname + u.search)
            .expect(403)
        ).body,
      ).toEqual({ ok: false, error: 'Download link expired' });
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });
});
