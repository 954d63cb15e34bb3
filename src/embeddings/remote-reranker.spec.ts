import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SearchCandidate } from '../backends/ports/memory.model';
import { rankCandidates } from '../memories/search/relevance';
import { rerankStage } from '../memories/search/rerank-stage';
import { RemoteReranker, rerankedOrder, rerankerFromEnv } from './remote-reranker';

/**
 * The remote re-ranker against a real HTTP server on 127.0.0.1 that speaks `/v1/rerank`: it scores
 * a document by how many of the query's words it contains and answers the results best first, as
 * Cohere/TEI/vLLM do. `behaviour` makes it fail in the ways a real endpoint fails.
 */
describe('RemoteReranker (a /v1/rerank endpoint)', () => {
  let server: http.Server;
  let base: string;
  let behaviour: 'ok' | 'error' | 'hang' | 'redirect' | 'bad-index' | 'not-json' = 'ok';
  const requests: Array<{ path: string; auth?: string; body: { model?: string; query: string; documents: string[]; top_n: number } }> = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      req.on('end', () => {
        const body = JSON.parse(raw) as { model?: string; query: string; documents: string[]; top_n: number };
        requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
        if (behaviour === 'hang') return; // never answers
        if (behaviour === 'error') return void res.writeHead(500).end('{"error":"overloaded"}');
        if (behaviour === 'redirect') return void res.writeHead(307, { location: 'http://127.0.0.1:1/elsewhere' }).end();
        if (behaviour === 'not-json') return void res.writeHead(200, { 'content-type': 'application/json' }).end('<html>');
        const words = body.query.toLowerCase().split(/\W+/).filter(Boolean);
        const results = body.documents
          .map((d, index) => ({ index, relevance_score: words.filter((w) => d.toLowerCase().includes(w)).length / words.length }))
          .sort((a, b) => b.relevance_score - a.relevance_score)
          .slice(0, body.top_n);
        if (behaviour === 'bad-index') results[0].index = body.documents.length;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ model: body.model, results }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    behaviour = 'ok';
    requests.length = 0;
  });

  const reranker = (over: Partial<ConstructorParameters<typeof RemoteReranker>[0]> = {}) =>
    new RemoteReranker({ url: `${base}/v1/rerank`, model: 'bge-reranker-base', apiKey: null, timeoutMs: 1000, retryAfterMs: 60_000, ...over });

  const candidates = ['We deployed the release on Friday', 'Oat milk in the coffee, please', 'The deployment of the new release failed on Friday'];

  it('sends {model, query, documents, top_n} and answers each candidate its score, in the candidates’ order', async () => {
    const scores = await reranker({ apiKey: 'sk-secret' }).rerank('friday release deployment', candidates);
    expect(requests).toEqual([
      { path: '/v1/rerank', auth: 'Bearer sk-secret', body: expect.objectContaining({ model: 'bge-reranker-base', query: 'friday release deployment', documents: candidates, top_n: 3 }) },
    ]);
    expect(scores).toEqual([2 / 3, 0, 1]);
    expect(rerankedOrder(scores!)).toEqual([2, 0, 1]);
  });

  it('keeps the caller’s order (null) when the endpoint fails, hangs, redirects or answers nonsense, and then leaves it alone for a while', async () => {
    for (const b of ['error', 'hang', 'redirect', 'bad-index', 'not-json'] as const) {
      behaviour = b;
      const r = reranker({ timeoutMs: 200 });
      await expect(r.rerank('friday release', candidates)).resolves.toBeNull();
      expect(r.lastError).toMatch(/re-ranker/);
      expect(r.lastError).not.toMatch(/sk-|Bearer/);
      behaviour = 'ok';
      const before = requests.length;
      // Paused after the failure: no second request, the caller's order again.
      await expect(r.rerank('friday release', candidates)).resolves.toBeNull();
      expect(requests.length).toBe(before);
    }
    // A redirect is not followed: the endpoint at its target is never asked.
    expect(requests.map((q) => q.path)).toEqual(Array(5).fill('/v1/rerank'));
  });

  it('tries the endpoint again after the pause', async () => {
    behaviour = 'error';
    const r = reranker({ retryAfterMs: 0 });
    expect(await r.rerank('friday', candidates)).toBeNull();
    behaviour = 'ok';
    expect(await r.rerank('friday', candidates)).toEqual([1, 0, 1]);
    expect(r.lastError).toBeNull();
  });

  it('scores nothing for no candidates, and bounds what it sends', async () => {
    const r = reranker();
    expect(await r.rerank('anything', [])).toEqual([]);
    expect(requests).toHaveLength(0);
    const many = Array.from({ length: 205 }, (_, i) => `note ${i} ${'x'.repeat(5000)}`);
    const scores = await r.rerank('note', many);
    expect(requests[0].body.documents).toHaveLength(200);
    expect(Math.max(...requests[0].body.documents.map((d) => d.length))).toBe(4000);
    expect(scores).toHaveLength(205);
    expect(scores!.slice(200)).toEqual([null, null, null, null, null]);
    expect(rerankedOrder(scores!).slice(-5)).toEqual([200, 201, 202, 203, 204]);
  });

  it('is configured by the environment, with an off switch and clear errors', async () => {
    expect(rerankerFromEnv({}).unavailable).toMatch(/MEMSTORE_RERANK_URL/);
    const off = rerankerFromEnv({ MEMSTORE_RERANK_URL: `${base}/v1/rerank`, MEMSTORE_RERANK: 'off' });
    expect(off.unavailable).toMatch(/switched off/);
    expect(await off.rerank('friday', candidates)).toBeNull();
    expect(requests).toHaveLength(0);
    const on = rerankerFromEnv({ MEMSTORE_RERANK_URL: `${base}/v1/rerank`, MEMSTORE_RERANK_TIMEOUT_MS: '500' });
    expect(on.unavailable).toBeNull();
    expect(await on.rerank('friday', candidates)).toEqual([1, 0, 1]);
    expect(requests[0].body).not.toHaveProperty('model');
    expect(() => rerankerFromEnv({ MEMSTORE_RERANK_URL: 'ftp://example.com/rerank' })).toThrow(/MEMSTORE_RERANK_URL must be an http\(s\) URL/);
    expect(() => rerankerFromEnv({ MEMSTORE_RERANK_URL: 'http://169.254.169.254/v1/rerank' })).toThrow(/link-local or cloud metadata/);
    expect(() => rerankerFromEnv({ MEMSTORE_RERANK_URL: 'http://user:pw@example.com/v1/rerank' })).toThrow(/credentials/);
    expect(() => rerankerFromEnv({ MEMSTORE_RERANK_URL: `${base}/v1/rerank`, MEMSTORE_RERANK_TIMEOUT_MS: '5s' })).toThrow(/MEMSTORE_RERANK_TIMEOUT_MS/);
  });

  it('as the second stage of search: re-scores the best candidates, then the floor applies to its scores', async () => {
    const candidate = (id: string, snippet: string, cosine: number): SearchCandidate => ({
      row: {
        id,
        namespace: 'default',
        title: null,
        type: 'note',
        scope: 'global',
        tags: [],
        agent: null,
        project: null,
        snippet,
        createdAt: new Date(0),
        updatedAt: new Date(0),
        version: 1,
      },
      cosine,
      semantic: true,
      words: [],
      phrases: [],
      length: snippet.length,
      neighbours: [],
    });
    const set = { list: candidates.map((c, i) => candidate(`m${i}`, c, [0.8, 0.75, 0.55][i])), docs: 3, df: [] as Array<[string, number]> };
    const query = 'friday release deployment';
    const { rows: first } = await rankCandidates(set, { mode: 'semantic', text: query, floor: 0.4 });
    expect(first.map((r) => r.row.id)).toEqual(['m0', 'm1']); // by cosine: the oat-milk note passes, the best match does not
    const { rows: second } = await rankCandidates(set, { mode: 'semantic', text: query, floor: 0.4, hooks: { rescore: rerankStage(reranker(), query) } });
    expect(second.map((r) => [r.row.id, r.score])).toEqual([
      ['m2', 1],
      ['m0', 0.6667],
    ]);
    expect(second[0].explain.rescore).toBe(1);
    behaviour = 'error'; // a failing re-ranker leaves the first stage's answer
    expect((await rankCandidates(set, { mode: 'semantic', text: query, floor: 0.4, hooks: { rescore: rerankStage(reranker(), query) } })).rows.map((r) => r.row.id)).toEqual(['m0', 'm1']);
    expect(rerankStage(rerankerFromEnv({}), query)).toBeUndefined();
  });
});
