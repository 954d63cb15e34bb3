import { Tokenizer } from '@huggingface/tokenizers';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultModelDir } from '../config/app-config';
import { dot } from './embedding-provider.port';
import { LocalEmbeddingProvider } from './local-embedding.provider';
import { MEMORY_TEXT_FORMAT } from '../../libs/search-query/fusion';
import { headForTokens } from './local-embedding.text';

/**
 * What the local model does to the process around it: with MEMSTORE_LOG_FORMAT=json every line
 * the service prints must be JSON, so loading and running the model prints nothing of its own, and
 * onnxruntime-node's telemetry client (on by default in its Linux build: it writes an event store
 * under $HOME/.cache/Microsoft and uploads it) stays off. A child process with a fresh HOME.
 */
describe('LocalEmbeddingProvider: a silent neighbour', () => {
  const modelDir = defaultModelDir();
  let home: string;

  beforeEach(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-ort-home-'));
  });
  afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

  function embedInChild(): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const script = `
      const { LocalEmbeddingProvider } = require(${JSON.stringify(path.join(__dirname, 'local-embedding.provider.ts'))});
      const p = new LocalEmbeddingProvider(${JSON.stringify(modelDir)});
      p.embed('a memory about running', 'document')
        .then((v) => { process.stdout.write(JSON.stringify({ dims: v.length }) + '\\n'); return p.close(); })
        .catch((e) => { process.stdout.write(JSON.stringify({ failed: e.message }) + '\\n'); process.exitCode = 1; });`;
    const { ORT_DISABLE_TELEMETRY: _inherited, ...parentEnv } = process.env;
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      cwd: path.join(__dirname, '..', '..'),
      env: { ...parentEnv, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), TS_NODE_COMPILER_OPTIONS: '{"module":"commonjs"}' },
      timeout: 110_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  }

  // A child that compiles the provider and its worker with ts-node: slow on a loaded machine.
  it("embeds while printing nothing but its caller's line, and writes no telemetry", async () => {
    const child = await embedInChild();
    expect(child.stderr).toBe('');
    expect(child.stdout.trim().split('\n')).toEqual([JSON.stringify({ dims: 384 })]);
    expect(child.status).toBe(0);
    expect(fs.existsSync(path.join(home, '.cache', 'Microsoft'))).toBe(false);
  }, 120_000);
});

/**
 * The local model's threads (issue 45, item 7): several texts embedded at once on two threads get
 * exactly the vectors one thread gives them one by one, whatever their length (empty, long, 1 MB),
 * and only a long text's head is read.
 */
