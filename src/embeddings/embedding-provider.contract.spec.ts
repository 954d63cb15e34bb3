import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defaultModelDir } from '../config/app-config';
import { dot, EmbeddingProvider, EmbeddingUnavailableError } from './embedding-provider.port';
import { MEMORY_TEXT_FORMAT } from '../../libs/search-query/fusion';
import { hasLocalModel, LocalEmbeddingProvider } from './local-embedding.provider';
import { NoneEmbeddingProvider } from './none-embedding.provider';
import { OpenAiEmbeddingProvider } from './openai-embedding.provider';

/**
 * The EmbeddingProvider contract, on the local ONNX model (for real: the model fetched at
 * install) and on the OpenAI-compatible adapter against a small local /v1/embeddings server.
 */
function providerContract(name: string, open: () => Promise<{ provider: EmbeddingProvider; related: [string, string, string]; cleanup(): Promise<void> }>) {
  describe(`EmbeddingProvider contract: ${name}`, () => {
    let p: EmbeddingProvider;
    let related: [string, string, string];
    let cleanup: () => Promise<void>;
    beforeAll(async () => {
      ({ provider: p, related, cleanup } = await open());
    });
    afterAll(async () => {
      await p.close();
      await cleanup();
    });

    it('embeds a text as a unit vector of its dimensions, under a stable key', async () => {
      const v = await p.embed('The deploy pipeline runs on Fridays', 'document');
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(p.dimensions);
      expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 4);
      // The local model's key also names a truncation below the model's 512 (`/256t`): vectors read to another length differ.
      expect(p.key).toBe(`${p.provider}:${p.model}${p instanceof LocalEmbeddingProvider && p.maxTokens < 512 ? `/${p.maxTokens}t` : ''}#${MEMORY_TEXT_FORMAT}`);
      expect(p.unavailable).toBeNull();
    });

    it('gives the same text the same vector, one text per call', async () => {
      const a = await p.embed('same words, same vector', 'document');
      const b = await p.embed('same words, same vector', 'document');
      expect(dot(a, b)).toBeGreaterThan(0.999);
    });

    it('puts a related text closer to the query than an unrelated one', async () => {
      const [query, near, far] = related;
      const q = await p.embed(query, 'query');
      const n = await p.embed(near, 'document');
      const f = await p.embed(far, 'document');
      expect(dot(q, n)).toBeGreaterThan(dot(q, f) + 0.05);
    });

    it('embeds concurrent calls without mixing them up', async () => {
      const texts = ['alpha release notes', 'the cat sat on the mat', 'quarterly budget review', 'alpha release notes'];
      const vs = await Promise.all(texts.map((t) => p.embed(t, 'document')));
      expect(dot(vs[0], vs[3])).toBeGreaterThan(0.999);
      expect(dot(vs[0], vs[1])).toBeLessThan(0.99);
    });

    it('embeds a text far longer than the model reads', async () => {
      const v = await p.embed('word '.repeat(5000), 'document');
      expect(v.length).toBe(p.dimensions);
      expect(Number.isFinite(v[0])).toBe(true);
    });
  });
}

const modelDir = defaultModelDir();
if (hasLocalModel(modelDir)) {
  providerContract('local ONNX model (bge-small-en-v1.5)', async () => {
    const provider = new LocalEmbeddingProvider(modelDir);
    await provider.load();
    return {
      provider,
      // A paraphrase sharing no word with its query.
      related: ['how did the user get into running?', 'started jogging after the move', 'the deploy pipeline failed on Tuesday'],
      cleanup: async () => undefined,
    };
  });
} else {
  describe('EmbeddingProvider contract: local ONNX model', () => {
    it(`needs the model installed by npm install (none in ${modelDir})`, () => {
      // CI installs it (postinstall); a machine without it fails here rather than skipping.
      expect(hasLocalModel(modelDir)).toBe(true);
    });
  });
}

