import * as http from 'node:http';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import request from 'supertest';
import { ADMIN_PASSWORD, adminAgent, createTestApp, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

/**
 * Hostile input (issue 10): bodies that used to stall the event loop or end in 500, odd
 * encodings, odd casings, lone surrogates, impossible dates and repeated parameters. Each answer
 * is a 4xx in the CONTRACT §1 envelope, and the service keeps answering everyone else meanwhile.
 */

/** POSTs a body over a real socket and resolves with the status once the answer is complete. */
function post(port: number, path: string, body: Buffer | string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const buf = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': String(buf.length), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(buf);
  });
}

/**
 * What a body costs the service in CPU time, never in wall-clock time (issue 46 item 11: a latency
 * bound failed CI on a busy machine; speed lives in the bench): the CPU time the event-loop thread
 * spends on the body (client and server share that thread, so this is an upper bound of the
 * server's work; waiting for a busy machine is not CPU time). Other threads (GC helpers, libuv's
 * pool, workers) are not counted. The body is sent once before (not measured) so that V8 has
 * compiled the code path: the bound is about the work each request costs, not the first
 * compilation. Best of a few runs.
 */
async function postAndMeasure(port: number, path: string, text: string, headers: Record<string, string> = {}) {
  const body = Buffer.from(text, 'utf8');
  const answer = await post(port, path, body, headers);
  let cpuMs = Infinity;
  for (let attempt = 0; attempt < 5; attempt++) {
    const cpu0 = mainThreadCpu();
    await post(port, path, body, headers);
    const cpu = mainThreadCpu(cpu0);
    cpuMs = Math.min(cpuMs, (cpu.user + cpu.system) / 1000);
  }
  return { answer, cpuMs };
}

/** CPU of the event-loop thread (Node 22.19+ and 24); the whole process's on older Node. */
const mainThreadCpu = (prev?: NodeJS.CpuUsage): NodeJS.CpuUsage => (process as { threadCpuUsage?: (p?: NodeJS.CpuUsage) => NodeJS.CpuUsage }).threadCpuUsage?.(prev) ?? process.cpuUsage(prev);

/** The body cost under 50 ms of CPU (a stall like the one before issue 10 cost seconds). */
function expectCheap(r: { cpuMs: number }): void {
  expect(r.cpuMs).toBeLessThan(50);
}

