import * as fs from 'node:fs';
import * as path from 'node:path';
import request from 'supertest';
import { runCli } from '../../src/cli';
import { loadAppConfig } from '../../src/config/app-config';
import { SettingsService } from '../../src/config/settings.service';
import type { MemoryDoc } from '../../src/backends/ports/memory.model';
import { MemoriesService } from '../../src/memories/memories.service';
import { newMemoryId } from '../../src/memories/memory-id';
import { migrate, MigrationInterruptedError } from '../../src/portability/migration';
import { closePair, openPair, planMigration } from '../../src/portability/migration-target';
import { ADMIN_PASSWORD, createTestApp, createToken, TestApp, tempDir } from '../support/app';
import { mongoTestEnv, s3TestEnv, testMongoUri, testS3Endpoint } from '../support/backends';

// 5,000 memories through FerretDB (no sort index) and s3rver: minutes on a loaded 2-core machine.
jest.setTimeout(1_200_000);

const SECRET = 'test-secret-key-0123456789abcdef0123456789abcdef';
const N = 5000;
const TYPES = ['note', 'fact', 'decision', 'task'] as const;

function cli(argv: string[], env: Record<string, string>): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  return runCli(argv, { MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_SECRET_KEY: SECRET, ...env }, io).then((code) => ({ code, text: lines.join('\n') }));
}

/** Everything a reader can see of the memories: ids, every field and content (sorted by id). */
async function snapshot(t: TestApp, bearer: string): Promise<string[]> {
  const out: string[] = [];
  let after = '';
  for (;;) {
    const res = await request(t.http)
      .get(`/api/memories?limit=200${after ? `&after=${after}` : ''}`)
      .set('Authorization', `Bearer ${bearer}`)
      .expect(200);
    for (const r of res.body.rows) out.push(JSON.stringify(r));
    if (!res.body.next_cursor) break;
    after = res.body.next_cursor;
  }
  return out.sort();
}

/** The version history of a memory as a reader sees it: the list and each kept version. */
async function history(t: TestApp, bearer: string, id: string): Promise<unknown[]> {
  const list = (await request(t.http).get(`/api/memories/${id}/versions`).set('Authorization', `Bearer ${bearer}`).expect(200)).body;
  const out: unknown[] = [list];
  for (const r of list.rows) out.push((await request(t.http).get(`/api/memories/${id}/versions/${r.version}`).set('Authorization', `Bearer ${bearer}`).expect(200)).body);
  return out;
}

async function sessionCookie(t: TestApp): Promise<string> {
  const res = await request(t.http).post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200);
  return (res.headers['set-cookie'] as unknown as string[]).map((c) => c.split(';')[0]).join('; ');
}

const available = testMongoUri() !== null && testS3Endpoint() !== null;

