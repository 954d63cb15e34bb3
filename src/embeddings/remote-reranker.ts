import { assertOutboundUrl, FORBIDDEN_HOST, isForbiddenHost } from '../common/outbound-address';

/**
 * An optional second stage (issue 45, item 2): a remote cross-encoder behind the common
 * `POST /v1/rerank` shape (Cohere, Jina, Hugging Face TEI, vLLM, Infinity, LocalAI):
 * `{ model, query, documents: string[], top_n }` → `{ results: [{ index, relevance_score }] }`.
 *
 * `rerank(query, candidates)` never throws and never makes a search fail: it answers one score
 * per candidate (null for one the endpoint did not score), or null when it is off, the endpoint
 * fails, times out, redirects or answers something malformed. The caller then keeps its own
 * order. After a failure the endpoint is left alone for `retryAfterMs`, so a dead endpoint costs
 * one timeout, not one per search. Candidate texts go to the endpoint the operator configured
 * (never a link-local or metadata address, no redirect followed); the key is sent as a Bearer
 * token and never logged; errors name the status only.
 */
export interface RerankerOptions {
  /** The full endpoint, e.g. `http://127.0.0.1:8080/v1/rerank`. */
  url: string;
  model: string | null;
  apiKey: string | null;
  timeoutMs: number;
  /** Pause after a failure before the endpoint is tried again. */
  retryAfterMs: number;
}

/** Characters sent per candidate (cross-encoders read ~512 tokens) and candidates per call. */
export const RERANK_MAX_CHARS = 4000;
export const RERANK_MAX_CANDIDATES = 200;
/** Bytes of an answer read at most (200 results are a few kB). */
const MAX_ANSWER_BYTES = 1 << 20;

export interface Reranker {
  /** Why it does not run (off, no URL), or null. */
  readonly unavailable: string | null;
  /** Scores of `candidates` for `query`, index for index (higher = more relevant; null = not scored), or null: keep the order you have. */
  rerank(query: string, candidates: readonly string[]): Promise<Array<number | null> | null>;
  /** The last failure, for status pages (no secret in it). */
  readonly lastError: string | null;
}

/** Candidate indices by descending score; candidates without a score keep their order after the scored ones. */
export function rerankedOrder(scores: ReadonlyArray<number | null>): number[] {
  const idx = scores.map((_, i) => i);
  const scored = idx.filter((i) => scores[i] !== null).sort((a, b) => scores[b]! - scores[a]! || a - b);
  return [...scored, ...idx.filter((i) => scores[i] === null)];
}

export class RemoteReranker implements Reranker {
  readonly unavailable = null;
  lastError: string | null = null;
  private pausedUntil = -Infinity;

  constructor(private readonly opts: RerankerOptions) {}

  async rerank(query: string, candidates: readonly string[]): Promise<Array<number | null> | null> {
    if (candidates.length === 0) return [];
    if (performance.now() < this.pausedUntil) return null;
    const docs = candidates.slice(0, RERANK_MAX_CANDIDATES).map((c) => c.slice(0, RERANK_MAX_CHARS));
    try {
      const scores = await this.call(query.slice(0, RERANK_MAX_CHARS), docs);
      this.lastError = null;
      return [...scores, ...new Array<null>(candidates.length - docs.length).fill(null)];
    } catch (e) {
      this.lastError = (e as Error).message;
      this.pausedUntil = performance.now() + this.opts.retryAfterMs;
      return null;
    }
  }

  private async call(query: string, documents: string[]): Promise<Array<number | null>> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    const body: Record<string, unknown> = { query, documents, top_n: documents.length, return_documents: false };
    if (this.opts.model) body.model = this.opts.model;
    const signal = AbortSignal.timeout(this.opts.timeoutMs);
    let res: Response;
    try {
      await assertOutboundUrl(this.opts.url);
      res = await fetch(this.opts.url, { method: 'POST', headers, body: JSON.stringify(body), redirect: 'manual', signal });
    } catch (e) {
      throw new Error(`re-ranker unreachable: ${(e as Error).name === 'TimeoutError' ? `no answer in ${this.opts.timeoutMs} ms` : (e as Error).message}`, { cause: e });
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new Error(`re-ranker answered HTTP ${res.status}${res.status >= 300 && res.status < 400 ? ' (a redirect, not followed)' : ''}`);
    }
    const json = await readJson(res, signal, this.opts.timeoutMs);
    const results = (json as { results?: unknown } | null)?.results;
    if (!Array.isArray(results)) throw new Error('re-ranker answered without a results list');
    const scores = new Array<number | null>(documents.length).fill(null);
    for (const r of results as Array<{ index?: unknown; relevance_score?: unknown }>) {
      const { index, relevance_score: score } = r ?? {};
      if (typeof index !== 'number' || !Number.isInteger(index) || index < 0 || index >= documents.length || typeof score !== 'number' || !Number.isFinite(score) || scores[index] !== null) {
        throw new Error('re-ranker answered a malformed result (index out of range, repeated, or a non-numeric relevance_score)');
      }
      scores[index] = score;
    }
    return scores;
  }
}

