import request from 'supertest';
import { signFileUrl } from '../../src/backends/filesystem/url-signer';
import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import { ObjectStore } from '../../src/backends/ports/object-store.port';
import { BackendsService } from '../../src/backends/backends.service';
import { SqliteDocumentDatabase } from '../../src/backends/sqlite/sqlite-database';
import { AppConfig } from '../../src/config/app-config';
import { SettingsService } from '../../src/config/settings.service';
import { ListMemoriesQueryDto } from '../../src/memories/dto/list-memories-query.dto';
import type { MemoryDto } from '../../src/memories/dto/memory-response.dto';
import { MemoriesService } from '../../src/memories/memories.service';
import { adminAgent, createTestApp, TestApp } from '../support/app';
import { TestBackend, testBackends } from '../support/backends';
import { FULL_TEXT, MemoryIndexCapabilities } from '../contract/memory-index.contract';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

const ISO_MS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MISSING_ID = '0123456789abcdef01234567';

describe.each(testBackends())('memories API on $name', (backend) => {
  let t: TestApp;
  let api: Api;
  // A backend pair may declare a weaker search (e.g. FerretDB's regex fallback); the tests that
  // need a capability then check only that the query works, and say so in their title.
  const caps: MemoryIndexCapabilities = (backend as TestBackend & { searchCapabilities?: MemoryIndexCapabilities }).searchCapabilities ?? FULL_TEXT;
  const lacks = (...c: Array<keyof MemoryIndexCapabilities>) => {
    const missing = c.filter((k) => !caps[k]);
    return missing.length ? ` [capability ${missing.join(', ')} not supported on ${backend.name}: checks only that the query works]` : '';
  };

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t.close();
  });

  /** The stored markdown file of a memory, read and written through the active object store (filesystem or S3). */
  // Each version of a memory is its own object (issue 9); the index knows the current one.
  const objectKey = async (id: string) => (await t.app.get(MemoryIndex).get('default', id))?.objectKey ?? `memories/${id}.md`;
  const readObject = async (id: string) => (await t.app.get(ObjectStore).get(await objectKey(id))).toString('utf8');
  const writeObject = async (id: string, body: string) => t.app.get(ObjectStore).put(await objectKey(id), body, 'text/markdown; charset=utf-8');
  /** Whether any object of the memory (any version, either layout) is still in the store. */
  const objectExists = async (id: string) => {
    for await (const k of t.app.get(ObjectStore).list(`memories/${id}`)) if (k.startsWith(`memories/${id}`)) return true;
    return false;
  };
  const onFilesystem = backend.objectStore === 'filesystem' ? it : () => undefined;
  const onS3 = backend.objectStore === 's3' ? it : () => undefined;

  /** Deletes every memory so a test can count from zero. */
  async function wipe(): Promise<void> {
    for (;;) {
      const res = await api.get('/api/memories?limit=200&include_superseded=true').expect(200);
      if (res.body.rows.length === 0) return;
      await api.post('/api/memories/bulk-delete', { ids: res.body.rows.map((r: { id: string }) => r.id) }).expect(200);
    }
  }

  const loc = (res: request.Response) => res.body.detail?.[0]?.loc;
  const errType = (res: request.Response) => res.body.detail?.[0]?.type;

  describe('POST /api/memories', () => {
    it('creates with defaults (201) and returns every field', async () => {
      const res = await api.post('/api/memories', { content: 'Remember the milk' }).expect(201);
      expect(res.body.ok).toBe(true);
      const m = res.body.memory;
      expect(m).toEqual({
        id: expect.stringMatching(/^[0-9a-f]{24}$/),
        namespace: 'default',
        title: null,
        type: 'note',
        scope: 'global',
        content: 'Remember the milk',
        tags: [],
        agent: null,
        project: null,
        created_at: expect.stringMatching(ISO_MS),
        updated_at: expect.stringMatching(ISO_MS),
        version: 1,
      });
      expect(m.created_at).toBe(m.updated_at);
      // ObjectId layout: the first 4 bytes are the creation second.
      expect(Math.abs(parseInt(m.id.slice(0, 8), 16) * 1000 - Date.parse(m.created_at))).toBeLessThan(1000);
    });

    it('stores every given field; tags are trimmed, empty and duplicate tags dropped, order kept', async () => {
      const m = await createMemory(api, {
        content: '# Heading\n\nBody',
        title: 'A title',
        type: 'decision',
        scope: 'project',
        agent: 'planner',
        project: 'apollo',
        tags: [' infra ', 'db', '', 'infra', '   ', 'db', 'ops'],
      });
      expect(m).toMatchObject({ title: 'A title', type: 'decision', scope: 'project', agent: 'planner', project: 'apollo', tags: ['infra', 'db', 'ops'] });
    });

    it('writes the markdown file with YAML front matter holding every field but content', async () => {
      const m = await createMemory(api, { content: 'Body text\n---\nnot front matter', title: 'T: with colon', tags: ['x'], agent: 'a' });
      const file = await readObject(m.id);
      expect(file.startsWith('---\n')).toBe(true);
      expect(file.endsWith('\n---\nBody text\n---\nnot front matter')).toBe(true);
      for (const k of ['id', 'title', 'type', 'scope', 'tags', 'agent', 'project', 'created_at', 'updated_at']) expect(file).toMatch(new RegExp(`^${k}:`, 'm'));
      expect(file).not.toMatch(/^content:/m);
    });

    it.each([
      [{}, ['body', 'content'], 'missing'],
      [{ content: 42 }, ['body', 'content'], 'string_type'],
      [{ content: '   \n\t ' }, ['body', 'content'], 'value_error'],
      [{ content: 'x', type: 'bogus' }, ['body', 'type'], 'enum'],
      [{ content: 'x', scope: 'everyone' }, ['body', 'scope'], 'enum'],
      [{ content: 'x', tags: 'a,b' }, ['body', 'tags'], 'list_type'],
      [{ content: 'x', tags: ['ok', 3] }, ['body', 'tags'], 'string_type'],
      [{ content: 'x', title: 'x'.repeat(301) }, ['body', 'title'], 'string_too_long'],
      [{ content: 'x', agent: 'a'.repeat(201) }, ['body', 'agent'], 'string_too_long'],
      [{ content: 'x', project: 'p'.repeat(201) }, ['body', 'project'], 'string_too_long'],
      [{ content: 'x', tags: ['t'.repeat(65)] }, ['body', 'tags', 0], 'string_too_long'],
      [{ content: 'x', tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }, ['body', 'tags'], 'too_long'],
    ])('refuses %j with 422 at %j (%s)', async (body, where, type) => {
      const res = await api.post('/api/memories', body).expect(422);
      expect(res.body.ok).toBe(false);
      expect(loc(res)).toEqual(where);
      expect(errType(res)).toBe(type);
    });

    it('accepts exactly 50 tags of 64 characters and a 300-character title', async () => {
      const tags = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(64, 'x'));
      const m = await createMemory(api, { content: 'x', tags, title: 't'.repeat(300) });
      expect(m.tags).toHaveLength(50);
    });

    it('counts the content limit in UTF-8 bytes (1 MiB by default)', async () => {
      await api.post('/api/memories', { content: 'é'.repeat(512 * 1024) }).expect(201); // exactly 1 MiB
      const res = await api.post('/api/memories', { content: 'é'.repeat(512 * 1024) + 'x' }).expect(422);
      expect(loc(res)).toEqual(['body', 'content']);
      expect(errType(res)).toBe('string_too_long');
    });

    it('answers a body that is not a JSON object or not JSON with 422', async () => {
      const arr = await api.post('/api/memories', [1, 2]).expect(422);
      expect(loc(arr)).toEqual(['body']);
      const bad = await request(t.http).post('/api/memories').set('Authorization', `Bearer ${api.bearer}`).set('Content-Type', 'application/json').send('{"content": ').expect(422);
      expect(errType(bad)).toBe('json_invalid');
    });
  });

  describe('GET /api/memories/:id', () => {
    it('returns the memory with content read from the object store', async () => {
      const m = await createMemory(api, { content: 'original body', title: 'T' });
      await writeObject(m.id, (await readObject(m.id)).replace('original body', 'edited on disk'));
      const res = await api.get(`/api/memories/${m.id}`).expect(200);
      expect(res.body).toEqual({ ok: true, memory: { ...m, content: 'edited on disk' } });
    });

    it.each([MISSING_ID, 'not-an-id', '0123456789ABCDEF01234567', '../../etc/passwd', `${MISSING_ID}0`])('answers 404 "Memory not found" for %s', async (id) => {
      const res = await api.get(`/api/memories/${encodeURIComponent(id)}`).expect(404);
      expect(res.body).toEqual({ ok: false, error: 'Memory not found' });
    });
  });

  describe('PATCH /api/memories/:id', () => {
    it('changes only the given fields; null leaves a field as it is', async () => {
      const m = await createMemory(api, { content: 'c1', title: 'T1', agent: 'a1', project: 'p1', tags: ['t1'], type: 'fact', scope: 'user' });
      const res = await api.patch(`/api/memories/${m.id}`, { title: 'T2', content: null, agent: null, tags: null }).expect(200);
      expect(res.body.ok).toBe(true);
      expect(res.body.memory).toMatchObject({ title: 'T2', content: 'c1', agent: 'a1', project: 'p1', tags: ['t1'], type: 'fact', scope: 'user' });
      expect((await api.get(`/api/memories/${m.id}`)).body.memory.title).toBe('T2');
    });

    it('"" clears title, agent and project; [] clears tags; tags are normalised', async () => {
      const m = await createMemory(api, { content: 'c', title: 'T', agent: 'a', project: 'p', tags: ['x'] });
      const cleared = (await api.patch(`/api/memories/${m.id}`, { title: '', agent: '', project: '', tags: [] }).expect(200)).body.memory;
      expect(cleared).toMatchObject({ title: null, agent: null, project: null, tags: [] });
      const retagged = (await api.patch(`/api/memories/${m.id}`, { tags: [' b', 'a', 'b', ''] }).expect(200)).body.memory;
      expect(retagged.tags).toEqual(['b', 'a']);
    });

    it('refuses to empty the content and validates like create', async () => {
      const m = await createMemory(api, { content: 'keep me' });
      expect(loc(await api.patch(`/api/memories/${m.id}`, { content: '' }).expect(422))).toEqual(['body', 'content']);
      expect(loc(await api.patch(`/api/memories/${m.id}`, { content: '  ' }).expect(422))).toEqual(['body', 'content']);
      expect(errType(await api.patch(`/api/memories/${m.id}`, { type: 'nope' }).expect(422))).toBe('enum');
      expect(errType(await api.patch(`/api/memories/${m.id}`, { title: 'x'.repeat(301) }).expect(422))).toBe('string_too_long');
      expect((await api.get(`/api/memories/${m.id}`)).body.memory.content).toBe('keep me');
    });

    it('moves updated_at only when something changed', async () => {
      const m = await createMemory(api, { content: 'same', title: 'same', tags: ['a'] });
      await new Promise((r) => setTimeout(r, 5));
      const noop = (await api.patch(`/api/memories/${m.id}`, { content: 'same', title: 'same', tags: ['a', ' a '] }).expect(200)).body.memory;
      expect(noop.updated_at).toBe(m.updated_at);
      const empty = (await api.patch(`/api/memories/${m.id}`, {}).expect(200)).body.memory;
      expect(empty.updated_at).toBe(m.updated_at);
      const changed = (await api.patch(`/api/memories/${m.id}`, { content: 'different' }).expect(200)).body.memory;
      expect(Date.parse(changed.updated_at)).toBeGreaterThan(Date.parse(m.updated_at));
      expect(changed.created_at).toBe(m.created_at);
    });

    it('updates the stored file and the search index', async () => {
      const m = await createMemory(api, { content: 'walrus facts' });
      await api.patch(`/api/memories/${m.id}`, { content: 'narwhal facts', title: 'Sea' }).expect(200);
      expect((await api.get('/api/memories?q=walrus')).body.total).toBe(0);
      expect((await api.get('/api/memories?q=narwhal')).body.rows.map((r: { id: string }) => r.id)).toEqual([m.id]);
      const file = await readObject(m.id);
      expect(file).toContain('narwhal facts');
      expect(file).toMatch(/^title: Sea$/m);
    });

    it('answers 404 for an unknown id', async () => {
      expect((await api.patch(`/api/memories/${MISSING_ID}`, { title: 'x' }).expect(404)).body.error).toBe('Memory not found');
    });
  });

  describe('supersedes (decision 0130)', () => {
    const ids = (res: request.Response) => res.body.rows.map((r: { id: string }) => r.id);
    const pause = () => new Promise((r) => setTimeout(r, 5));

    it('create with supersedes: the older memory is hidden from search and list, shown with include_superseded, as of a moment, and keeps its history', async () => {
      const old = await createMemory(api, { title: 'Mortgage', content: 'Pre-approved for a zebramortgage of $350,000', project: 'sup-create' });
      await pause();
      const created = await api.post('/api/memories', { title: 'Mortgage', content: 'Pre-approved for a zebramortgage of $400,000', project: 'sup-create', supersedes: [old.id] }).expect(201);
      const now = created.body.memory;
      expect(now.superseded_by).toBeUndefined();

      // GET by id still answers the older one, with the link and when it stopped being true.
      const got = (await api.get(`/api/memories/${old.id}`).expect(200)).body.memory;
      expect(got).toMatchObject({ content: 'Pre-approved for a zebramortgage of $350,000', superseded_by: now.id, valid_to: now.created_at, version: 2 });
      expect(await readObject(old.id)).toMatch(new RegExp(`^superseded_by: ${now.id}$`, 'm'));
      const history = (await api.get(`/api/memories/${old.id}/versions`).expect(200)).body;
      expect(history.rows.map((r: { version: number }) => r.version)).toEqual([2, 1]);
      expect((await api.get(`/api/memories/${old.id}/versions/1`).expect(200)).body.memory.superseded_by).toBeUndefined();

      // A question about the fact answers only the newer statement, in every mode the pair runs.
      for (const mode of ['keyword', 'hybrid', 'semantic']) {
        const res = await api.get(`/api/memories?q=zebramortgage&mode=${mode}`).expect(200);
        expect(ids(res)).not.toContain(old.id);
        if (mode === 'keyword') expect(res.body).toMatchObject({ total: 1, rows: [{ id: now.id }] });
      }
      expect(ids(await api.get('/api/memories?project=sup-create').expect(200))).toEqual([now.id]);
      expect((await api.get('/api/memories?project=sup-create').expect(200)).body.total).toBe(1);

      const all = await api.get('/api/memories?q=zebramortgage&mode=keyword&include_superseded=true').expect(200);
      expect(all.body.total).toBe(2);
      expect(all.body.rows.find((r: { id: string }) => r.id === old.id)).toMatchObject({ superseded_by: now.id, valid_to: now.created_at });
      expect(ids(await api.get('/api/memories?project=sup-create&include_superseded=1').expect(200))).toEqual([now.id, old.id]);

      // As of a moment: before the newer one was written only the older one was true.
      expect(ids(await api.get(`/api/memories?project=sup-create&as_of=${encodeURIComponent(old.created_at)}`).expect(200))).toEqual([old.id]);
      expect(ids(await api.get(`/api/memories?q=zebramortgage&mode=keyword&as_of=${encodeURIComponent(old.created_at)}`).expect(200))).toEqual([old.id]);
      expect(ids(await api.get(`/api/memories?project=sup-create&as_of=${encodeURIComponent(now.created_at)}`).expect(200))).toEqual([now.id]);
      expect(ids(await api.get('/api/memories?project=sup-create&as_of=2000-01-01T00:00:00Z').expect(200))).toEqual([]);
      expect(errType(await api.get('/api/memories?as_of=2026-02-31').expect(422))).toBe('datetime_parsing');
      expect(errType(await api.get('/api/memories?include_superseded=maybe').expect(422))).toBe('bool_parsing');
    });

    it('PATCH with supersedes links an existing memory; If-Match of the older one moves on', async () => {
      const a = await createMemory(api, { content: 'The staging database is db-ostrich-1', project: 'sup-patch' });
      const b = await createMemory(api, { content: 'The staging database is db-ostrich-2', project: 'sup-patch' });
      const res = await api.patch(`/api/memories/${b.id}`, { supersedes: [a.id] }).expect(200);
      expect(res.body.memory.version).toBe(1); // nothing of b itself changed
      const got = (await api.get(`/api/memories/${a.id}`).expect(200)).body.memory;
      expect(got).toMatchObject({ superseded_by: b.id, version: 2 });
      await api.patch(`/api/memories/${a.id}`, { title: 'stale' }).set('If-Match', '"1"').expect(412);
      expect(ids(await api.get('/api/memories?q=ostrich&mode=keyword').expect(200))).toEqual([b.id]);
      // A superseded memory cannot supersede others (links never form a cycle).
      expect(loc(await api.patch(`/api/memories/${a.id}`, { supersedes: [b.id] }).expect(422))).toEqual(['body', 'supersedes']);
      expect((await api.get(`/api/memories/${b.id}`).expect(200)).body.memory.superseded_by).toBeUndefined();
    });

    it('refuses bad supersedes ids with a 422 naming the entry, and writes nothing', async () => {
      const a = await createMemory(api, { content: 'Kept as it is: quokka', project: 'sup-bad' });
      const cases: Array<[unknown, unknown[]]> = [
        [
          [a.id, MISSING_ID],
          ['body', 'supersedes', 1],
        ],
        [['not-an-id'], ['body', 'supersedes', 0]],
        [Array.from({ length: 21 }, () => a.id), ['body', 'supersedes']],
        ['x', ['body', 'supersedes']],
      ];
      for (const [supersedes, where] of cases) {
        const res = await api.post('/api/memories', { content: 'quokka replacement', project: 'sup-bad', supersedes }).expect(422);
        expect(loc(res)).toEqual(where);
      }
      expect(loc(await api.patch(`/api/memories/${a.id}`, { content: 'changed quokka', supersedes: [a.id] }).expect(422))).toEqual(['body', 'supersedes', 0]);
      expect(loc(await api.patch(`/api/memories/${a.id}`, { content: 'changed quokka', supersedes: [MISSING_ID] }).expect(422))).toEqual(['body', 'supersedes', 0]);
      const listed = await api.get('/api/memories?project=sup-bad&include_superseded=true').expect(200);
      expect(ids(listed)).toEqual([a.id]);
      expect((await api.get(`/api/memories/${a.id}`).expect(200)).body.memory).toMatchObject({ content: 'Kept as it is: quokka', version: 1 });
    });
  });

  describe('DELETE and bulk-delete', () => {
    it('deletes from the index and the object store', async () => {
      const m = await createMemory(api, { content: 'to delete' });
      const res = await api.delete(`/api/memories/${m.id}`).expect(200);
      expect(res.body).toEqual({ ok: true, deleted: true, id: m.id });
      await api.get(`/api/memories/${m.id}`).expect(404);
      await api.delete(`/api/memories/${m.id}`).expect(404);
      expect(await objectExists(m.id)).toBe(false);
    });

    it('bulk-deletes, reporting deleted ids and missing ones', async () => {
      const a = await createMemory(api, { content: 'a' });
      const b = await createMemory(api, { content: 'b' });
      const res = await api.post('/api/memories/bulk-delete', { ids: [a.id, b.id, MISSING_ID, 'junk', a.id] }).expect(200);
      expect(res.body).toEqual({ ok: true, deleted: 2, ids: [a.id, b.id], missing: [MISSING_ID, 'junk'] });
      await api.get(`/api/memories/${a.id}`).expect(404);
      expect(await objectExists(b.id)).toBe(false);
      expect((await api.post('/api/memories/bulk-delete', {}).expect(200)).body).toEqual({ ok: true, deleted: 0, ids: [], missing: [] });
    });

    it('refuses more than 1000 ids and non-list input', async () => {
      const res = await api.post('/api/memories/bulk-delete', { ids: Array.from({ length: 1001 }, () => MISSING_ID) }).expect(422);
      expect(loc(res)).toEqual(['body', 'ids']);
      expect(errType(res)).toBe('too_long');
      expect(errType(await api.post('/api/memories/bulk-delete', { ids: 'x' }).expect(422))).toBe('list_type');
    });
  });

  describe('download', () => {
    it('returns the markdown file with download headers', async () => {
      const m = await createMemory(api, { content: 'Downloadable body', title: 'D' });
      const res = await api.get(`/api/memories/${m.id}/download`).expect(200);
      expect(res.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(res.headers['content-disposition']).toBe(`attachment; filename="${m.id}.md"`);
      expect(res.text).toBe(await readObject(m.id));
      expect(res.text.endsWith('Downloadable body')).toBe(true);
      await api.get(`/api/memories/${m.id}/download?url=false`).expect(200);
      await api.get(`/api/memories/${MISSING_ID}/download`).expect(404);
      expect(errType(await api.get(`/api/memories/${m.id}/download?url=maybe`).expect(422))).toBe('bool_parsing');
    });

    onS3('gives the admin a presigned S3 URL, and a token a link of the service (it ends with the token), both without credentials', async () => {
      const m = await createMemory(api, { content: 'Presigned body' });
      const res = await (await adminAgent(t)).get(`/api/memories/${m.id}/download?url=true`).expect(200);
      expect(res.body).toEqual({ ok: true, url: expect.any(String), expires_in: 3600, expires_at: expect.stringMatching(ISO_MS) });
      const file = await fetch(res.body.url);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-disposition')).toBe(`attachment; filename="${m.id}.md"`);
      expect((await file.text()).endsWith('Presigned body')).toBe(true);
      const byToken = await api.get(`/api/memories/${m.id}/download?url=true`).expect(200);
      const u = new URL(byToken.body.url);
      expect(u.pathname).toMatch(/^\/api\/files\/memories\//);
      const served = await request(t.http)
        .get(u.pathname + u.search)
        .expect(200);
      expect(served.headers['content-disposition']).toBe(`attachment; filename="${m.id}.md"`);
      expect(served.text.endsWith('Presigned body')).toBe(true);
    });

    onFilesystem('gives a signed URL that works without a token, and refuses a tampered one', async () => {
      const m = await createMemory(api, { content: 'Signed body' });
      const before = Date.now();
      const res = await api.get(`/api/memories/${m.id}/download?url=true`).expect(200);
      const after = Date.now();
      expect(res.body).toEqual({ ok: true, url: expect.any(String), expires_in: 3600, expires_at: expect.stringMatching(ISO_MS) });
      // An hour after the request was answered (bracketed by the clock before and after it, so a slow machine cannot fail it).
      expect(Date.parse(res.body.expires_at)).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
      expect(Date.parse(res.body.expires_at)).toBeLessThanOrEqual(after + 3600_000 + 1000);
      const u = new URL(res.body.url);
      const file = await request(t.http)
        .get(u.pathname + u.search)
        .expect(200);
      expect(file.headers['content-type']).toBe('text/markdown; charset=utf-8');
      expect(file.headers['content-disposition']).toBe(`attachment; filename="${m.id}.md"`);
      expect(file.text.endsWith('Signed body')).toBe(true);

      const other = await createMemory(api, { content: 'Other body' });
      const sig = u.searchParams.get('sig')!;
      const expires = u.searchParams.get('expires')!;
      const tampered = [
        `${u.pathname}?expires=${Number(expires) + 1000}&sig=${sig}`,
        `${u.pathname.replace(m.id, other.id)}?expires=${expires}&sig=${sig}`,
        `${u.pathname}?expires=${expires}&sig=${sig.slice(0, -2)}AA`,
        `${u.pathname}?expires=${expires}`,
        `${u.pathname}`,
        `/api/files/memories/../memories/${m.id}.md?expires=${expires}&sig=${sig}`,
      ];
      for (const p of tampered) {
        const r = await request(t.http).get(p);
        expect([403, 404]).toContain(r.status);
        expect(r.body.ok).toBe(false);
        expect(r.text).not.toContain('Signed body');
      }
      const bad = await request(t.http).get(tampered[0]).expect(403);
      expect(bad.body).toEqual({ ok: false, error: expect.stringMatching(/invalid download link/i) });
    });

    onFilesystem('refuses an expired link with 403', async () => {
      const m = await createMemory(api, { content: 'Expiring body' });
      const key = `memories/${m.id}.md`;
      const past = Math.floor(Date.now() / 1000) - 5;
      const url = new URL(signFileUrl(t.app.get(SettingsService).serviceKey(), 'http://x', key, past));
      const res = await request(t.http)
        .get(url.pathname + url.search)
        .expect(403);
      expect(res.body).toEqual({ ok: false, error: 'Download link expired' });
    });
  });

  describe('stats', () => {
    it('sums by type, scope (every value), project and agent', async () => {
      await wipe();
      await createMemory(api, { content: 'a', type: 'fact', scope: 'project', project: 'p1', agent: 'x' });
      await createMemory(api, { content: 'b', type: 'fact', project: 'p1' });
      await createMemory(api, { content: 'c', type: 'code', scope: 'user', agent: 'x' });
      const res = await api.get('/api/stats').expect(200);
      expect(res.body).toEqual({
        ok: true,
        stats: {
          total: 3,
          by_type: { note: 0, fact: 2, decision: 0, task: 0, preference: 0, reference: 0, code: 1, conversation: 0 },
          by_scope: { global: 1, project: 1, agent: 0, user: 1 },
          by_project: { p1: 2, '(none)': 1 },
          by_agent: { x: 2, '(none)': 1 },
        },
      });
    });
  });

  describe('GET /api/memories (list mode)', () => {
    let created: MemoryDto[];

    beforeAll(async () => {
      await wipe();
      created = [];
      for (let i = 0; i < 25; i++) {
        created.push(
          await createMemory(api, {
            content: `List item number ${i} `.repeat(30),
            type: i % 3 === 0 ? 'task' : 'note',
            scope: i % 2 ? 'project' : 'global',
            agent: i % 5 === 0 ? 'lister' : undefined,
            project: i < 10 ? 'early' : 'late',
            tags: i % 4 === 0 ? ['four', 'even'] : i % 2 === 0 ? ['even'] : [],
          }),
        );
      }
    });
    const newest = () => [...created].reverse().map((m) => m.id);

    it('defaults: newest first, 20 rows, offset page 1, a cursor for the next page', async () => {
      const res = await api.get('/api/memories').expect(200);
      const b = res.body;
      expect(b).toMatchObject({ ok: true, count: 20, total: 25, page: 1, page_size: 20, total_pages: 2, has_prev: false, has_next: true, mode: 'list' });
      expect(b.rows.map((r: { id: string }) => r.id)).toEqual(newest().slice(0, 20));
      expect(typeof b.next_cursor).toBe('string');
      const row = b.rows[0];
      expect(Object.keys(row).sort()).toEqual(['agent', 'created_at', 'id', 'namespace', 'project', 'scope', 'snippet', 'tags', 'title', 'type', 'updated_at', 'version']);
      expect(row.snippet.length).toBeLessThanOrEqual(201);
      expect(row.snippet.startsWith('List item number 24')).toBe(true);
    });

    it('offset pages: page, skip overriding page, total_pages, has_prev/has_next', async () => {
      const p2 = (await api.get('/api/memories?limit=10&page=2').expect(200)).body;
      expect(p2.rows.map((r: { id: string }) => r.id)).toEqual(newest().slice(10, 20));
      expect(p2).toMatchObject({ page: 2, total_pages: 3, has_prev: true, has_next: true });
      const skip = (await api.get('/api/memories?limit=10&page=1&skip=12').expect(200)).body;
      expect(skip.rows.map((r: { id: string }) => r.id)).toEqual(newest().slice(12, 22));
      expect(skip.page).toBe(2);
      const last = (await api.get('/api/memories?limit=10&page=3').expect(200)).body;
      expect(last).toMatchObject({ count: 5, has_next: false, next_cursor: null });
      const beyond = (await api.get('/api/memories?limit=10&page=9').expect(200)).body;
      expect(beyond).toMatchObject({ count: 0, rows: [], has_next: false, has_prev: true });
    });

    it('cursor pages: page null, has_prev true, every row once', async () => {
      const seen: string[] = [];
      let res = (await api.get('/api/memories?limit=7').expect(200)).body;
      seen.push(...res.rows.map((r: { id: string }) => r.id));
      while (res.next_cursor) {
        res = (await api.get(`/api/memories?limit=7&after=${encodeURIComponent(res.next_cursor)}`).expect(200)).body;
        expect(res).toMatchObject({ page: null, has_prev: true, total: 25, mode: 'list' });
        seen.push(...res.rows.map((r: { id: string }) => r.id));
      }
      expect(seen).toEqual(newest());
      expect(res.has_next).toBe(false);
    });

    it('filters in list mode: type, scope, agent, project, tag (all must match), days, since', async () => {
      const q = async (qs: string) => (await api.get(`/api/memories?limit=200&${qs}`).expect(200)).body.rows.map((r: { id: string }) => r.id);
      const ids = (pred: (m: MemoryDto) => boolean) => newest().filter((id) => pred(created.find((m) => m.id === id)!));
      expect(await q('type=task')).toEqual(ids((m) => m.type === 'task'));
      expect(await q('scope=project')).toEqual(ids((m) => m.scope === 'project'));
      expect(await q('agent=lister')).toEqual(ids((m) => m.agent === 'lister'));
      expect(await q('project=early')).toEqual(ids((m) => m.project === 'early'));
      expect(await q('tag=even')).toEqual(ids((m) => m.tags.includes('even')));
      expect(await q('tag=even&tag=four')).toEqual(ids((m) => m.tags.includes('four')));
      expect(await q('tag=four&type=task&scope=global')).toEqual(ids((m) => m.tags.includes('four') && m.type === 'task' && m.scope === 'global'));
      expect(await q('days=1')).toHaveLength(25);
      expect(await q(`since=${encodeURIComponent(created[20].created_at)}`)).toEqual(newest().slice(0, 5));
      expect(await q(`since=${encodeURIComponent(new Date(Date.now() + 3600_000).toISOString())}`)).toEqual([]);
      // Both bounds: the later wins.
      expect(await q(`days=30&since=${encodeURIComponent(created[20].created_at)}`)).toEqual(newest().slice(0, 5));
      expect(await q('since=2000-01-01&days=1')).toHaveLength(25);
      // Filters work with cursors too.
      const first = (await api.get('/api/memories?limit=3&tag=even').expect(200)).body;
      const next = (await api.get(`/api/memories?limit=3&tag=even&after=${first.next_cursor}`).expect(200)).body;
      expect(next.rows.map((r: { id: string }) => r.id)).toEqual(ids((m) => m.tags.includes('even')).slice(3, 6));
      expect(next.total).toBe(ids((m) => m.tags.includes('even')).length);
    });

    it.each([
      ['limit=0', 'limit', 'greater_than_equal'],
      ['limit=201', 'limit', 'less_than_equal'],
      ['limit=abc', 'limit', 'int_parsing'],
      ['limit=1.5', 'limit', 'int_parsing'],
      ['limit=1&limit=2', 'limit', 'value_error'], // "Parameter 'limit' was given more than once",
      ['page=0', 'page', 'greater_than_equal'],
      ['skip=-1', 'skip', 'greater_than_equal'],
      ['days=0', 'days', 'greater_than_equal'],
      ['days=x', 'days', 'int_parsing'],
      ['type=bogus', 'type', 'enum'],
      ['scope=bogus', 'scope', 'enum'],
      ['since=yesterday', 'since', 'datetime_parsing'],
      ['after=garbage', 'after', 'value_error'],
      [`after=${Buffer.from('v1.1.zzzz').toString('base64url')}`, 'after', 'value_error'],
      ['q=x&after=abc', 'after', 'value_error'],
      [Array.from({ length: 51 }, (_, i) => `tag=t${i}`).join('&'), 'tag', 'too_long'],
      ['q=' + 'x'.repeat(1001), 'q', 'string_too_long'],
    ])('refuses %s with 422 at ["query", "%s"] (%s)', async (qs, field, type) => {
      const res = await api.get(`/api/memories?${qs}`).expect(422);
      expect(res.body.ok).toBe(false);
      expect(loc(res)).toEqual(['query', field]);
      expect(errType(res)).toBe(type);
    });

    it('accepts the boundary values', async () => {
      await api.get('/api/memories?limit=1&page=1&skip=0&days=1').expect(200);
      await api.get('/api/memories?limit=200').expect(200);
    });
  });

  describe('GET /api/memories?q= (search mode)', () => {
    beforeAll(async () => {
      await wipe();
    });

    it(`ranks a title hit above the same word in content, and more matched words higher${lacks('ranking')}`, async () => {
      const inContent = await createMemory(api, { content: 'Notes about the quarterly zirconium audit and other topics of the meeting', title: 'Meeting notes' });
      const inTitle = await createMemory(api, { content: 'Notes about the quarterly audit and other topics of the meeting today', title: 'Zirconium' });
      let res = (await api.get('/api/memories?q=zirconium').expect(200)).body;
      expect(res.mode).toBe('search');
      expect(res.next_cursor).toBeNull();
      if (!caps.ranking) {
        expect(res.rows.map((r: { id: string }) => r.id).sort()).toEqual([inTitle.id, inContent.id].sort());
        return;
      }
      expect(res.rows.map((r: { id: string }) => r.id)).toEqual([inTitle.id, inContent.id]);
      expect(res.rows[0].score).toBeGreaterThan(res.rows[1].score);

      const one = await createMemory(api, { content: 'walnut only, with plenty of padding words' });
      const two = await createMemory(api, { content: 'walnut and pecan, with plenty of padding words' });
      const three = await createMemory(api, { content: 'walnut pecan hazelnut, with plenty of padding' });
      res = (await api.get('/api/memories?q=walnut pecan hazelnut').expect(200)).body;
      expect(res.rows.map((r: { id: string }) => r.id)).toEqual([three.id, two.id, one.id]);
    });

    it(`stems (deploy finds Deployments), ignores case and accents, matches phrases, excludes -words${lacks('stemming', 'accents')}`, async () => {
      const dep = await createMemory(api, { content: 'Deployments run through the Crème Brûlée pipeline' });
      const stg = await createMemory(api, { content: 'we deploy the staging cluster with the brulee pipeline' });
      const ids = async (q: string) => (await api.get(`/api/memories?q=${encodeURIComponent(q)}`).expect(200)).body.rows.map((r: { id: string }) => r.id).sort();
      if (caps.stemming) {
        expect(await ids('deploy')).toEqual([dep.id, stg.id].sort());
        expect(await ids('DEPLOYMENTS')).toEqual([dep.id, stg.id].sort());
      } else {
        expect(await ids('DEPLOYMENTS')).toEqual([dep.id]);
      }
      expect(await ids(caps.accents ? 'creme' : 'crème')).toEqual([dep.id]);
      expect(await ids('"brulee pipeline"')).toEqual([dep.id, stg.id].sort());
      expect(await ids('"staging pipeline"')).toEqual([]);
      expect(await ids('deploy -staging')).toEqual([dep.id]);
      expect(await ids('deploy -"staging cluster"')).toEqual([dep.id]);
    });

    it(`shows a snippet around the match${lacks('matchSnippets')}`, async () => {
      const long = `${'filler words go here. '.repeat(60)}The secret ingredient is saffron. ${'more filler text. '.repeat(60)}`;
      const m = await createMemory(api, { content: long });
      const row = (await api.get('/api/memories?q=saffron').expect(200)).body.rows.find((r: { id: string }) => r.id === m.id);
      expect(row.snippet.length).toBeLessThan(400);
      if (caps.matchSnippets) expect(row.snippet).toContain('saffron');
    });

    it('pages search results with offsets and applies filters', async () => {
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await createMemory(api, { content: `quokka number ${i}`, type: i % 2 ? 'fact' : 'note', tags: i < 2 ? ['pair'] : [] }));
      const p1 = (await api.get('/api/memories?q=quokka&limit=2').expect(200)).body;
      expect(p1).toMatchObject({ count: 2, total: 5, page: 1, total_pages: 3, has_prev: false, has_next: true, next_cursor: null, mode: 'search' });
      const p3 = (await api.get('/api/memories?q=quokka&limit=2&skip=4').expect(200)).body;
      expect(p3).toMatchObject({ count: 1, page: 3, has_prev: true, has_next: false });
      expect((await api.get('/api/memories?q=quokka&type=fact').expect(200)).body.total).toBe(2);
      expect((await api.get('/api/memories?q=quokka&tag=pair').expect(200)).body.total).toBe(2);
      expect((await api.get(`/api/memories?q=quokka&since=${encodeURIComponent(made[3].created_at)}`).expect(200)).body.total).toBe(2);
    });

    it('answers a keyword search page whose rows a search worker serialised exactly as the page object', async () => {
      for (let i = 0; i < 3; i++) await createMemory(api, { content: `numbat sighting ${i}`, tags: ['wildlife'] });
      const pool = (t.app.get(BackendsService).docdb as Partial<SqliteDocumentDatabase>).searchWorkers?.();
      if (backend.docdb === 'sqlite' && t.app.get(AppConfig).searchWorkers > 0) expect(pool).toBeDefined();
      if (pool) {
        await pool.start();
        expect(pool.readyCount()).toBeGreaterThan(0); // so the rows below cross from a worker as JSON text
      }
      const query = { q: 'numbat', limit: 2, page: 1, mode: 'keyword' } as ListMemoriesQueryDto;
      const res = await api.get('/api/memories?q=numbat&limit=2&mode=keyword').expect(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.text));
      expect(res.headers['x-content-type-options']).toBe('nosniff'); // the security headers come along
      expect(res.body).toMatchObject({ ok: true, count: 2, total: 3, has_next: true, search_mode: 'keyword' });
      expect(res.text).toBe(JSON.stringify(await t.app.get(MemoriesService).list('default', query)));
      // HEAD: the same headers, no body.
      const head = await request(t.http).head('/api/memories?q=numbat&limit=2&mode=keyword').set('Authorization', `Bearer ${api.bearer}`).expect(200);
      expect(head.headers['content-length']).toBe(res.headers['content-length']);
      expect(head.text ?? '').toBe('');
    });

    it('drops stop words: "what does the user prefer" finds the preference, not every "the"', async () => {
      const pref = await createMemory(api, { content: 'The user prefers tabs over spaces', type: 'preference' });
      for (let i = 0; i < 3; i++) await createMemory(api, { content: `the what and the does ${i}` });
      const res = (await api.get(`/api/memories?q=${encodeURIComponent('what does the user prefer')}`).expect(200)).body;
      expect(res.rows.map((r: { id: string }) => r.id)).toEqual([pref.id]);
    });

    it('answers hostile query strings with 200 or 422, never 500', async () => {
      const hostile = [
        '"',
        '"unbalanced',
        '(',
        ')',
        'NEAR(',
        'NEAR(a b, 3)',
        '*',
        'a*',
        '-',
        '--x',
        'title:secret',
        'content:x',
        '{title content}:x',
        '^x',
        'a AND',
        'OR NOT',
        "' OR 1=1 --",
        "'; DROP TABLE memories; --",
        'SELECT * FROM memories',
        '%00',
        '\\',
        '🚀',
        '\u0000',
        'x'.repeat(1000),
      ];
      for (const q of hostile) {
        const res = await api.get(`/api/memories?q=${encodeURIComponent(q)}`);
        expect([200, 422]).toContain(res.status);
        expect(res.body.ok).toBe(res.status === 200);
      }
      await api.get('/api/stats').expect(200);
    });
  });

  it('lets a signed-in admin session use every memory route', async () => {
    const admin = await adminAgent(t);
    const created = await admin.post('/api/memories').send({ content: 'from the admin page' }).expect(201);
    const id = created.body.memory.id;
    await admin.get('/api/memories').expect(200);
    await admin.get(`/api/memories/${id}`).expect(200);
    await admin.patch(`/api/memories/${id}`).send({ title: 'x' }).expect(200);
    await admin.get(`/api/memories/${id}/download`).expect(200);
    await admin.get(`/api/memories/${id}/download?url=true`).expect(200);
    await admin.get('/api/stats').expect(200);
    await admin.delete(`/api/memories/${id}`).expect(200);
    await admin
      .post('/api/memories/bulk-delete')
      .send({ ids: [id] })
      .expect(200);
  });

  it('refuses memory routes without credentials (401)', async () => {
    await request(t.http).get('/api/memories').expect(401);
    await request(t.http).post('/api/memories').send({ content: 'x' }).expect(401);
    await request(t.http).get('/api/stats').expect(401);
  });
});