describe('hostile input: bounded work and 4xx answers', () => {
  let t: TestApp;
  let port: number;
  let api: Api;

  beforeAll(async () => {
    t = await createTestApp();
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', () => resolve()));
    port = (t.http.address() as AddressInfo).port;
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t.close();
  });

  describe('event loop stays free', () => {
    const unknownKeys = (n: number, extra: Record<string, unknown> = {}) => {
      const parts: string[] = [];
      for (let i = 0; i < n; i++) parts.push(`"key${i}":${i}`);
      for (const [k, v] of Object.entries(extra)) parts.push(`${JSON.stringify(k)}:${JSON.stringify(v)}`);
      return `{${parts.join(',')}}`;
    };

    it('a 1.6 MB body with 100,000 unknown keys to the public POST /api/login: 413 at once, in a few ms of CPU', async () => {
      const body = unknownKeys(100_000, { username: 'admin', password: 'x' });
      expect(body.length).toBeGreaterThan(1_500_000);
      const r = await postAndMeasure(port, '/api/login', body);
      const answer = r.answer;
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toEqual({ ok: false, error: 'Request body has too many keys in one object: at most 1000 are accepted' });
      expectCheap(r);
    });

    it('the heaviest bodies the limits let through (1,000 keys per object, 10,000 values, ~2 MiB) cost a few ms of CPU each', async () => {
      // 9 objects of 1,000 long unknown keys each under one unknown key, around a valid (empty) bulk delete.
      const parts: string[] = [];
      for (let i = 0; i < 1000; i++) parts.push(`"${'k'.repeat(190)}${i}":${i}`);
      const inner = `{${parts.join(',')}}`;
      const many = `{"ids":[],"junk":[${Array(9).fill(inner).join(',')}]}`;
      expect(many.length).toBeGreaterThan(1_700_000);
      expect(many.length).toBeLessThan(2 * 1024 * 1024);
      const r1 = await postAndMeasure(port, '/api/memories/bulk-delete', many, { Authorization: `Bearer ${api.bearer}` });
      expect(r1.answer.status).toBe(200);
      expectCheap(r1);

      // 9,900 ids of 190 characters to bulk-delete: refused by its own limit (1000), cheaply.
      const ids = `{"ids":[${Array.from({ length: 9_900 }, (_, i) => `"${String(i).padStart(190, '0')}"`).join(',')}]}`;
      expect(ids.length).toBeGreaterThan(1_700_000);
      const r2 = await postAndMeasure(port, '/api/memories/bulk-delete', ids, { Authorization: `Bearer ${api.bearer}` });
      expect(r2.answer.status).toBe(422);
      expectCheap(r2);

      // One value more than the limit: 413 with the sentence.
      const over = await postAndMeasure(port, '/api/memories/bulk-delete', `{"ids":[${Array(10_000).fill('"x"').join(',')}]}`, { Authorization: `Bearer ${api.bearer}` });
      expect(over.answer.status).toBe(413);
      expect(JSON.parse(over.answer.body).error).toBe('Request body has too many values: at most 10000 values (object members and array items) are accepted');
    });

    it('unknown keys are dropped before validation, `__proto__` and `constructor` included', async () => {
      const res = await api
        .post('/api/memories')
        .set('Content-Type', 'application/json')
        .send('{"content":"proto keys","__proto__":{"title":"injected"},"constructor":{"prototype":{"x":1}},"title":"kept"}');
      expect(res.status).toBe(201);
      expect(res.body.memory.title).toBe('kept');
      expect(({} as Record<string, unknown>).x).toBeUndefined();
    });
  });

  describe('deep nesting', () => {
    const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);

    it.each([
      ['/api/login', {}],
      ['/api/memories', { auth: true }],
      ['/api/tokens', { admin: true }],
    ])('1,400 levels to %s: 413 with a sentence, not a stack overflow', async (path, who) => {
      const body = `{"content":"x","a":${nested(1400)}}`;
      let req = request(t.http).post(path).set('Content-Type', 'application/json');
      if ((who as { auth?: boolean }).auth) req = req.set('Authorization', `Bearer ${api.bearer}`);
      if ((who as { admin?: boolean }).admin) {
        const agent = await adminAgent(t);
        req = agent.post(path).set('Content-Type', 'application/json');
      }
      const res = await req.send(body);
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ ok: false, error: 'Request body is nested too deeply: at most 32 levels of objects and arrays are accepted' });
    });

    it('32 levels are accepted (under an unknown key, dropped); 33 are not; brackets inside strings do not count', async () => {
      const ok = await api
        .post('/api/memories')
        .set('Content-Type', 'application/json')
        .send(`{"content":"[[[[{{{{ not nesting","a":${nested(31)}}`);
      expect(ok.status).toBe(201);
      expect(ok.body.memory.content).toBe('[[[[{{{{ not nesting');
      const deep = await api
        .post('/api/memories')
        .set('Content-Type', 'application/json')
        .send(`{"content":"x","a":${nested(32)}}`);
      expect(deep.status).toBe(413);
    });

    it('deep nesting inside a known field is refused the same way', async () => {
      const res = await api
        .post('/api/memories')
        .set('Content-Type', 'application/json')
        .send(`{"content":"x","tags":${nested(500, '"t"')}}`);
      expect(res.status).toBe(413);
    });
  });

  describe('Content-Encoding', () => {
    const json = Buffer.from(JSON.stringify({ content: 'compressed body', title: 'gz' }));
    // Over a plain socket: superagent would not send a pre-compressed Buffer as it is.
    const send = async (encoding: string, body: Buffer, path = '/api/memories') => {
      const res = await post(port, path, body, { 'Content-Encoding': encoding, Authorization: `Bearer ${api.bearer}` });
      return { status: res.status, body: JSON.parse(res.body) as { ok: boolean; error?: string; memory?: { title: string } } };
    };

    it.each([
      ['gzip', zlib.gzipSync(json)],
      ['deflate', zlib.deflateSync(json)],
      ['br', zlib.brotliCompressSync(json)],
    ])('a valid %s body is decoded', async (encoding, body) => {
      const res = await send(encoding, body);
      expect(res.status).toBe(201);
      expect(res.body.memory!.title).toBe('gz');
    });

    const garbage = Buffer.from('this is not compressed at all, not even a little');
    it.each([
      ['gzip', garbage],
      ['gzip', zlib.gzipSync(json).subarray(0, 20)],
      ['deflate', garbage],
      ['deflate', zlib.deflateSync(json).subarray(0, 10)],
      ['br', garbage],
      ['br', zlib.brotliCompressSync(json).subarray(0, 5)],
    ])('an undecodable %s body is 400 with a sentence', async (encoding, body) => {
      const res = await send(encoding, body);
      expect(res.status).toBe(400);
      expect(res.body.ok).toBe(false);
      expect(res.body.error).toMatch(/^The request body could not be decoded as its Content-Encoding says/);
    });

    it('an undecodable gzip body to the public /api/login is 400 too', async () => {
      const res = await post(port, '/api/login', garbage, { 'Content-Encoding': 'gzip' });
      expect(res.status).toBe(400);
    });

    it('an unknown encoding is 415', async () => {
      const res = await send('x-unheard-of', json);
      expect(res.status).toBe(415);
      expect(res.body.error).toBe('Unsupported Content-Encoding "x-unheard-of": send the body as identity, gzip, deflate or br');
    });

    it('a gzip bomb is stopped at the byte limit of the decoded body (413)', async () => {
      const bomb = zlib.gzipSync(Buffer.concat([Buffer.from('{"content":"'), Buffer.alloc(3 * 1024 * 1024, 0x61), Buffer.from('"}')]));
      expect(bomb.length).toBeLessThan(100_000);
      const res = await send('gzip', bomb);
      expect(res.status).toBe(413);
    });

    it('a non-UTF-8 charset is 415', async () => {
      const res = await api.post('/api/memories').set('Content-Type', 'application/json; charset=latin1').send(json);
      expect(res.status).toBe(415);
    });
  });

  describe('requests the HTTP parser refuses', () => {
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1', () => socket.end(request));
        let answer = '';
        socket.on('data', (c: Buffer) => (answer += c.toString()));
        socket.on('end', () => resolve(answer));
        socket.on('error', reject);
      });

    it('a query string over 16 KB: 431 in the error envelope (not a bare status line), and the service goes on', async () => {
      const tags = Array.from({ length: 2000 }, (_, i) => `tag=t${i}`).join('&');
      const res = await new Promise<{ status: number; type: string; body: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port, path: `/api/memories?${tags}`, headers: { Authorization: `Bearer ${api.bearer}` } }, (r) => {
          let body = '';
          r.on('data', (c) => (body += c));
          r.on('end', () => resolve({ status: r.statusCode ?? 0, type: String(r.headers['content-type']), body }));
        });
        req.on('error', reject);
      });
      expect(res.status).toBe(431);
      expect(res.type).toMatch(/^application\/json/);
      expect(JSON.parse(res.body)).toEqual({ ok: false, error: 'The request line and headers are larger than 16 KB: shorten the query string' });
      await api.get('/api/memories').expect(200);
    });

    it('a malformed request line: 400 in the error envelope', async () => {
      const answer = await raw('GET /api/health HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n');
      expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))).toEqual({ ok: false, error: 'Malformed HTTP request' });
    });
  });

  describe('route casing, trailing slashes and headers', () => {
    it('POST /API/LOGIN with an Authorization header signs in (no 500), and so does /api/login/', async () => {
      for (const path of ['/API/LOGIN', '/api/login/', '/Api/Login/']) {
        const agent = request.agent(t.http);
        const res = await agent.post(path).set('Authorization', 'Bearer nonsense').send({ username: 'admin', password: ADMIN_PASSWORD });
        expect(res.status).toBe(200);
        const me = await agent.get('/api/me').expect(200);
        expect(me.body).toMatchObject({ authenticated: true, kind: 'admin' });
      }
    });

    it('every documented route, upper-cased and with a trailing slash, with odd headers: its normal answer or 404, never 500', async () => {
      const doc = (await request(t.http).get('/openapi.json').expect(200)).body as { paths: Record<string, Record<string, unknown>> };
      const admin = await adminAgent(t);
      const headers: Array<Record<string, string>> = [
        { Authorization: 'Bearer nonsense' },
        { Authorization: `Bearer ${api.bearer}` },
        { Authorization: 'Basic YWRtaW46eA==' },
        { 'X-HTTP-Method-Override': 'DELETE', 'Content-Encoding': 'gzip' },
      ];
      for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/api/'))) {
        const concrete = path.replace('{memory_id}', '0123456789abcdef01234567').replace('{token_id}', '0123456789abcdef');
        for (const method of Object.keys(item)) {
          for (const variant of [concrete.toUpperCase(), `${concrete}/`, concrete.replace('/api/', '/Api/')]) {
            for (const h of headers) {
              const res = await (request(t.http) as unknown as Record<string, (u: string) => request.Test>)[method](variant).set(h).send('{}');
              expect([method, variant, h, res.status < 500]).toEqual([method, variant, h, true]);
            }
            const res = await (admin as unknown as Record<string, (u: string) => request.Test>)[method](variant);
            expect(res.status).toBeLessThan(500);
          }
        }
      }
    });

    it('login throttling applies to /API/LOGIN/ as to /api/login', async () => {
      const t2 = await createTestApp({ MEMSTORE_LOGIN_MAX_FAILURES: '2' });
      try {
        const codes: number[] = [];
        for (const path of ['/API/LOGIN/', '/api/Login', '/api/login/', '/API/login']) {
          codes.push((await request(t2.http).post(path).send({ username: 'admin', password: 'wrong' })).status);
        }
        expect(codes.slice(0, 2)).toEqual([401, 401]);
        expect(codes.slice(2)).toEqual([429, 429]);
      } finally {
        await t2.close();
      }
    });

    it('a path that is not valid percent-encoding is 400, not 500', async () => {
      const res = await api.get('/api/memories/%E0%A4%A');
      expect(res.status).toBeLessThan(500);
      expect(res.body.ok).toBe(false);
    });
  });

  describe('query parameters', () => {
    it.each(['2026-02-31', '2026-02-30T10:00:00Z', '2026-13-01', '2026-04-31T00:00:00.000Z', '2025-02-29', '0086-02-30T10:00:00Z', '0100-02-29'])(
      'since=%s (a date that does not exist) is 422',
      async (since) => {
        const res = await api.get(`/api/memories?since=${encodeURIComponent(since)}`);
        expect(res.status).toBe(422);
        expect(res.body.detail[0]).toMatchObject({ loc: ['query', 'since'], type: 'datetime_parsing' });
      },
    );

    it.each(['2024-02-29', '2026-02-28T23:59:59.999Z', '2026-11-01', '0086-01-09T23:01:38-13:35', '0004-02-29', '0000-01-01T00:00:00Z'])('since=%s is accepted', async (since) => {
      await api.get(`/api/memories?since=${encodeURIComponent(since)}`).expect(200);
    });

    it('a since before the year 1000 (a real date) keeps every memory, as an earlier since does', async () => {
      const all = await api.get('/api/memories?limit=1').expect(200);
      const early = await api.get(`/api/memories?limit=1&since=${encodeURIComponent('0086-01-09T23:01:38-13:35')}`).expect(200);
      expect(early.body.total).toBe(all.body.total);
    });

    it.each([
      ['q', '?q=a&q=b'],
      ['limit', '?limit=1&limit=2'],
      ['since', '?since=2026-01-01&since=2026-01-02'],
      ['type', '?type=note&type=fact'],
    ])('a repeated scalar parameter (%s) is 422 saying it was given more than once', async (name, qs) => {
      const res = await api.get(`/api/memories${qs}`);
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', name], type: 'value_error' });
      expect(res.body.error).toContain(`Parameter '${name}' was given more than once`);
    });

    it('tag stays repeatable', async () => {
      await api.get('/api/memories?tag=a&tag=b').expect(200);
    });
  });
});

