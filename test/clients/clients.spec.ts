import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import request from 'supertest';
import {
  AuthenticationError,
  MemoryStore,
  MemoryStoreError,
  NotFoundError,
  RateLimitError,
  parseRetryAfter,
  ValidationError,
  VersionConflictError,
  type MemoryRow,
} from '../../clients/typescript/src';
import { adminAgent, createTestApp, TestApp, tempDir } from '../support/app';

/**
 * The first-party clients (issue 44 item 7) against a REAL service on 127.0.0.1: the TypeScript
 * client (clients/typescript) in-process, the Python client (clients/python) as a child process
 * running its unittest suite against the same server. Both: create, search, If-Match conflict,
 * 429 retry (a token limited to 2 requests per shortened 2 s window), pagination, typed errors.
 * Also checks the committed generated types (clients/typescript/src/openapi.ts) match the
 * current sources' /openapi.json.
 *
 * The Python interpreter: MEMSTORE_CLIENTS_PYTHON (a venv where `pip install ./clients/python`
 * ran, as .ci/run does) or else `python3` with clients/python/src on PYTHONPATH.
 */
const ROOT = path.resolve(__dirname, '../..');

/** Runs a program without blocking this process (whose event loop serves the requests), at most 60 s. */
function run(file: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number | string | null; output: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { ...opts, timeout: 60_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? ((error as { code?: number | string }).code ?? error.message) : 0, output: `${stdout}${stderr}` }),
    );
  });
}
const WINDOW_S = 2;