describe('LocalEmbeddingProvider: texts on two threads', () => {
  const modelDir = defaultModelDir();
  const one = new LocalEmbeddingProvider(modelDir, { threads: 1 });
  const two = new LocalEmbeddingProvider(modelDir, { threads: 2 });
  afterAll(async () => {
    await one.close();
    await two.close();
  });
  const filler = Array.from({ length: 700 }, (_, i) => `note ${i} about the release train and its owners;`).join(' ');

  it('gives every text of a concurrent batch the vector it gets alone, an empty and a 1 MB text included', async () => {
    const texts = ['', 'the deploy pipeline runs on Fridays', `A long turn. ${filler}`.slice(0, 2500), 'word '.repeat(210_000), 'Émile prefers oat milk ☕ in his coffee'];
    const alone: Float32Array[] = [];
    for (const t of texts) alone.push(await one.embed(t, 'document', false));
    const together = await Promise.all(texts.map((t) => two.embed(t, 'document', false)));
    texts.forEach((_, i) => {
      expect(together[i].length).toBe(384);
      expect(Math.sqrt(dot(together[i], together[i]))).toBeCloseTo(1, 4);
      expect(dot(together[i], alone[i])).toBeGreaterThan(0.9999);
    });
    // Not one vector for all: the texts kept their own.
    expect(dot(together[1], together[4])).toBeLessThan(0.95);
  }, 120_000);

  it('reads the head of a text longer than the model reads, not its tail', async () => {
    const head = 'Melanie adopted a greyhound called Biscuit in March. ';
    const a = await two.embed(head + filler, 'document', false);
    const sameHeadOtherTail = await two.embed(`${head}${filler} ${'Volcanic eruptions reshape islands. '.repeat(200)}`, 'document', false);
    const otherHead = await two.embed('Caroline repaired the roof of her cabin in June. ' + filler, 'document', false);
    expect(dot(a, sameHeadOtherTail)).toBeGreaterThan(0.9999);
    expect(dot(a, otherHead)).toBeLessThan(0.999);
  }, 120_000);

  it('reads MEMSTORE_EMBEDDING_MAX_TOKENS tokens: a shorter truncation ignores what follows them, and is another vector space', async () => {
    const short = new LocalEmbeddingProvider(modelDir, { threads: 1, maxTokens: 64 });
    const full = new LocalEmbeddingProvider(modelDir, { threads: 1, maxTokens: 512 });
    try {
      const head = `Melanie adopted a greyhound called Biscuit in March. ${filler}`.slice(0, 400);
      const tail = ' Volcanic eruptions reshape islands.'.repeat(30);
      expect(dot(await short.embed(head, 'document'), await short.embed(head + tail, 'document'))).toBeGreaterThan(0.9999);
      expect(dot(await full.embed(head, 'document'), await full.embed(head + tail, 'document'))).toBeLessThan(0.999);
      // A text shorter than both truncations gets the same vector from both.
      expect(dot(await short.embed('oat milk, no sugar', 'document'), await full.embed('oat milk, no sugar', 'document'))).toBeGreaterThan(0.9999);
      // Stored vectors of one truncation are not mixed with the other's: the key differs, so a change re-embeds.
      expect(short.key).not.toBe(full.key);
      expect(short.key).toContain('/64t#');
      expect(full.key).toBe(`local:bge-small-en-v1.5#${MEMORY_TEXT_FORMAT}`);
      // Never more than the model's positional limit (model.json).
      expect(new LocalEmbeddingProvider(modelDir, { maxTokens: 4096 }).maxTokens).toBe(512);
    } finally {
      await short.close();
      await full.close();
    }
  }, 120_000);

  it("prepends model.json's documentPrefix to every memory and its queryPrefix to every query (e5: passage: / query:), and takes its duplicate threshold and cosine scale", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-prefixed-model-'));
    fs.symlinkSync(path.join(modelDir, 'model.onnx'), path.join(dir, 'model.onnx'));
    fs.symlinkSync(path.join(modelDir, 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
    fs.writeFileSync(
      path.join(dir, 'model.json'),
      JSON.stringify({ model: 'prefixed', pooling: 'cls', maxTokens: 512, queryPrefix: 'query: ', documentPrefix: 'passage: ', duplicateThreshold: 0.93, cosineZero: 0.79, cosineOne: 0.92 }),
    );
    const prefixed = new LocalEmbeddingProvider(dir, { threads: 1 });
    try {
      // The model's own duplicate-hint cosine (e5's scale runs high); bge's model.json names none: the service default.
      expect(prefixed.duplicateThreshold).toBe(0.93);
      expect(one.duplicateThreshold).toBeNull();
      // Its relevance scale likewise (decision 0172); bge's is the service default.
      expect(prefixed.cosineScale).toEqual({ zero: 0.79, one: 0.92 });
      expect(one.cosineScale).toBeNull();
      expect(dot(await prefixed.embed('oat milk, no sugar', 'document'), await one.embed('passage: oat milk, no sugar', 'document'))).toBeGreaterThan(0.9999);
      expect(dot(await prefixed.embed('what milk?', 'query'), await one.embed('query: what milk?', 'document'))).toBeGreaterThan(0.9999);
      expect(dot(await prefixed.embed('oat milk, no sugar', 'document'), await one.embed('oat milk, no sugar', 'document'))).toBeLessThan(0.999);
    } finally {
      await prefixed.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('tokenises only a head of a huge text, with the same first tokens as the whole text', () => {
    const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(path.join(modelDir, 'tokenizer.json'), 'utf8')) as object, {});
    const text = `Ça coûte 12,50 € — naïve café déjà-vu!\t(e.g. "quoted"), URLs like https://example.com/a?b=c ${filler} ${'x'.repeat(50)}`.repeat(4);
    const head = headForTokens(text, 512);
    expect(head.length).toBeLessThan(text.length);
    expect(text.startsWith(head)).toBe(true);
    const all = tokenizer.encode(text).ids;
    const part = tokenizer.encode(head).ids;
    expect(part.length).toBeGreaterThan(512);
    expect(part.slice(0, 511)).toEqual(all.slice(0, 511));
    // A short text, or one giant word, is tokenised whole.
    expect(headForTokens('short text', 512)).toBe('short text');
    expect(headForTokens('y'.repeat(20_000), 512)).toHaveLength(20_000);
  });
});
