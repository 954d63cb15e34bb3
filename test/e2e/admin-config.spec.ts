import * as fs from 'node:fs';
import * as path from 'node:path';
import request from 'supertest';
import { adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { testBackends } from '../support/backends';

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';

// Every row has three entries: jest.each passes `done` to a test whose rows are shorter than its arity.
const ADMIN_ROUTES: Array<[method: 'get' | 'post', url: string, body: object | null]> = [
  ['get', '/api/schema', null],
  ['get', '/api/config', null],
  ['post', '/api/config', { docdb_db: 'x' }],
  ['get', '/api/config/raw', null],
  ['get', '/api/config/path', null],
  ['post', '/api/test', { target: 'all' }],
  ['post', '/api/derive-endpoint', { account_id: 'abc' }],
];

describe('admin config routes', () => {
  let t: TestApp;
  let admin: Awaited<ReturnType<typeof adminAgent>>;

  beforeAll(async () => {
    t = await createTestApp({ MEMSTORE_DOCDB_DB: 'env-db' });
    admin = await adminAgent(t);
  });
  afterAll(async () => t.close());

  describe('access', () => {
    it.each(ADMIN_ROUTES)('%s %s without credentials → 401', async (method, url, body) => {
      const agent = request(t.http);
      const res = await agent[method](url).send(body ?? {});
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ ok: false, error: expect.any(String) });
    });

    it.each(ADMIN_ROUTES)('%s %s with an API token (even full scopes) → 403', async (method, url, body) => {
      const { plaintext } = await createToken(t, { preset: 'full' });
      const agent = request(t.http);
      const res = await agent[method](url)
        .set('Authorization', `Bearer ${plaintext}`)
        .send(body ?? {});
      expect(res.status).toBe(403);
      expect(res.body.ok).toBe(false);
    });

    it('a bad token on an admin route → 401', async () => {
      const res = await request(t.http).get('/api/config').set('Authorization', 'Bearer mem_tok_0123456789abcdef_nope');
      expect(res.status).toBe(401);
    });
  });

  it('GET /api/schema lists the backend and semantic search sections with typed fields, secrets flagged', async () => {
    const res = await admin.get('/api/schema').expect(200);
    expect(res.body.ok).toBe(true);
    const sections = res.body.schema.sections;
    expect(sections.map((s: { id: string }) => s.id)).toEqual(['docdb', 'objstore', 'embeddings']);
    const fields = sections.flatMap((s: { fields: Array<Record<string, unknown>> }) => s.fields);
    expect(fields.map((f: { key: string }) => f.key).sort()).toEqual(
      [
        'docdb_uri',
        'docdb_db',
        'memory_collection',
        'objstore_account_id',
        'objstore_access_key_id',
        'objstore_secret_access_key',
        'objstore_bucket',
        'objstore_endpoint',
        'objstore_public_base',
        'objstore_presign_ttl',
        'embedding_provider',
        'embedding_url',
        'embedding_api_key',
        'embedding_model',
        'embedding_dimensions',
        'embedding_cosine_scale',
        'memory_history_keep',
      ].sort(),
    );
    for (const f of fields)
      expect(f).toEqual(
        expect.objectContaining({ key: expect.any(String), label: expect.any(String), type: expect.any(String), secret: expect.any(Boolean), required: expect.any(Boolean), help: expect.any(String) }),
      );
    const secret = fields
      .filter((f: { secret: boolean }) => f.secret)
      .map((f: { key: string }) => f.key)
      .sort();
    expect(secret).toEqual(['docdb_uri', 'embedding_api_key', 'objstore_access_key_id', 'objstore_secret_access_key']);
    // A field that takes a few values lists them (the page offers a choice, not a text box).
    expect(fields.filter((f: { options?: string[] }) => f.options).map((f: { key: string; options: string[] }) => [f.key, f.options])).toEqual([['embedding_provider', ['local', 'openai', 'none']]]);
  });

  it('GET /api/config: defaults, env override marked env, embedded backends active and complete', async () => {
    const res = await admin.get('/api/config').expect(200);
    expect(res.body).toMatchObject({
      ok: true,
      complete: true,
      missing: [],
      active: { docdb: 'sqlite', objstore: 'filesystem' },
    });
    expect(res.body.config).toMatchObject({ docdb_uri: null, docdb_db: 'env-db', objstore_presign_ttl: 3600, memory_collection: 'memories' });
    expect(res.body.sources).toMatchObject({ docdb_uri: 'default', docdb_db: 'env', objstore_presign_ttl: 'default' });
    expect(res.body.status).toEqual(expect.stringContaining('Settings complete'));
  });

  it('POST /api/config saves partially; GET shows masked secrets and sources; raw shows them in clear', async () => {
    const save = await admin
      .post('/api/config')
      .send({
        objstore_access_key_id: 'AKIAIOSFODNN7EXAMPLE',
        objstore_secret_access_key: SECRET,
        objstore_public_base: 'https://files.example.com',
        objstore_presign_ttl: '900',
        docdb_db: 'filedb',
        unknown_field: 'ignored',
      })
      .expect(200);
    expect(save.body).toMatchObject({ ok: true, complete: true, missing: [], overridden: ['docdb_db'], active: { docdb: 'sqlite', objstore: 'filesystem' }, warnings: [] });
    expect(save.body.saved.sort()).toEqual(['docdb_db', 'objstore_access_key_id', 'objstore_presign_ttl', 'objstore_public_base', 'objstore_secret_access_key']);

    const got = await admin.get('/api/config').expect(200);
    expect(got.body.config).toMatchObject({
      objstore_access_key_id: 'AKIA********LE',
      objstore_secret_access_key: '********',
      objstore_public_base: 'https://files.example.com',
      objstore_presign_ttl: 900,
      docdb_db: 'env-db', // the environment still wins
    });
    expect(JSON.stringify(got.body)).not.toContain(SECRET);
    expect(got.body.sources).toMatchObject({
      objstore_access_key_id: 'credentials',
      objstore_secret_access_key: 'credentials',
      objstore_public_base: 'file',
      objstore_presign_ttl: 'file',
      docdb_db: 'env',
    });

    const raw = await admin.get('/api/config/raw').expect(200);
    expect(raw.headers['cache-control']).toBe('no-store');
    expect(raw.body).toMatchObject({ ok: true, config: { objstore_secret_access_key: SECRET, objstore_access_key_id: 'AKIAIOSFODNN7EXAMPLE', objstore_presign_ttl: 900 } });

    // null = unchanged, "" = cleared
    await admin.post('/api/config').send({ objstore_secret_access_key: null, objstore_public_base: '' }).expect(200);
    const after = await admin.get('/api/config/raw').expect(200);
    expect(after.body.config).toMatchObject({ objstore_secret_access_key: SECRET, objstore_public_base: null });

    // the credential store on disk does not hold the secret in clear, and is 0600
    const enc = fs.readFileSync(path.join(t.dataDir, 'credentials.enc'));
    expect(enc.includes(Buffer.from(SECRET))).toBe(false);
    expect(fs.statSync(path.join(t.dataDir, 'credentials.enc')).mode & 0o777).toBe(0o600);
  });

  it('POST /api/config reports what a chosen S3 store is missing, and saves anyway', async () => {
    const ta = await createTestApp();
    try {
      const a = await adminAgent(ta);
      const res = await a.post('/api/config').send({ objstore_bucket: 'memory-store' }).expect(200);
      expect(res.body).toMatchObject({ ok: true, saved: ['objstore_bucket'], complete: false, missing: ['objstore_access_key_id', 'objstore_secret_access_key'] });
      const got = await a.get('/api/config').expect(200);
      expect(got.body).toMatchObject({ complete: false, missing: ['objstore_access_key_id', 'objstore_secret_access_key'] });
      expect(got.body.status).toContain('missing objstore_access_key_id');
    } finally {
      await ta.close();
    }
  });

  describe('POST /api/config validation → 422 with loc', () => {
    it.each([
      [{ docdb_uri: 42 }, ['body', 'docdb_uri'], 'string_type'],
      [{ docdb_uri: 'postgres://db/x' }, ['body', 'docdb_uri'], 'value_error'],
      [{ objstore_endpoint: 'ftp://files' }, ['body', 'objstore_endpoint'], 'value_error'],
      [{ objstore_endpoint: 'javascript:alert(1)' }, ['body', 'objstore_endpoint'], 'value_error'],
      [{ objstore_public_base: 'not a url' }, ['body', 'objstore_public_base'], 'value_error'],
      [{ objstore_account_id: 'evil.com/x#' }, ['body', 'objstore_account_id'], 'value_error'],
      [{ objstore_presign_ttl: 'soon' }, ['body', 'objstore_presign_ttl'], 'int_parsing'],
      [{ objstore_presign_ttl: 1.5 }, ['body', 'objstore_presign_ttl'], 'int_parsing'],
      [{ objstore_presign_ttl: 0 }, ['body', 'objstore_presign_ttl'], 'greater_than_equal'],
      [{ objstore_presign_ttl: '604801' }, ['body', 'objstore_presign_ttl'], 'less_than_equal'],
      [{ objstore_bucket: ['a'] }, ['body', 'objstore_bucket'], 'string_type'],
    ])('%j', async (body, loc, type) => {
      const res = await admin.post('/api/config').send(body);
      expect(res.status).toBe(422);
      expect(res.body.ok).toBe(false);
      expect(res.body.detail[0]).toMatchObject({ loc, type });
    });

    it('a body that is not a JSON object → 422 loc [body]', async () => {
      const res = await admin.post('/api/config').set('Content-Type', 'application/json').send('[1,2]');
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body']);
    });

    it('malformed JSON → 422 json_invalid', async () => {
      const res = await admin.post('/api/config').set('Content-Type', 'application/json').send('{"docdb_db": ');
      expect(res.status).toBe(422);
      expect(res.body.detail[0].type).toBe('json_invalid');
    });

    it('a rejected save changes nothing', async () => {
      await admin.post('/api/config').send({ objstore_public_base: 'https://before.example.com' }).expect(200);
      await admin.post('/api/config').send({ objstore_public_base: 'https://after.example.com', objstore_presign_ttl: -1 }).expect(422);
      const raw = await admin.get('/api/config/raw').expect(200);
      expect(raw.body.config.objstore_public_base).toBe('https://before.example.com');
    });
  });

  it('GET /api/config/path gives both files and whether they exist', async () => {
    const res = await admin.get('/api/config/path').expect(200);
    expect(res.body).toEqual({
      ok: true,
      config_file: { path: path.join(t.dataDir, 'config.json'), exists: true },
      credential_store: { path: path.join(t.dataDir, 'credentials.enc'), exists: true },
    });
  });

  describe('POST /api/test', () => {
    it('round-trips both embedded backends by default', async () => {
      const res = await admin.post('/api/test').send({}).expect(200);
      expect(res.body.ok).toBe(true);
      expect(res.body.results.docdb).toMatchObject({ ok: true, backend: 'sqlite', latency_ms: expect.any(Number), detail: expect.stringContaining('probe') });
      expect(res.body.results.objstore).toMatchObject({ ok: true, backend: 'filesystem', latency_ms: expect.any(Number), detail: expect.stringContaining('probe') });
    });

    it.each([
      ['docdb', ['docdb']],
      ['mongodb', ['docdb']],
      ['objstore', ['objstore']],
      ['s3', ['objstore']],
      ['r2', ['objstore']],
      ['all', ['docdb', 'objstore']],
    ])('target %s tests %j', async (target, keys) => {
      const res = await admin.post('/api/test').send({ target }).expect(200);
      expect(Object.keys(res.body.results).sort()).toEqual(keys);
    });

    it('an unknown target → 422 enum', async () => {
      const res = await admin.post('/api/test').send({ target: 'postgres' });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'target'], type: 'enum', input: 'postgres' });
    });

    it('a target that is not a string → 422 string_type', async () => {
      const res = await admin.post('/api/test').send({ target: 1 });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'target'], type: 'string_type' });
    });

    it('reports a broken backend as ok:false with the reason, not as a 5xx', async () => {
      const ta = await createTestApp();
      try {
        const a = await adminAgent(ta);
        fs.rmSync(path.join(ta.dataDir, 'objects'), { recursive: true, force: true });
        fs.writeFileSync(path.join(ta.dataDir, 'objects'), 'a file where the store expects a directory');
        const res = await a.post('/api/test').send({ target: 'objstore' }).expect(200);
        expect(res.body.results.objstore).toMatchObject({ ok: false, backend: 'filesystem', error: expect.stringMatching(/^Object store unavailable: /) });
        expect(JSON.stringify(res.body)).not.toMatch(/\n\s+at /); // no stack trace
      } finally {
        await ta.close();
      }
    });
  });

  describe('POST /api/derive-endpoint', () => {
    it.each([
      [{ account_id: '0123456789abcdef0123456789abcdef' }, 'https://0123456789abcdef0123456789abcdef.r2.cloudflarestorage.com', 'account_id'],
      [{ objstore_account_id: 'acct-1' }, 'https://acct-1.r2.cloudflarestorage.com', 'account_id'],
      [{ endpoint: 'https://s3.eu-west-1.amazonaws.com/' }, 'https://s3.eu-west-1.amazonaws.com', 'explicit'],
      [{ objstore_endpoint: 'http://127.0.0.1:9000' }, 'http://127.0.0.1:9000', 'explicit'],
      [{ account_id: 'acct', endpoint: 'https://minio.example.com' }, 'https://minio.example.com', 'explicit'],
      [{ account_id: 'acct', endpoint: '' }, 'https://acct.r2.cloudflarestorage.com', 'account_id'],
    ])('%j → %s (%s)', async (body, endpoint, source) => {
      const res = await admin.post('/api/derive-endpoint').send(body).expect(200);
      expect(res.body).toEqual({ ok: true, endpoint, source });
    });

    it('neither an account id nor an endpoint → 422', async () => {
      const res = await admin.post('/api/derive-endpoint').send({ account_id: '', something_else: 1 });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body'], type: 'missing' });
    });

    it.each([
      [{ account_id: 'x.evil.com/' }, 'account_id'],
      [{ endpoint: 'file:///etc/passwd' }, 'endpoint'],
      [{ endpoint: 12 }, 'endpoint'],
    ])('invalid %j → 422 at %s', async (body, field) => {
      const res = await admin.post('/api/derive-endpoint').send(body);
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', field]);
    });
  });

  describe('GET /api/status', () => {
    it('without credentials → 401', async () => {
      await request(t.http).get('/api/status').expect(401);
    });

    it('admin: both backends with details, public URL and memory summary', async () => {
      const res = await admin.get('/api/status').set('Host', 'memstore.test:8080').expect(200);
      expect(res.body).toMatchObject({
        ok: true,
        docdb: { backend: 'sqlite', ok: true, detail: expect.stringContaining('SQLite') },
        objstore: { backend: 'filesystem', ok: true, detail: expect.any(String) },
        // Without MEMSTORE_PUBLIC_URL or a trusted proxy: the address the request reached, never the Host sent (issue 46).
        public_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        memories: { count: expect.anything(), search_mode: expect.anything() },
      });
    });

    it('any valid token (read-only) may call it, and sees no adapter details', async () => {
      const { plaintext } = await createToken(t, { preset: 'read-only' });
      const res = await request(t.http).get('/api/status').set('Authorization', `Bearer ${plaintext}`).expect(200);
      expect(res.body.docdb).toEqual({ backend: 'sqlite', ok: true, detail: 'reachable' });
      expect(JSON.stringify(res.body)).not.toContain(t.dataDir);
    });
  });
});

