import request from 'supertest';
import type { EmbeddingStatusDto } from '../../src/admin/config/dto/config-responses.dto';
import type { MemoryDto } from '../../src/memories/dto/memory-response.dto';
import { createToken, TestApp } from '../support/app';

export interface Api {
  get(url: string): request.Test;
  post(url: string, body?: unknown): request.Test;
  patch(url: string, body?: unknown): request.Test;
  delete(url: string): request.Test;
  bearer: string;
}

/**
 * A client with a full-scope API token (read, write, delete). Scope checks themselves are
 * covered by the auth suites.
 */
export async function fullAccessApi(t: TestApp): Promise<Api> {
  const bearer = await fullToken(t);
  const auth = (r: request.Test) => r.set('Authorization', `Bearer ${bearer}`);
  return {
    bearer,
    get: (url) => auth(request(t.http).get(url)),
    post: (url, body) => auth(request(t.http).post(url)).send(body as object),
    patch: (url, body) => auth(request(t.http).patch(url)).send(body as object),
    delete: (url) => auth(request(t.http).delete(url)),
  };
}

async function fullToken(t: TestApp): Promise<string> {
  // Unlimited: these suites drive hundreds of requests a minute (rate limits: token-rate-limits.spec.ts).
  return (await createToken(t, { preset: 'full', rate_limit_per_minute: 0 })).plaintext;
}

/** Creates a memory and returns the response body's memory. */
export async function createMemory(api: Api, body: Record<string, unknown>): Promise<MemoryDto> {
  const res = await api.post('/api/memories', body);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.memory;
}

/** Waits until no memory waits for its vector (semantic search finds only embedded memories); the embeddings' status then. */
export async function embeddingsSettled(api: Pick<Api, 'get'>, timeoutMs = 60_000): Promise<EmbeddingStatusDto> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const e = (await api.get('/api/status').expect(200)).body.embeddings as EmbeddingStatusDto;
    if (e.pending === 0) return e;
    if (Date.now() > end) throw new Error(`embeddings still pending: ${JSON.stringify(e)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