if (!available) {
  describe('migration between backends', () => {
    it('needs MongoDB and S3 test servers (none was started: see the global setup output)', () => {
      expect(available).toBe(false);
    });
  });
} else {
  describe('migration: embedded → MongoDB + S3 → embedded, 5,000 memories, interrupted once', () => {
    const dirA = tempDir();
    const dirB = tempDir();
    const dirC = path.join(tempDir(), 'restored');
    let target: Record<string, string>;
    let a: TestApp;
    let bearer: string;
    let cookie: string;
    let before: string[];
    const sample: Array<Record<string, unknown>> = [];

    beforeAll(async () => {
      target = { ...mongoTestEnv(), ...(await s3TestEnv()) };
      a = await createTestApp({ MEMSTORE_DATA_DIR: dirA, MEMSTORE_SECRET_KEY: SECRET });
      bearer = (await createToken(a, { preset: 'full' })).plaintext;
      cookie = await sessionCookie(a);
      // Seeded through the service (not over HTTP), 50 at a time.
      const svc = a.app.get(MemoriesService);
      const t0 = Date.UTC(2025, 0, 1);
      for (let start = 0; start < N; start += 50) {
        const docs: MemoryDoc[] = [];
        for (let i = start; i < Math.min(N, start + 50); i++) {
          const at = new Date(t0 + i * 60_000);
          docs.push({
            id: newMemoryId(at.getTime()),
            namespace: 'default',
            title: i % 7 === 0 ? null : `Memory ${i} — ünïcødé "quoted"`,
            content: `Content ${i}\n---\nline with: colon and #tag${i % 13}\n`,
            type: TYPES[i % TYPES.length],
            scope: 'global',
            tags: [`t${i % 5}`, `group-${i % 11}`],
            project: i % 3 === 0 ? 'alpha' : null,
            agent: i % 4 === 0 ? 'claude' : null,
            createdAt: at,
            updatedAt: new Date(at.getTime() + (i % 2) * 1000),
            version: 1,
          });
        }
        await Promise.all(docs.map((d) => svc.putExact(d, false)));
        if (start % 1000 === 0) sample.push({ id: docs[0].id });
      }
      // Three memories with earlier versions (v1 → v2 → v3): their history must survive both hops.
      for (const s of sample.slice(0, 3)) {
        await svc.update('default', s.id as string, { content: `second body of ${s.id as string}` });
        await svc.update('default', s.id as string, { title: 'third title', content: `third body of ${s.id as string}` });
      }
      before = await snapshot(a, bearer);
      expect(before).toHaveLength(N);
    });
    afterAll(async () => {
      await a?.close();
    });

    it('copies, is interrupted, resumes from its checkpoint, verifies; tokens and the admin session keep working', async () => {
      const cfgA = loadAppConfig({ MEMSTORE_DATA_DIR: dirA, MEMSTORE_SECRET_KEY: SECRET });
      const settings = new SettingsService(cfgA);
      const to = Object.fromEntries(Object.entries(target).map(([k, v]) => [k.replace(/^MEMSTORE_/, '').toLowerCase(), v]));
      const plan = planMigration({ settings: settings.current(), dataDir: dirA }, to, {});
      expect(plan).toMatchObject({ copyDocdb: true, copyObjects: true });
      const checkpoint = path.join(tempDir(), 'checkpoint.json');

      // First run: stopped half-way through the memories.
      const source = await openPair(cfgA, settings, plan.source);
      const dest = await openPair(cfgA, settings, plan.target);
      const abort = new AbortController();
      let error: unknown;
      try {
        await migrate(source, dest, {
          copyDocdb: true,
          copyObjects: true,
          checkpointFile: checkpoint,
          signal: abort.signal,
          onProgress: (p) => {
            if (p.phase === 'memories' && p.done >= 2000) abort.abort();
          },
        });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(MigrationInterruptedError);
      expect(fs.existsSync(checkpoint)).toBe(true);
      const partial = await dest.db.memories.count('default');
      expect(partial).toBeGreaterThanOrEqual(2000);
      expect(partial).toBeLessThan(N);
      await closePair(source);
      await closePair(dest);

      // Second run, through the command line: resumes and verifies.
      const env = Object.fromEntries(Object.entries(target).map(([k, v]) => [k.replace(/^MEMSTORE_/, 'MEMSTORE_TO_'), v]));
      const resumed = await cli(['migrate', '--checkpoint', checkpoint], { MEMSTORE_DATA_DIR: dirA, ...env });
      expect(resumed.text).toContain('resumed from a checkpoint: yes');
      expect(resumed.text).toContain(`memories: source ${N}, target ${N}`);
      expect(resumed.text).toMatch(/verified: yes, counts and checksums match/);
      const sums = [...resumed.text.matchAll(/checksum: source ([0-9a-f]{64}), target ([0-9a-f]{64})/g)];
      expect(sums).toHaveLength(2);
      for (const s of sums) expect(s[1]).toBe(s[2]);
      expect(resumed.code).toBe(0);
      expect(fs.existsSync(checkpoint)).toBe(false);

      // The service on MongoDB + S3: same memories, the token and the admin session still work.
      const b = await createTestApp({ MEMSTORE_DATA_DIR: dirB, MEMSTORE_SECRET_KEY: SECRET, ...target });
      try {
        // (FerretDB sorts without an index: a full listing over HTTP is slow there; the migration verified every memory.)
        expect((await request(b.http).get('/api/memories?limit=1').set('Authorization', `Bearer ${bearer}`).expect(200)).body.total).toBe(N);
        for (const s of sample) {
          const x = await request(a.http)
            .get(`/api/memories/${s.id as string}`)
            .set('Authorization', `Bearer ${bearer}`)
            .expect(200);
          const y = await request(b.http)
            .get(`/api/memories/${s.id as string}`)
            .set('Authorization', `Bearer ${bearer}`)
            .expect(200);
          expect(y.body).toEqual(x.body);
        }
        for (const s of sample.slice(0, 3)) {
          const h = await history(b, bearer, s.id as string);
          expect((h[0] as { total: number }).total).toBe(3);
          expect(h).toEqual(await history(a, bearer, s.id as string));
        }
        expect((await request(b.http).get('/api/me').set('Cookie', cookie).expect(200)).body).toMatchObject({ authenticated: true });
        expect((await request(b.http).get('/api/memories?q=colon').set('Authorization', `Bearer ${bearer}`).expect(200)).body.total).toBeGreaterThan(0);

        // And back to the embedded default, in a new data directory.
        const back = await cli(['migrate', '--to-embedded-docdb', '--to-filesystem', '--to-data-dir', dirC], { MEMSTORE_DATA_DIR: dirB, ...target });
        expect(back.text).toContain(`memories: source ${N}, target ${N}`);
        expect(back.text).toContain('resumed from a checkpoint: no');
        expect(back.code).toBe(0);
      } finally {
        await b.close();
      }
      const c = await createTestApp({ MEMSTORE_DATA_DIR: dirC, MEMSTORE_SECRET_KEY: SECRET });
      try {
        expect(await snapshot(c, bearer)).toEqual(before);
        for (const s of sample.slice(0, 3)) expect(await history(c, bearer, s.id as string)).toEqual(await history(a, bearer, s.id as string));
        expect((await request(c.http).get('/api/me').set('Cookie', cookie).expect(200)).body).toMatchObject({ authenticated: true });
        expect((await request(c.http).get('/api/memories?q=colon').set('Authorization', `Bearer ${bearer}`).expect(200)).body.total).toBeGreaterThan(0);
        const files = fs.readdirSync(path.join(dirC, 'objects', 'memories'));
        expect(files).toHaveLength(N + 6); // every memory's file, and 2 earlier versions of 3 memories
      } finally {
        await c.close();
      }
      // The source was only read.
      expect(await snapshot(a, bearer)).toEqual(before);
    });

    it('moves the files between two S3 buckets, leaving the document database alone', async () => {
      const second = await s3TestEnv();
      const res = await cli(
        [
          'migrate',
          '--to-objstore-bucket',
          second.MEMSTORE_OBJSTORE_BUCKET,
          '--to-objstore-endpoint',
          second.MEMSTORE_OBJSTORE_ENDPOINT,
          '--to-objstore-access-key-id',
          second.MEMSTORE_OBJSTORE_ACCESS_KEY_ID,
          '--to-objstore-secret-access-key',
          second.MEMSTORE_OBJSTORE_SECRET_ACCESS_KEY,
        ],
        { MEMSTORE_DATA_DIR: dirB, ...target },
      );
      expect(res.text).toContain(`objects: ${N + 6} in the source, ${N + 6} copied`);
      expect(res.text).not.toContain('memories: source');
      expect(res.code).toBe(0);
      const d = await createTestApp({ MEMSTORE_DATA_DIR: tempDir(), MEMSTORE_SECRET_KEY: SECRET, ...target, ...second });
      try {
        const x = await request(d.http)
          .get(`/api/memories/${sample[1].id as string}/download`)
          .set('Authorization', `Bearer ${bearer}`)
          .expect(200);
        const y = await request(a.http)
          .get(`/api/memories/${sample[1].id as string}/download`)
          .set('Authorization', `Bearer ${bearer}`)
          .expect(200);
        expect(x.text).toBe(y.text);
      } finally {
        await d.close();
      }
    });

    it('says what is wrong: usage errors exit 2, an equal target too, a non-empty target is refused', async () => {
      expect((await cli(['migrate', '--bogus'], { MEMSTORE_DATA_DIR: dirA })).code).toBe(2);
      expect((await cli(['migrate'], { MEMSTORE_DATA_DIR: dirA })).code).toBe(2);
      const again = await cli(['migrate', '--to-embedded-docdb', '--to-filesystem', '--to-data-dir', dirC], { MEMSTORE_DATA_DIR: dirA });
      expect(again.text).toMatch(/already holds 5000 memories/);
      expect(again.code).toBe(1);
      const help = await cli(['migrate', '--help'], {});
      expect(help.code).toBe(0);
      expect(help.text).toContain('--to-docdb-uri');
    });
  });
}