describe.each(testBackends())('hostile text and names on $name', (backend) => {
  let t: TestApp;
  let api: Api;

  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('lone surrogates become U+FFFD at input: create, fetch, list, search, download and the file agree', async () => {
    // Sent as JSON escapes: \ud800 (lone high), \udc00 (lone low), \ud83d\ude00 (a proper pair, kept).
    const raw = '{"title":"zebu\\ud800title","content":"zebu content \\udc00 and \\ud83d\\ude00 end","tags":["t\\ud800"],"agent":"a\\udfff","project":"p\\ud800"}';
    const res = await api.post('/api/memories').set('Content-Type', 'application/json').send(raw);
    expect(res.status).toBe(201);
    const m = res.body.memory;
    const want = { title: 'zebu\uFFFDtitle', content: 'zebu content \uFFFD and \u{1F600} end', tags: ['t\uFFFD'], agent: 'a\uFFFD', project: 'p\uFFFD' };
    expect(m).toMatchObject(want);

    const fetched = (await api.get(`/api/memories/${m.id}`).expect(200)).body.memory;
    expect(fetched).toMatchObject(want);

    const listed = (await api.get('/api/memories?limit=200').expect(200)).body.rows.find((r: { id: string }) => r.id === m.id);
    expect(listed).toMatchObject({ title: want.title, tags: want.tags, agent: want.agent, project: want.project });
    expect(listed.snippet).toContain('\uFFFD');

    const found = (await api.get('/api/memories?q=zebu').expect(200)).body.rows.find((r: { id: string }) => r.id === m.id);
    expect(found).toMatchObject({ title: want.title, tags: want.tags, agent: want.agent, project: want.project });

    const file = await api
      .get(`/api/memories/${m.id}/download`)
      .buffer(true)
      .parse((r, cb) => {
        const chunks: Buffer[] = [];
        r.on('data', (c: Buffer) => chunks.push(c));
        r.on('end', () => cb(null, Buffer.concat(chunks)));
      });
    expect(file.status).toBe(200);
    const text = (file.body as Buffer).toString('utf8');
    expect(text).toContain(want.content);
    expect(text).toContain('zebu\uFFFDtitle');
    // Exactly one replacement character per lone surrogate in the content (not three).
    expect(
      text
        .split('\n---\n')
        .pop()!
        .match(/\uFFFD/g),
    ).toHaveLength(1);

    const patched = (await api.patch(`/api/memories/${m.id}`).set('Content-Type', 'application/json').send('{"title":"\\udbff!"}').expect(200)).body.memory;
    expect(patched.title).toBe('\uFFFD!');
  });

  it('stats count projects and agents named constructor, __proto__, toString; the counts add up to total', async () => {
    const names = ['constructor', '__proto__', 'toString'];
    for (const name of names) await createMemory(api, { content: `named ${name}`, project: name, agent: name });
    await createMemory(api, { content: 'no names' });
    const res = await api.get('/api/stats').expect(200);
    expect(res.text).toContain('"__proto__":1');
    const stats = res.body.stats as { total: number; by_project: Record<string, number>; by_agent: Record<string, number>; by_type: Record<string, number> };
    const own = (r: Record<string, number>) => Object.entries(r).filter(([, v]) => typeof v === 'number');
    const sum = (r: Record<string, number>) => own(r).reduce((a, [, v]) => a + v, 0);
    for (const map of [stats.by_project, stats.by_agent]) {
      for (const name of names) expect(Object.prototype.hasOwnProperty.call(map, name) && map[name]).toBe(1);
      expect(sum(map)).toBe(stats.total);
    }
    expect(sum(stats.by_type)).toBe(stats.total);
  });
});
