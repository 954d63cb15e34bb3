/**
 * Switching backends at run time (CONTRACT §5, issue 4): embedded → MongoDB + S3 → embedded
 * through POST /api/config, with no restart, while one client keeps its admin session and
 * another its API token. Memories are not moved: each backend keeps its own.
 */
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import request from 'supertest';
import { BackendsService } from '../../src/backends/backends.service';
import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import { SettingsService } from '../../src/config/settings.service';
import { adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { createTestBucket, freshDatabaseName, testMongoUri, testS3Endpoint } from '../support/backends';
import { S3RVER_CREDENTIALS } from '../support/servers';

const mongoUri = testMongoUri();
const s3Endpoint = testS3Endpoint();

// Without both servers the global setup printed which one is missing ("... suites: SKIPPED")
// and, under MEMSTORE_REQUIRE_ALL_BACKENDS=1, failed the run.
const withServers = mongoUri && s3Endpoint ? describe : () => undefined;

withServers('switching embedded → MongoDB + S3 → embedded without a restart', () => {
  let t: TestApp;
  let admin: Awaited<ReturnType<typeof adminAgent>>;
  let bearer: string;
  let bucket: string;
  let dbName: string;
  const asToken = () => ({
    get: (url: string) => request(t.http).get(url).set('Authorization', `Bearer ${bearer}`),
    post: (url: string, body: object) => request(t.http).post(url).set('Authorization', `Bearer ${bearer}`).send(body),
  });

  beforeAll(async () => {
    t = await createTestApp();
    admin = await adminAgent(t);
    bearer = (await createToken(t, { name: 'agent', preset: 'full' })).plaintext;
    bucket = await createTestBucket();
    dbName = freshDatabaseName();
  });
  afterAll(async () => t?.close());

  async function objectsInBucket(): Promise<string[]> {
    const client = new S3Client({ endpoint: s3Endpoint!, region: 'us-east-1', forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
    try {
      const out = await client.send(new ListObjectsV2Command({ Bucket: bucket }));
      return (out.Contents ?? []).map((o) => o.Key!);
    } finally {
      client.destroy();
    }
  }

  it('keeps the session and the token across both switches, each backend with its own memories', async () => {
    // 1. Embedded.
    const onEmbedded = await asToken().post('/api/memories', { content: 'Embedded memory about sqlite', title: 'embedded' }).expect(201);
    const embeddedId = onEmbedded.body.memory.id as string;
    let status = await admin.get('/api/status').expect(200);
    expect(status.body.docdb).toMatchObject({ backend: 'sqlite', ok: true });
    expect(status.body.objstore).toMatchObject({ backend: 'filesystem', ok: true });

    // 2. Switch to MongoDB + S3 through the admin API.
    const saved = await admin
      .post('/api/config')
      .send({
        docdb_uri: mongoUri,
        docdb_db: dbName,
        objstore_bucket: bucket,
        objstore_endpoint: s3Endpoint,
        objstore_access_key_id: S3RVER_CREDENTIALS.accessKeyId,
        objstore_secret_access_key: S3RVER_CREDENTIALS.secretAccessKey,
      })
      .expect(200);
    expect(saved.body.ok).toBe(true);
    expect(saved.body.complete).toBe(true);

    // The admin is still signed in, the token still works (both were carried over).
    expect((await admin.get('/api/me').expect(200)).body).toMatchObject({ authenticated: true, kind: 'admin' });
    expect((await asToken().get('/api/me').expect(200)).body).toMatchObject({ authenticated: true, kind: 'token' });
    status = await admin.get('/api/status').expect(200);
    expect(status.body.docdb).toMatchObject({ backend: 'mongodb', ok: true });
    expect(status.body.objstore).toMatchObject({ backend: 's3', ok: true });
    expect((await admin.get('/api/config').expect(200)).body.status).toMatch(/MongoDB database .* S3 bucket/s);

    // Memories were not moved: the new backend starts empty, the embedded one still counts its memory.
    let list = await asToken().get('/api/memories').expect(200);
    expect(list.body.total).toBe(0);
    await asToken().get(`/api/memories/${embeddedId}`).expect(404);
    const counts = [
      { backend: 'mongodb', active: true, count: 0 },
      { backend: 'sqlite', active: false, count: 1 },
    ];
    expect((await admin.get('/api/status').expect(200)).body.memories).toMatchObject({ count: 0, by_backend: counts });
    expect((await admin.get('/api/config').expect(200)).body.memories).toEqual(counts);

    // 3. Memories now live in MongoDB (index) and the bucket (markdown files).
    const onMongo = await asToken()
      .post('/api/memories', { content: 'Production memory about mongodb', title: 'production', tags: ['prod'] })
      .expect(201);
    const mongoId = onMongo.body.memory.id as string;
    expect((await asToken().get(`/api/memories/${mongoId}`).expect(200)).body.memory.content).toBe('Production memory about mongodb');
    expect((await objectsInBucket()).some((k) => k.includes(mongoId))).toBe(true);
    const search = await asToken().get('/api/memories?q=mongodb').expect(200);
    expect(search.body.rows.map((r: { id: string }) => r.id)).toEqual([mongoId]);
    const link = await admin.get(`/api/memories/${mongoId}/download?url=true`).expect(200);
    expect(link.body.url.startsWith(`${s3Endpoint}/${bucket}/`)).toBe(true);
    const fetched = await fetch(link.body.url);
    expect(fetched.status).toBe(200);
    expect(await fetched.text()).toContain('Production memory about mongodb');
    const mongoDb = t.app.get(BackendsService).docdb;

    // 4. Back to the embedded pair: clearing docdb_uri and objstore_bucket.
    await admin.post('/api/config').send({ docdb_uri: '', objstore_bucket: '' }).expect(200);
    expect((await admin.get('/api/me').expect(200)).body).toMatchObject({ authenticated: true, kind: 'admin' });
    status = await admin.get('/api/status').expect(200);
    expect(status.body.docdb).toMatchObject({ backend: 'sqlite', ok: true });
    expect(status.body.objstore).toMatchObject({ backend: 'filesystem', ok: true });
    list = await asToken().get('/api/memories').expect(200);
    expect(list.body.rows.map((r: { id: string }) => r.id)).toEqual([embeddedId]);
    expect((await admin.get('/api/config').expect(200)).body.memories).toEqual([{ backend: 'sqlite', active: true, count: 1 }]);
    expect((await asToken().get(`/api/memories/${embeddedId}`).expect(200)).body.memory.content).toBe('Embedded memory about sqlite');
    await asToken().get(`/api/memories/${mongoId}`).expect(404);

    // The replaced MongoDB connection is closed once requests in flight have drained.
    await new Promise((r) => setTimeout(r, 5_500));
    await expect(mongoDb.ping()).rejects.toThrow('Document database unavailable: the MongoDB connection is closed');
  }, 60_000);

  it('a request that started before a switch finishes on the adapters it started with', async () => {
    const backends = t.app.get(BackendsService);
    const index = t.app.get(MemoryIndex);
    const settings = t.app.get(SettingsService);
    const before = await index.count('default');
    expect(before).toBeGreaterThan(0); // the embedded memory of the first test
    await backends.pin(async () => {
      await settings.save({ docdb_uri: mongoUri, docdb_db: freshDatabaseName() });
      await backends.settled();
      expect(backends.docdb.kind).toBe('mongodb'); // new requests go to MongoDB...
      expect(await index.count('default')).toBe(before); // ...this one still reads the embedded index
    });
    expect(await index.count('default')).toBe(0); // outside the pinned request: the new, empty database
    await settings.save({ docdb_uri: '' });
    await backends.settled();
    expect(backends.docdb.kind).toBe('sqlite');
  });
});
