/**
 * Issue 43: a data directory and a MongoDB database (with its S3 bucket) written by the release
 * before namespaces (5907d87; test/fixtures/pre-namespaces, made by that release's own service)
 * upgrade in place: every memory, version and token is in `default`, nothing is lost, the old
 * objects are still read, and another namespace sees none of it.
 */
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { EJSON } from 'bson';
import { MongoClient } from 'mongodb';
import * as fs from 'node:fs';
import * as path from 'node:path';
import request from 'supertest';
import { adminAgent, createTestApp, createToken, TestApp, tempDir } from '../support/app';
import { mongoTestEnv, s3TestEnv, testMongoUri, testS3Endpoint } from '../support/backends';
import { S3RVER_CREDENTIALS } from '../support/servers';

jest.setTimeout(120_000);
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'pre-namespaces');
const KEY = 'upgrade-fixture-secret-0123456789abcdef0123456789abcdef';

interface Written {
  token: string;
  ids: string[];
}

async function checkUpgraded(t: TestApp, old: Written): Promise<void> {
  const api = (r: request.Test) => r.set('Authorization', `Bearer ${old.token}`);
  // The old token works, in default, without choosing.
  const list = (await api(request(t.http).get('/api/memories')).expect(200)).body;
  expect(list.rows.map((r: { id: string }) => r.id).sort()).toEqual([...old.ids].sort());
  for (const id of old.ids) {
    const m = (await api(request(t.http).get(`/api/memories/${id}`)).expect(200)).body.memory;
    expect(m.namespace).toBe('default');
    const file = (await api(request(t.http).get(`/api/memories/${id}/download`)).expect(200)).text;
    expect(file).toContain(m.content.split('\n')[0]);
  }
  const first = (await api(request(t.http).get(`/api/memories/${old.ids[0]}`)).expect(200)).body.memory;
  expect(first).toMatchObject({ version: 2, content: 'Deploys go through the blue-green pipeline; never on Fridays or holidays.' });
  const versions = (await api(request(t.http).get(`/api/memories/${old.ids[0]}/versions`)).expect(200)).body;
  expect(versions.rows.map((r: { version: number }) => r.version)).toEqual([2, 1]);
  expect((await api(request(t.http).get(`/api/memories/${old.ids[0]}/versions/1`)).expect(200)).body.memory.content).toBe('Deploys go through the blue-green pipeline; never on Fridays.');
  expect((await api(request(t.http).get('/api/memories?q=lisbon&mode=keyword')).expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([old.ids[1]]);
  expect((await api(request(t.http).get('/api/stats')).expect(200)).body.stats.total).toBe(3);
  // The token is bound to default; a new write of it lands there, under the old object layout.
  const admin = await adminAgent(t);
  const tokens = (await admin.get('/api/tokens').expect(200)).body.tokens as Array<{ name: string; namespaces: string[] }>;
  expect(tokens.find((x) => x.name === 'old agent')?.namespaces).toEqual(['default']);
  await api(request(t.http).patch(`/api/memories/${old.ids[2]}`))
    .send({ content: 'Buy oat milk and bread.' })
    .expect(200);
  // The usage of default (decision 0155) is counted from what was there, and follows the write.
  let bytes = 0;
  for (const id of old.ids) bytes += Buffer.byteLength((await api(request(t.http).get(`/api/memories/${id}`)).expect(200)).body.memory.content as string);
  expect((await api(request(t.http).get('/api/namespaces')).expect(200)).body.namespaces).toEqual([{ namespace: 'default', memories: 3, bytes }]);
  // Another namespace sees nothing of it.
  const other = (await createToken(t, { name: 'other', preset: 'full', namespaces: ['other'] })).plaintext;
  const o = (r: request.Test) => r.set('Authorization', `Bearer ${other}`);
  expect((await o(request(t.http).get('/api/memories')).expect(200)).body.rows).toEqual([]);
  await o(request(t.http).get(`/api/memories/${old.ids[0]}`)).expect(404);
}

describe('upgrade to namespaces', () => {
  it('a data directory of the release before (SQLite + filesystem)', async () => {
    const dir = tempDir('memstore-upgrade-');
    fs.cpSync(path.join(FIXTURE, 'sqlite-data'), dir, { recursive: true });
    const old = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'sqlite.json'), 'utf8')) as Written;
    const t = await createTestApp({ MEMSTORE_DATA_DIR: dir, MEMSTORE_SECRET_KEY: KEY });
    try {
      await checkUpgraded(t, old);
    } finally {
      await t.close();
    }
  });

  // Without FerretDB and s3rver the global setup says why (and MEMSTORE_REQUIRE_ALL_BACKENDS=1 fails the run).
  if (!testMongoUri() || !testS3Endpoint()) return;
  it('a MongoDB database and S3 bucket of the release before (FerretDB + s3rver)', async () => {
    const dump = EJSON.parse(fs.readFileSync(path.join(FIXTURE, 'mongo.json'), 'utf8'), { relaxed: false }) as Written & {
      collections: Record<string, Array<Record<string, unknown>>>;
      objects: Record<string, string>;
    };
    const env = { ...mongoTestEnv(), ...(await s3TestEnv()) };
    const client = await MongoClient.connect(env.MEMSTORE_DOCDB_URI);
    const s3 = new S3Client({ endpoint: env.MEMSTORE_OBJSTORE_ENDPOINT, region: 'us-east-1', forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
    try {
      const db = client.db(env.MEMSTORE_DOCDB_DB);
      for (const [name, docs] of Object.entries(dump.collections)) if (docs.length > 0) await db.collection(name).insertMany(docs);
      for (const [key, body] of Object.entries(dump.objects)) await s3.send(new PutObjectCommand({ Bucket: env.MEMSTORE_OBJSTORE_BUCKET, Key: key, Body: body }));
      expect(await db.collection('memories').countDocuments({ namespace: { $exists: true } })).toBe(0);
      const t = await createTestApp({ ...env, MEMSTORE_SECRET_KEY: KEY });
      try {
        await checkUpgraded(t, dump);
        // In place, in the database itself: every memory and version claim now says default.
        expect(await db.collection('memories').countDocuments({ namespace: 'default' })).toBe(3);
        expect(await db.collection('memories_versions').countDocuments({ namespace: { $ne: 'default' } })).toBe(0);
      } finally {
        await t.close();
      }
    } finally {
      await client.close();
      s3.destroy();
    }
  });
});