/** The answer's JSON, read to at most MAX_ANSWER_BYTES within the timeout. */
async function readJson(res: Response, signal: AbortSignal, timeoutMs: number): Promise<unknown> {
  const reader = res.body?.getReader();
  if (!reader) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  const abort = () => void reader.cancel().catch(() => undefined);
  signal.addEventListener('abort', abort, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (signal.aborted) throw new Error(`re-ranker unreachable: no answer in ${timeoutMs} ms`);
      if (done) break;
      size += value.byteLength;
      if (size > MAX_ANSWER_BYTES) {
        abort();
        throw new Error('re-ranker answered more than 1 MB');
      }
      chunks.push(value);
    }
  } finally {
    signal.removeEventListener('abort', abort);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new Error('re-ranker answered something that is not JSON');
  }
}

/** The re-ranker when none is configured or it is switched off: every call keeps the caller's order. */
export class NoReranker implements Reranker {
  readonly lastError = null;
  constructor(readonly unavailable: string) {}
  rerank(): Promise<null> {
    return Promise.resolve(null);
  }
}

/**
 * The re-ranker the environment asks for:
 *   MEMSTORE_RERANK_URL         the endpoint (http or https), e.g. http://127.0.0.1:8080/v1/rerank; unset = none
 *   MEMSTORE_RERANK=off         off switch (keeps the URL set; also `0`, `false`)
 *   MEMSTORE_RERANK_MODEL       the `model` field (omitted when unset: single-model servers)
 *   MEMSTORE_RERANK_API_KEY     sent as `Authorization: Bearer …`
 *   MEMSTORE_RERANK_TIMEOUT_MS  per call, default 2000 (50–60000)
 * Throws an Error naming the variable when a value is invalid (the service refuses to start).
 */
export function rerankerFromEnv(env: NodeJS.ProcessEnv): Reranker {
  const url = env.MEMSTORE_RERANK_URL?.trim();
  if (!url) return new NoReranker('no re-ranker configured (MEMSTORE_RERANK_URL)');
  if (/^(off|0|false|no)$/i.test(env.MEMSTORE_RERANK?.trim() ?? '')) return new NoReranker('re-ranker switched off (MEMSTORE_RERANK=off)');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('MEMSTORE_RERANK_URL must be an http(s) URL such as http://127.0.0.1:8080/v1/rerank');
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('MEMSTORE_RERANK_URL must be an http(s) URL such as http://127.0.0.1:8080/v1/rerank');
  if (parsed.username || parsed.password) throw new Error('MEMSTORE_RERANK_URL must not carry credentials: use MEMSTORE_RERANK_API_KEY');
  if (isForbiddenHost(parsed.hostname)) throw new Error(`MEMSTORE_RERANK_URL ${FORBIDDEN_HOST}`);
  const rawTimeout = env.MEMSTORE_RERANK_TIMEOUT_MS?.trim();
  const timeoutMs = rawTimeout ? Number(rawTimeout) : 2000;
  if (!Number.isInteger(timeoutMs) || timeoutMs < 50 || timeoutMs > 60_000) throw new Error('MEMSTORE_RERANK_TIMEOUT_MS must be an integer from 50 to 60000');
  return new RemoteReranker({ url: parsed.toString(), model: env.MEMSTORE_RERANK_MODEL?.trim() || null, apiKey: env.MEMSTORE_RERANK_API_KEY?.trim() || null, timeoutMs, retryAfterMs: 30_000 });
}
