import type { LogLevel } from '@nestjs/common';
import request from 'supertest';
import { JsonLogger } from '../../src/observability/json-logger';
import { ADMIN_PASSWORD, adminAgent, createTestApp, createToken, TestApp } from '../support/app';
import { parseToken } from '../../src/tokens/token-secret';

const INFO: LogLevel[] = ['log', 'warn', 'error', 'fatal'];

/** The value of one sample in a Prometheus text exposition (0 when the series does not exist yet). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
  }
  return 0;
}

describe('JSON logs (MEMSTORE_LOG_FORMAT=json)', () => {
  let t: TestApp;
  const lines: string[] = [];

  beforeAll(async () => {
    t = await createTestApp({ MEMSTORE_LOG_FORMAT: 'json', MEMSTORE_LOG_LEVEL: 'info' }, { logger: new JsonLogger(INFO, (l) => lines.push(l)) });
  });
  afterAll(async () => {
    await t?.close();
  });

  const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

  it('writes one JSON object per line with time, level and message', async () => {
    await request(t.http).get('/api/health').expect(200);
    expect(lines.length).toBeGreaterThan(0);
    for (const l of lines) {
      expect(l.endsWith('\n')).toBe(true);
      expect(l.slice(0, -1)).not.toContain('\n');
      const o = JSON.parse(l);
      expect(new Date(o.time).toISOString()).toBe(o.time);
      expect(['info', 'warn', 'error', 'fatal']).toContain(o.level);
      expect(typeof o.message).toBe('string');
    }
  });

  it('logs each request once with its id (= X-Request-Id), method, route template, status, duration and token id; never a secret or memory content', async () => {
    const agent = await adminAgent(t);
    const token = await createToken(t, { name: 'logged', preset: 'full' });
    const content = 'The launch code is tangerine-4471';
    const created = await request(t.http).post('/api/memories').set('Authorization', `Bearer ${token.plaintext}`).send({ title: 'secret plans', content }).expect(201);
    const memoryId = created.body.memory.id as string;
    const res = await request(t.http).get(`/api/memories/${memoryId}`).set('Authorization', `Bearer ${token.plaintext}`).set('X-Request-Id', 'trace-42.a').expect(200);
    expect(res.headers['x-request-id']).toBe('trace-42.a');
    const search = await request(t.http).get('/api/memories?q=tangerine').set('Authorization', `Bearer ${token.plaintext}`).expect(200);
    await agent.get('/api/tokens').expect(200);
    await request(t.http).post('/api/login').send({ username: 'admin', password: 'not the password' }).expect(401);

    const access = parsed().filter((o) => o.context === 'http');
    const get = access.filter((o) => o.request_id === 'trace-42.a');
    expect(get).toHaveLength(1);
    expect(get[0]).toEqual(expect.objectContaining({ level: 'info', method: 'GET', route: '/api/memories/:memory_id', status: 200, token_id: token.id, request_id: 'trace-42.a' }));
    expect(typeof get[0].duration_ms).toBe('number');
    const searchLine = access.find((o) => o.request_id === search.headers['x-request-id']);
    expect(searchLine).toEqual(expect.objectContaining({ route: '/api/memories', status: 200, token_id: token.id }));
    expect(access.find((o) => o.route === '/api/tokens' && o.method === 'GET')).toEqual(expect.objectContaining({ admin: true, status: 200 }));
    expect(access.find((o) => o.route === '/api/login' && o.status === 401)).toBeDefined();

    const all = lines.join('');
    const cookie = (await request(t.http).post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD })).headers['set-cookie'] as unknown as string[];
    const sid = cookie
      .find((c) => c.startsWith('memstore.sid='))!
      .split(';')[0]
      .split('=')[1];
    for (const secret of [ADMIN_PASSWORD, 'not the password', token.plaintext, parseToken(token.plaintext)!.secret, content, 'tangerine', sid, 'Bearer']) {
      expect(all).not.toContain(secret);
    }
  });

  it('every request id in the log is the one the client got back', async () => {
    const res = await request(t.http).get('/api/nope').expect(404);
    const line = parsed().find((o) => o.request_id === res.headers['x-request-id']);
    // No route matched: a fixed label, not the URL the client sent.
    expect(line).toEqual(expect.objectContaining({ route: 'unmatched', status: 404, method: 'GET', level: 'info' }));
    expect(JSON.stringify(line)).not.toContain('nope');
  });

  it('labels the API docs by their paths (a page is its mount path, with or without the trailing slash)', async () => {
    const urls = ['/docs', '/docs/', '/docs/swagger-init.js', '/redoc', '/openapi.json'];
    const ids: string[] = [];
    for (const url of urls) ids.push((await request(t.http).get(url).expect(200)).headers['x-request-id']);
    const routes = ids.map((id) => parsed().find((o) => o.request_id === id)?.route);
    expect(routes).toEqual(['/docs', '/docs', '/docs/swagger-init.js', '/redoc', '/openapi.json']);
  });
});

describe('GET /metrics', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ MEMSTORE_LOGIN_MAX_FAILURES: '2', MEMSTORE_LOGIN_WINDOW_SECONDS: '120' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('is never public by default: 401 without credentials, 403 for a token without metrics:read', async () => {
    const anon = await request(t.http).get('/metrics').expect(401);
    expect(anon.text).not.toContain('memstore_');
    const plain = await createToken(t, { preset: 'full' });
    const res = await request(t.http).get('/metrics').set('Authorization', `Bearer ${plain.plaintext}`).expect(403);
    expect(res.body.error).toContain('metrics:read');
    await request(t.http).get('/metrics').set('Authorization', 'Bearer mem_tok_0123456789abcdef_nope').expect(401);
  });

  it('answers the admin session and a token with metrics:read, in Prometheus text format', async () => {
    const admin = await adminAgent(t);
    const res = await admin.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
    const scraper = await createToken(t, { name: 'prometheus', scopes: ['metrics:read'] });
    const byToken = await request(t.http).get('/metrics').set('Authorization', `Bearer ${scraper.plaintext}`).expect(200);
    expect(byToken.text).toContain('# TYPE memstore_http_requests_total counter');
    expect(byToken.text).toContain('# TYPE memstore_process_cpu_user_seconds_total counter');
    expect(sample(byToken.text, 'memstore_backend_up', { backend: 'document_database', kind: 'sqlite' })).toBe(1);
    expect(sample(byToken.text, 'memstore_backend_up', { backend: 'object_store', kind: 'filesystem' })).toBe(1);
    // metrics:read is only that: it cannot read memories.
    await request(t.http).get('/api/memories').set('Authorization', `Bearer ${scraper.plaintext}`).expect(403);
  });

  it('counts requests by route template and status, with latency histogram buckets', async () => {
    const { plaintext } = await createToken(t, { scopes: ['memory:read', 'memory:write', 'metrics:read'] });
    const scrape = async () => (await request(t.http).get('/metrics').set('Authorization', `Bearer ${plaintext}`).expect(200)).text;
    const labels = { method: 'GET', route: '/api/memories/:memory_id', status: '404' };
    const before = await scrape();
    await request(t.http).get('/api/memories/ffffffffffffffffffffffff').set('Authorization', `Bearer ${plaintext}`).expect(404);
    await request(t.http).get('/api/memories/eeeeeeeeeeeeeeeeeeeeeeee').set('Authorization', `Bearer ${plaintext}`).expect(404);
    await request(t.http).post('/api/memories').set('Authorization', `Bearer ${plaintext}`).send({ content: 'metrics are counted' }).expect(201);
    await request(t.http).get('/api/memories?q=counted').set('Authorization', `Bearer ${plaintext}`).expect(200);
    const after = await scrape();
    expect(sample(after, 'memstore_http_requests_total', labels) - sample(before, 'memstore_http_requests_total', labels)).toBe(2);
    // A histogram: cumulative buckets ending in +Inf, a count and a sum per label set.
    const inf = sample(after, 'memstore_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' });
    expect(inf).toBe(sample(after, 'memstore_http_request_duration_seconds_count', labels));
    expect(sample(after, 'memstore_http_request_duration_seconds_bucket', { ...labels, le: '0.005' })).toBeLessThanOrEqual(inf);
    expect(after).toMatch(/memstore_http_request_duration_seconds_bucket\{le="0\.1",method="GET",route="\/api\/memories\/:memory_id",status="404"\} \d/);
    expect(sample(after, 'memstore_search_duration_seconds_count', { mode: 'keyword' }) - sample(before, 'memstore_search_duration_seconds_count', { mode: 'keyword' })).toBe(1);
    expect(sample(after, 'memstore_memories', { backend: 'sqlite' })).toBe(1);
    // The embedding queue's depth (memories waiting for a vector), read at scrape time.
    expect(after).toMatch(/^memstore_embedding_queue_depth \d+$/m);
    // Raw URLs (ids) never become labels.
    expect(after).not.toContain('ffffffffffffffffffffffff');
  });

  it('counts failed sign-ins and throttled requests', async () => {
    const admin = await adminAgent(t);
    const before = (await admin.get('/metrics').expect(200)).text;
    const ip = '203.0.113.9';
    await request(t.http).post('/api/login').set('X-Forwarded-For', ip).send({ username: 'admin', password: 'wrong' }).expect(401);
    let throttled = false;
    for (let i = 0; i < 4 && !throttled; i++) {
      const res = await request(t.http).post('/api/login').send({ username: 'admin', password: 'wrong' });
      throttled = res.status === 429;
    }
    expect(throttled).toBe(true);
    const after = (await admin.get('/metrics').expect(200)).text;
    expect(sample(after, 'memstore_login_failures_total') - sample(before, 'memstore_login_failures_total')).toBeGreaterThanOrEqual(2);
    expect(sample(after, 'memstore_throttled_requests_total', { route: '/api/login' }) - sample(before, 'memstore_throttled_requests_total', { route: '/api/login' })).toBe(1);
  });
});

describe('GET /metrics from an allow-listed address (MEMSTORE_METRICS_ALLOWED_IPS)', () => {
  let t: TestApp;
  afterEach(async () => {
    await t?.close();
  });

  it('needs no credentials from an allowed address', async () => {
    t = await createTestApp({ MEMSTORE_METRICS_ALLOWED_IPS: '10.9.8.7, 127.0.0.0/8' });
    const res = await request(t.http).get('/metrics').expect(200);
    expect(res.text).toContain('memstore_http_requests_total');
  });

  it('still refuses other addresses, and an allow-list does not open other routes', async () => {
    t = await createTestApp({ MEMSTORE_METRICS_ALLOWED_IPS: '10.9.8.7' });
    await request(t.http).get('/metrics').expect(401);
    await request(t.http).get('/api/memories').expect(401);
  });

  it('refuses a malformed allow-list at boot', async () => {
    await expect(createTestApp({ MEMSTORE_METRICS_ALLOWED_IPS: '10.9.8' })).rejects.toThrow(/MEMSTORE_METRICS_ALLOWED_IPS/);
  });
});
