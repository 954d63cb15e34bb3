import request from 'supertest';
import { adminAgent, createTestApp, TestApp } from '../support/app';
import { mongoTestEnv, testMongoUri } from '../support/backends';
import { createMemory, fullAccessApi } from './memories.helpers';

jest.setTimeout(120_000);

const uri = testMongoUri();

if (!uri) {
  describe('admin page: copy the memories to the new backends', () => {
    it('needs a MongoDB-wire server (none was started: see the global setup output)', () => {
      expect(uri).toBeNull();
    });
  });
} else {
  describe('admin page: copy the memories to the new backends', () => {
    let t: TestApp;
    afterAll(async () => {
      await t?.close();
    });

    it('after switching to MongoDB, offers the N embedded memories, copies them in the background, and the API serves them', async () => {
      t = await createTestApp();
      const api = await fullAccessApi(t);
      const created = [];
      for (let i = 0; i < 30; i++) created.push(await createMemory(api, { content: `embedded memory ${i}`, tags: ['moved'] }));
      const admin = await adminAgent(t);
      expect((await admin.get('/api/migrate').expect(200)).body).toMatchObject({ available: false, job: null });

      const mongo = mongoTestEnv(uri);
      await admin.post('/api/config').send({ docdb_uri: mongo.MEMSTORE_DOCDB_URI, docdb_db: mongo.MEMSTORE_DOCDB_DB }).expect(200);
      expect((await api.get('/api/memories').expect(200)).body.total).toBe(0); // not moved by themselves
      const offer = (await admin.get('/api/migrate').expect(200)).body;
      expect(offer).toMatchObject({ available: true, memories: 30, source: expect.stringContaining('embedded SQLite') });
      expect(offer.target).toContain('MongoDB');

      await request(t.http).post('/api/migrate').set('Authorization', `Bearer ${api.bearer}`).expect(403); // tokens cannot
      const started = await admin.post('/api/migrate').expect(202);
      expect(started.body.job.state).toBe('running');
      await admin.post('/api/migrate').expect(409); // one at a time
      let job = started.body.job;
      for (let i = 0; i < 200 && job.state === 'running'; i++) {
        await new Promise((r) => setTimeout(r, 250));
        job = (await admin.get('/api/migrate').expect(200)).body.job;
      }
      expect(job).toMatchObject({ state: 'done', error: null });
      expect(job.report.verified.ok).toBe(true);
      expect(job.report.memories).toMatchObject({ source: 30, target: 30 });

      const listed = await api.get('/api/memories?limit=100').expect(200);
      expect(listed.body.total).toBe(30);
      const one = await api.get(`/api/memories/${created[7].id}`).expect(200);
      expect(one.body.memory).toEqual(created[7]);
    });
  });
}