describe('settings survive a restart on the same data directory', () => {
  it('saved values and credentials are read back after restart', async () => {
    const first = await createTestApp();
    const dataDir = first.dataDir;
    try {
      const a = await adminAgent(first);
      await a.post('/api/config').send({ objstore_secret_access_key: SECRET, objstore_presign_ttl: 120, memory_collection: 'notes' }).expect(200);
    } finally {
      await first.close();
    }
    const second = await createTestApp({ MEMSTORE_DATA_DIR: dataDir });
    try {
      const a = await adminAgent(second);
      const raw = await a.get('/api/config/raw').expect(200);
      expect(raw.body.config).toMatchObject({ objstore_secret_access_key: SECRET, objstore_presign_ttl: 120, memory_collection: 'notes' });
      const got = await a.get('/api/config').expect(200);
      expect(got.body.sources).toMatchObject({ objstore_secret_access_key: 'credentials', objstore_presign_ttl: 'file', memory_collection: 'file' });
    } finally {
      await second.close();
    }
  });
});

describe.each(testBackends())('connection tests and status on $name', (backend) => {
  const s3 = /s3/i.test(backend.name);
  let t: TestApp;
  let admin: Awaited<ReturnType<typeof adminAgent>>;
  let env: Record<string, string>;

  beforeAll(async () => {
    env = await backend.env();
    t = await createTestApp(env);
    admin = await adminAgent(t);
  });
  afterAll(async () => t?.close());

  it('GET /api/config names the active adapters; POST /api/test round-trips both', async () => {
    const cfg = await admin.get('/api/config').expect(200);
    const active = { docdb: env.MEMSTORE_DOCDB_URI ? 'mongodb' : 'sqlite', objstore: env.MEMSTORE_OBJSTORE_BUCKET ? 's3' : 'filesystem' };
    expect(cfg.body.active).toEqual(active);
    if (env.MEMSTORE_DOCDB_URI) expect(cfg.body.sources.docdb_uri).toBe('env');
    const res = await admin.post('/api/test').send({ target: 'all' }).expect(200);
    expect(res.body.results.docdb).toMatchObject({ ok: true, backend: active.docdb, detail: expect.stringContaining('probe') });
    expect(res.body.results.objstore).toMatchObject({ ok: true, backend: active.objstore, detail: expect.stringContaining('probe') });
  });

  it('GET /api/status reports both backends healthy', async () => {
    const res = await admin.get('/api/status').expect(200);
    expect(res.body.docdb).toMatchObject({ ok: true });
    expect(res.body.objstore).toMatchObject({ ok: true });
    expect(res.body.memories.count).toEqual(expect.any(Number));
  });

  // Only the S3 pairs have a bucket to lose; the embedded pair has no such case.
  if (s3) {
    it('a bucket that does not exist: /api/test and /api/status say so (S3 pairs only)', async () => {
      // A fresh pair (own database) with the bucket name swapped for one that does not exist.
      const broken = await createTestApp({ ...(await backend.env()), MEMSTORE_OBJSTORE_BUCKET: 'no-such-bucket-memstore' });
      try {
        const a = await adminAgent(broken);
        const res = await a.post('/api/test').send({ target: 's3' }).expect(200);
        expect(res.body.results.objstore).toMatchObject({ ok: false, backend: 's3', error: expect.stringMatching(/^Object store unavailable: .*no-such-bucket-memstore/) });
        const status = await a.get('/api/status').expect(200);
        expect(status.body.objstore).toMatchObject({ ok: false, backend: 's3', detail: expect.stringContaining('no-such-bucket-memstore') });
      } finally {
        await broken.close();
      }
    });
  }
});
