import request from 'supertest';
import { adminAgent, createTestApp, TestApp, tempDir } from '../support/app';
import { testBackends } from '../support/backends';

/**
 * Per-token rate limits (issue 10): a token over its `rate_limit_per_minute` gets 429 with
 * Retry-After and RateLimit-* headers, other tokens are unaffected, two instances on one document
 * database share the count, and the count starts again when the window ends. The window is
 * shortened with MEMSTORE_TOKEN_RATE_WINDOW_SECONDS so the test does not wait a minute.
 */
describe.each(testBackends())('token rate limits on $name', (backend) => {
  const WINDOW_S = 2;
  let env: Record<string, string>;
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    env = { ...(await backend.env()), MEMSTORE_DATA_DIR: tempDir(), MEMSTORE_TOKEN_RATE_WINDOW_SECONDS: String(WINDOW_S), MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE: '50' };
    a = await createTestApp(env);
    b = await createTestApp(env); // a second instance on the same data directory / MongoDB database
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  async function token(body: Record<string, unknown>): Promise<{ id: string; plaintext: string; record: Record<string, unknown> }> {
    const admin = await adminAgent(a);
    const res = await admin
      .post('/api/tokens')
      .send({ preset: 'read-only', ...body })
      .expect(201);
    return { id: res.body.token.id, plaintext: res.body.plaintext, record: res.body.token };
  }
  const stats = (t: TestApp, bearer: string) => request(t.http).get('/api/stats').set('Authorization', `Bearer ${bearer}`);

  /** Waits until the shared window of the token's first request has surely ended. */
  const nextWindow = () => new Promise((r) => setTimeout(r, WINDOW_S * 1000 + 300));

  it('a token over its limit gets 429 with Retry-After and RateLimit-* headers; its requests before that carry them too', async () => {
    const limited = await token({ rate_limit_per_minute: 5 });
    expect(limited.record.rate_limit_per_minute).toBe(5);
    for (let i = 0; i < 5; i++) {
      const ok = await stats(a, limited.plaintext).expect(200);
      expect(ok.headers['ratelimit-limit']).toBe('5');
      expect(Number(ok.headers['ratelimit-remaining'])).toBe(4 - i);
    }
    const over = await stats(a, limited.plaintext).expect(429);
    expect(over.body).toEqual({ ok: false, error: expect.stringMatching(/^Rate limit exceeded: this token may send 5 requests per minute/) });
    expect(Number(over.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(over.headers['retry-after'])).toBeLessThanOrEqual(WINDOW_S);
    expect(over.headers['ratelimit-limit']).toBe('5');
    expect(over.headers['ratelimit-remaining']).toBe('0');
    expect(Number(over.headers['ratelimit-reset'])).toBeGreaterThanOrEqual(1);
  });

  it('other tokens are unaffected', async () => {
    const noisy = await token({ rate_limit_per_minute: 2 });
    const quiet = await token({ rate_limit_per_minute: 2 });
    await stats(a, noisy.plaintext).expect(200);
    await stats(a, noisy.plaintext).expect(200);
    await stats(a, noisy.plaintext).expect(429);
    await stats(a, quiet.plaintext).expect(200);
  });

  it('two instances on one document database share the count', async () => {
    const shared = await token({ rate_limit_per_minute: 4 });
    await stats(a, shared.plaintext).expect(200);
    await stats(b, shared.plaintext).expect(200);
    await stats(a, shared.plaintext).expect(200);
    await stats(b, shared.plaintext).expect(200);
    await stats(a, shared.plaintext).expect(429);
    await stats(b, shared.plaintext).expect(429);
  });

  it('the count starts again after the window', async () => {
    const t = await token({ rate_limit_per_minute: 2 });
    await stats(a, t.plaintext).expect(200);
    await stats(a, t.plaintext).expect(200);
    await stats(a, t.plaintext).expect(429);
    await nextWindow();
    await stats(a, t.plaintext).expect(200);
    await stats(b, t.plaintext).expect(200);
    await stats(a, t.plaintext).expect(429);
  });

  it('0 means unlimited; absent means the default setting; the limit can be changed and is shown with the recent rate', async () => {
    const unlimited = await token({ rate_limit_per_minute: 0 });
    for (let i = 0; i < 60; i++) await stats(a, unlimited.plaintext).expect(200);
    const defaulted = await token({});
    expect(defaulted.record.rate_limit_per_minute).toBe(50);

    const admin = await adminAgent(a);
    const listed = (await admin.get('/api/tokens').expect(200)).body.tokens.find((x: { id: string }) => x.id === unlimited.id);
    expect(listed).toMatchObject({ rate_limit_per_minute: 0 });
    expect(listed.recent_requests_per_minute).toBeGreaterThanOrEqual(60);

    const changed = await admin.patch(`/api/tokens/${unlimited.id}`).send({ rate_limit_per_minute: 1 }).expect(200);
    expect(changed.body.token.rate_limit_per_minute).toBe(1);
    await nextWindow();
    await stats(a, unlimited.plaintext).expect(200);
    await stats(a, unlimited.plaintext).expect(429);
  });

  it('rate_limit_per_minute must be an integer ≥ 0 on create and update', async () => {
    const admin = await adminAgent(a);
    for (const bad of [-1, 1.5, '10', true]) {
      const res = await admin.post('/api/tokens').send({ rate_limit_per_minute: bad }).expect(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'rate_limit_per_minute']);
    }
    const { id } = await token({});
    await admin.patch(`/api/tokens/${id}`).send({ rate_limit_per_minute: -5 }).expect(422);
  });

  it('a wrong secret does not count against the token', async () => {
    const t = await token({ rate_limit_per_minute: 1 });
    for (let i = 0; i < 5; i++) await stats(a, `${t.plaintext.slice(0, -2)}xx`).expect(401);
    await stats(a, t.plaintext).expect(200);
  });
});