/** A tiny OpenAI-compatible server: bag-of-words hashed into `dims` buckets. */
function fakeEmbeddingsServer(opts: { dims: number; key: string }) {
  const seen: Array<{ auth?: string; body: { model?: string; input?: string; dimensions?: number } }> = [];
  let failNext = 0;
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as { model?: string; input?: string; dimensions?: number };
      seen.push({ auth: req.headers.authorization, body });
      if (req.url !== '/v1/embeddings') return void res.writeHead(404).end();
      if (req.headers.authorization !== `Bearer ${opts.key}`) return void res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"bad key"}');
      if (failNext > 0) {
        failNext--;
        return void res.writeHead(500).end('boom');
      }
      const dims = body.dimensions ?? opts.dims;
      const v = new Array<number>(dims).fill(0);
      for (const w of String(body.input)
        .toLowerCase()
        .match(/[a-z]+/g) ?? []) {
        let h = 0;
        for (const ch of w.slice(0, 5)) h = (h * 31 + ch.charCodeAt(0)) % dims;
        v[h] += 1;
      }
      v[0] += 0.01;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ object: 'embedding', index: 0, embedding: v }], model: body.model }));
    });
  });
  return {
    seen,
    failOnce: () => (failNext = 1),
    start: () => new Promise<string>((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`))),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const fake = fakeEmbeddingsServer({ dims: 64, key: 'sk-test-secret' });
providerContract('OpenAI-compatible /v1/embeddings (local HTTP server)', async () => {
  const url = await fake.start();
  return {
    provider: new OpenAiEmbeddingProvider({ url, apiKey: 'sk-test-secret', model: 'hash-embed', dimensions: 48 }),
    related: ['deploying payments service', 'the payments service deploy failed', 'a recipe for banana bread'],
    cleanup: () => fake.stop(),
  };
});

describe('OpenAI-compatible adapter specifics', () => {
  const server = fakeEmbeddingsServer({ dims: 16, key: 'sk-right' });
  let url: string;
  beforeAll(async () => {
    url = await server.start();
  });
  afterAll(() => server.stop());

  it('sends the model, the dimensions and the key as a Bearer token', async () => {
    const p = new OpenAiEmbeddingProvider({ url, apiKey: 'sk-right', model: 'm1', dimensions: 8 });
    expect((await p.embed('hello', 'query')).length).toBe(8);
    expect(server.seen.at(-1)).toEqual({ auth: 'Bearer sk-right', body: { model: 'm1', input: 'hello', encoding_format: 'float', dimensions: 8 } });
  });

  it('learns the dimensions from the first answer when none are configured', async () => {
    const p = new OpenAiEmbeddingProvider({ url, apiKey: 'sk-right', model: 'm1', dimensions: null });
    expect(p.dimensions).toBeNull();
    await p.embed('hello', 'document');
    expect(p.dimensions).toBe(16);
  });

  it('fails with EmbeddingUnavailableError naming the status, never the key', async () => {
    const wrong = new OpenAiEmbeddingProvider({ url, apiKey: 'sk-wrong-key', model: 'm1', dimensions: null });
    const err = await wrong.embed('hello', 'document').catch((e: Error) => e);
    expect(err).toBeInstanceOf(EmbeddingUnavailableError);
    expect((err as Error).message).toBe('embedding endpoint answered HTTP 401');
    server.failOnce();
    const ok = new OpenAiEmbeddingProvider({ url, apiKey: 'sk-right', model: 'm1', dimensions: null });
    await expect(ok.embed('hello', 'document')).rejects.toThrow('HTTP 500');
    await expect(ok.embed('hello', 'document')).resolves.toHaveLength(16);
  });

  it('does not follow a redirect: the content and the key never go to the other host (issue 46)', async () => {
    const other = fakeEmbeddingsServer({ dims: 16, key: 'sk-right' });
    const otherUrl = await other.start();
    const redirector = http.createServer((req, res) => {
      req.resume();
      res.writeHead(307, { location: `${otherUrl}/embeddings` }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.1', () => r()));
    try {
      const p = new OpenAiEmbeddingProvider({ url: `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/v1`, apiKey: 'sk-right', model: 'm1', dimensions: null });
      const err = await p.embed('private memory text', 'document').catch((e: Error) => e);
      expect(err).toBeInstanceOf(EmbeddingUnavailableError);
      expect((err as Error).message).toMatch(/redirect \(HTTP 307\)/);
      expect(other.seen).toEqual([]);
    } finally {
      await new Promise<void>((r) => redirector.close(() => r()));
      await other.stop();
    }
  });

  it.each(['http://169.254.169.254/v1', 'http://[fd00:ec2::254]/v1', 'http://[::ffff:169.254.169.254]/v1', 'http://metadata.google.internal/v1'])(
    'refuses a link-local or metadata address without calling it: %s',
    async (bad) => {
      const p = new OpenAiEmbeddingProvider({ url: bad, apiKey: 'sk-right', model: 'm1', dimensions: null, timeoutMs: 2000 });
      await expect(p.embed('hello', 'document')).rejects.toThrow(/link-local or cloud metadata/);
    },
  );

  it('fails clearly when the endpoint is unreachable', async () => {
    const p = new OpenAiEmbeddingProvider({ url: 'http://127.0.0.1:1/v1', apiKey: null, model: 'm1', dimensions: null, timeoutMs: 2000 });
    await expect(p.embed('hello', 'document')).rejects.toThrow(/unreachable/);
  });
});

describe('none adapter', () => {
  it('has no key and refuses to embed, saying why', async () => {
    const p = new NoneEmbeddingProvider('no local model in /nowhere');
    expect(p.key).toBeNull();
    await expect(p.embed('x', 'query')).rejects.toThrow('Semantic search is off: no local model in /nowhere');
  });
});