describe('client libraries against a running service', () => {
  let t: TestApp;
  let base: string;
  let token: string;
  const limitedTokens: string[] = [];
  let store: MemoryStore;

  beforeAll(async () => {
    t = await createTestApp({ MEMSTORE_TOKEN_RATE_WINDOW_SECONDS: String(WINDOW_S) });
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(t.http.address() as AddressInfo).port}`;
    const admin = await adminAgent(t);
    const full = await admin.post('/api/tokens').send({ name: 'clients', preset: 'full', rate_limit_per_minute: 0 }).expect(201);
    token = full.body.plaintext;
    for (const name of ['clients-ts-limited', 'clients-py-limited']) {
      const res = await admin.post('/api/tokens').send({ name, preset: 'read-only', rate_limit_per_minute: 2 }).expect(201);
      limitedTokens.push(res.body.plaintext);
    }
    store = new MemoryStore({ baseUrl: base, token });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('the committed TypeScript types are those of the current /openapi.json', async () => {
    const target = path.join(ROOT, 'clients/typescript/src/openapi.ts');
    const dir = tempDir('memstore-client-types-');
    fs.writeFileSync(path.join(dir, 'openapi.json'), JSON.stringify((await request(t.http).get('/openapi.json').expect(200)).body));
    // The generator runs as its own process (openapi-typescript loads ES modules, which jest's module system does not).
    const { code, output } = await run(process.execPath, [path.join(ROOT, 'clients/typescript/scripts/generate-types.js'), path.join(dir, 'openapi.json'), path.join(dir, 'openapi.ts')], {
      cwd: ROOT,
      env: process.env,
    });
    if (code !== 0) throw new Error(`generate-types.js exited ${code}:\n${output}`);
    const text = fs.readFileSync(path.join(dir, 'openapi.ts'), 'utf8');
    fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.MEMSTORE_UPDATE_CLIENT_TYPES === '1') fs.writeFileSync(target, text);
    // On a difference: MEMSTORE_UPDATE_CLIENT_TYPES=1 npx jest test/clients rewrites the file (or see clients/typescript/README.md).
    expect(fs.readFileSync(target, 'utf8')).toBe(text);
  });

  describe('TypeScript client', () => {
    const word = `ts${Date.now().toString(36)}`;
    const project = `ts-${word}`;

    it('creates, fetches and finds a memory', async () => {
      const { memory, similar } = await store.createMemory({ content: `The ${word} runbook: deploys go blue-green.`, title: 'Runbook', type: 'decision', tags: ['deploy', ' deploy '], project });
      expect(memory).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{24}$/), version: 1, tags: ['deploy'], project });
      expect(similar).toEqual([]);
      expect((await store.getMemory(memory.id)).content).toBe(`The ${word} runbook: deploys go blue-green.`);

      const page = await store.searchMemories(word);
      expect(page.mode).toBe('search');
      expect(page.rows.map((r) => r.id)).toEqual([memory.id]);
      expect(page.rows[0].snippet).toContain(word);
    });

    it('If-Match: a stale version is a VersionConflictError naming the current one; modifyMemory re-reads', async () => {
      const { memory } = await store.createMemory({ content: 'first text', project });
      expect((await store.updateIfUnchanged(memory, { content: 'second text' })).version).toBe(2);

      const stale = await store.updateIfUnchanged(memory, { content: 'lost update' }).catch((e: unknown) => e);
      expect(stale).toBeInstanceOf(VersionConflictError);
      expect((stale as VersionConflictError).status).toBe(412);
      expect((stale as VersionConflictError).currentVersion).toBe(2);
      await expect(store.deleteMemory(memory.id, { ifMatch: 1 })).rejects.toBeInstanceOf(VersionConflictError);
      expect((await store.getMemory(memory.id)).content).toBe('second text');

      const final = await store.modifyMemory(memory.id, (m) => ({ content: `${m.content} + appended` }));
      expect([final.version, final.content]).toEqual([3, 'second text + appended']);
      await store.deleteIfUnchanged(final);
      const gone = await store.getMemory(memory.id).catch((e: unknown) => e);
      expect(gone).toBeInstanceOf(NotFoundError);
      expect((gone as NotFoundError).message).toBe('Memory not found');
    });

    it('errors are typed and carry the envelope (422 detail, 401), never the token', async () => {
      const bad = await store.listMemories({ limit: 500 }).catch((e: unknown) => e);
      expect(bad).toBeInstanceOf(ValidationError);
      expect((bad as ValidationError).detail[0].loc).toEqual(['query', 'limit']);
      expect((bad as ValidationError).requestId).toBeTruthy();

      const unauthenticated = await new MemoryStore({ baseUrl: base, token: 'mem_tok_0000000000000000_nope' }).stats().catch((e: unknown) => e);
      expect(unauthenticated).toBeInstanceOf(AuthenticationError);
      expect((unauthenticated as AuthenticationError).status).toBe(401);
      expect(String(unauthenticated)).not.toContain('nope');
    });

    it('pages: the list follows next_cursor, a search the page number', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await store.createMemory({ content: `${word} item ${i}`, project: `${project}-pages` })).memory.id);

      const pages = [];
      for await (const page of store.pages({ project: `${project}-pages`, limit: 2 })) pages.push(page);
      expect(pages.map((p) => p.rows.length)).toEqual([2, 2, 1]);
      expect(pages[1].page).toBeNull(); // the second page came from the cursor
      expect(pages.flatMap((p) => p.rows.map((r) => r.id))).toEqual([...ids].reverse()); // newest first, each once

      const found: MemoryRow[] = [];
      for await (const row of store.iterateMemories({ q: `${word} item`, project: `${project}-pages`, limit: 2 })) found.push(row);
      expect(found.map((r) => r.id).sort()).toEqual([...ids].sort());
    });

    it('429: waits for Retry-After and retries; with retries off it is a RateLimitError', async () => {
      const retries: Array<[number, number, number]> = [];
      const limited = new MemoryStore({ baseUrl: base, token: limitedTokens[0], onRetry: (e, attempt, delay) => retries.push([e.status, attempt, delay]) });
      // The limit is 2 a window: the third request is answered 429, waited for and retried.
      for (let i = 0; i < 6 && retries.length === 0; i++) expect(typeof (await limited.stats()).total).toBe('number');
      expect(retries.length).toBeGreaterThanOrEqual(1);
      expect(retries[0].slice(0, 2)).toEqual([429, 1]);
      expect(retries[0][2]).toBeGreaterThan(0);
      expect(retries[0][2]).toBeLessThanOrEqual(WINDOW_S * 1000);

      const impatient = new MemoryStore({ baseUrl: base, token: limitedTokens[0], retry: { maxRetries: 0 } });
      let over: unknown;
      for (let i = 0; i < 6 && over === undefined; i++)
        over = await impatient.stats().then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(over).toBeInstanceOf(RateLimitError);
      expect(over).toBeInstanceOf(MemoryStoreError);
      expect((over as RateLimitError).retryAfter).toBeGreaterThanOrEqual(1);
    });
  });

  describe('TypeScript client retry policy (a stub fetch: answers the service cannot be made to give on cue)', () => {
    /** A fetch that answers from a script and records each request's method and headers. */
    function scripted(answers: Array<{ status: number; headers?: Record<string, string>; body?: unknown }>) {
      const seen: Array<{ method: string; headers: Record<string, string> }> = [];
      const fetchImpl = (async (_url: string, init: RequestInit) => {
        seen.push({ method: String(init.method), headers: { ...(init.headers as Record<string, string>) } });
        const a = answers[Math.min(seen.length - 1, answers.length - 1)];
        return new Response(a.body === undefined ? '' : JSON.stringify(a.body), { status: a.status, headers: { 'Content-Type': 'application/json', ...a.headers } });
      }) as unknown as typeof fetch;
      return { seen, fetchImpl };
    }
    const memory = {
      id: '6740a1b2c3d4e5f601234567',
      title: null,
      type: 'note',
      tags: [],
      scope: 'global',
      agent: null,
      project: null,
      created_at: '2026-11-21T09:30:00.000Z',
      updated_at: '2026-11-21T09:30:00.000Z',
      version: 1,
    };

    it('a 503 on create is retried with the same Idempotency-Key, so the memory is stored once', async () => {
      const { seen, fetchImpl } = scripted([
        { status: 503, headers: { 'Retry-After': '0' }, body: { ok: false, error: 'Document database unavailable: down' } },
        { status: 201, body: { ok: true, memory, similar: [] } },
      ]);
      const client = new MemoryStore({ baseUrl: 'http://127.0.0.1:9', token: 't', fetch: fetchImpl });
      expect((await client.createMemory({ content: 'x' })).memory.id).toBe(memory.id);
      expect(seen).toHaveLength(2);
      expect(seen[1].headers['Idempotency-Key']).toBe(seen[0].headers['Idempotency-Key']);
      expect(seen[0].headers['Idempotency-Key']).toMatch(/\S{8,}/);
    });

    it('a Retry-After beyond maxDelayMs is not waited for; retries stop after maxRetries', async () => {
      const far = scripted([{ status: 429, headers: { 'Retry-After': '120' }, body: { ok: false, error: 'Rate limit exceeded' } }]);
      const err = await new MemoryStore({ baseUrl: 'http://127.0.0.1:9', token: 't', fetch: far.fetchImpl }).stats().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect((err as RateLimitError).retryAfter).toBe(120);
      expect(far.seen).toHaveLength(1);

      const down = scripted([{ status: 503, body: { ok: false, error: 'Object store unavailable: bucket missing' } }]);
      const client = new MemoryStore({ baseUrl: 'http://127.0.0.1:9', token: 't', fetch: down.fetchImpl, retry: { maxRetries: 2, baseDelayMs: 1 } });
      await expect(client.getMemory(memory.id)).rejects.toMatchObject({ name: 'ServiceUnavailableError', status: 503, message: 'Object store unavailable: bucket missing' });
      expect(down.seen).toHaveLength(3);
    });

    it('a redirect is not followed, so the token stays with the service', async () => {
      const hits: Array<string | undefined> = [];
      const elsewhere = http.createServer((req, res) => {
        hits.push(req.headers.authorization);
        res.end('{}');
      });
      await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
      const target = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}/api/stats`;
      const moved = http.createServer((_req, res) => res.writeHead(307, { Location: target }).end());
      await new Promise<void>((resolve) => moved.listen(0, '127.0.0.1', resolve));
      try {
        const client = new MemoryStore({ baseUrl: `http://127.0.0.1:${(moved.address() as AddressInfo).port}`, token: 'mem_tok_secret' });
        const err = await client.stats().catch((e: unknown) => e);
        expect(err).toBeInstanceOf(MemoryStoreError);
        expect((err as MemoryStoreError).status).toBe(307);
        expect((err as MemoryStoreError).message).toContain(`redirected to ${target}`);
        expect(hits).toEqual([]);
        expect(JSON.stringify(client)).not.toContain('secret');
      } finally {
        await new Promise((resolve) => moved.close(resolve));
        await new Promise((resolve) => elsewhere.close(resolve));
      }
    });

    it('reads Retry-After as seconds or as an HTTP date', () => {
      const now = Date.parse('2026-11-27T10:00:00Z');
      expect(parseRetryAfter('7', now)).toBe(7);
      expect(parseRetryAfter('Fri, 27 Nov 2026 10:00:05 GMT', now)).toBe(5);
      expect(parseRetryAfter('soon', now)).toBeUndefined();
      expect(parseRetryAfter(null, now)).toBeUndefined();
    });
  });

  it('Python client: its unittest suite passes against the same service', async () => {
    const python = process.env.MEMSTORE_CLIENTS_PYTHON || 'python3';
    const env: NodeJS.ProcessEnv = { ...process.env, MEMSTORE_URL: base, MEMSTORE_TOKEN: token, MEMSTORE_LIMITED_TOKEN: limitedTokens[1], PYTHONDONTWRITEBYTECODE: '1' };
    if (!process.env.MEMSTORE_CLIENTS_PYTHON) env.PYTHONPATH = path.join(ROOT, 'clients/python/src');
    // Asynchronous on purpose: the service answering the Python tests runs in this process.
    const { code, output } = await run(python, ['-m', 'unittest', 'discover', '-s', path.join(ROOT, 'clients/python/tests'), '-v'], { cwd: ROOT, env });
    if (code !== 0) throw new Error(`python unittest exited ${code}:\n${output}`);
    expect(output).toMatch(/^Ran 9 tests in/m);
    expect(output).toMatch(/^OK$/m);
  }, 90_000);
});
