import { assertOutboundUrl } from '../common/outbound-address';
import { CosineScale, EmbeddingKind, EmbeddingProvider, EmbeddingUnavailableError, normalize } from './embedding-provider.port';

export interface OpenAiEmbeddingOptions {
  /** Base URL: `https://api.openai.com/v1`, `http://127.0.0.1:11434/v1` (Ollama)... `/embeddings` is appended. */
  url: string;
  apiKey: string | null;
  model: string;
  /** Asked of models that can shorten their vectors (OpenAI text-embedding-3-*); null = the model's own. */
  dimensions: number | null;
  /** The model's cosine scale for relevance (setting embedding_cosine_scale); null: the service's default. */
  cosineScale?: CosineScale | null;
  timeoutMs?: number;
}

/** Characters sent per text (a memory is at most 1 MB; embedding models read a few thousand tokens). */
const MAX_CHARS = 8000;

/**
 * Any OpenAI-compatible `POST {url}/embeddings` (OpenAI, Ollama, vLLM, LM Studio). The key is
 * sent as a Bearer token and never logged or returned; errors name the status only.
 */
export class OpenAiEmbeddingProvider extends EmbeddingProvider {
  readonly provider = 'openai' as const;
  readonly model: string;
  readonly unavailable: string | null = null;
  private dims: number | null;

  constructor(private readonly opts: OpenAiEmbeddingOptions) {
    super();
    this.model = opts.model;
    this.dims = opts.dimensions;
  }

  get dimensions(): number | null {
    return this.dims;
  }

  override get cosineScale(): CosineScale | null {
    return this.opts.cosineScale ?? null;
  }

  override async embed(text: string, _kind?: EmbeddingKind): Promise<Float32Array> {
    const body: Record<string, unknown> = { model: this.opts.model, input: text.slice(0, MAX_CHARS), encoding_format: 'float' };
    if (this.opts.dimensions !== null) body.dimensions = this.opts.dimensions;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.opts.apiKey) headers.authorization = `Bearer ${this.opts.apiKey}`;
    const url = `${this.opts.url.replace(/\/+$/, '')}/embeddings`;
    let res: Response;
    try {
      // Never a link-local or metadata address, also when a name resolves to one (issue 46).
      await assertOutboundUrl(url);
      res = await fetch(url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        // A redirect is not followed: following it would re-POST memory content (and the key) to another host (issue 46).
        redirect: 'manual',
        signal: AbortSignal.timeout(this.opts.timeoutMs ?? 30_000),
      });
    } catch (e) {
      throw new EmbeddingUnavailableError(`embedding endpoint unreachable: ${(e as Error).message}`);
    }
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new EmbeddingUnavailableError(`embedding endpoint answered a redirect (HTTP ${res.status}), which is not followed; set the embedding URL to the final address`);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new EmbeddingUnavailableError(`embedding endpoint answered HTTP ${res.status}`);
    }
    const json = (await res.json().catch(() => null)) as { data?: Array<{ embedding?: unknown }> } | null;
    const emb = json?.data?.[0]?.embedding;
    if (!Array.isArray(emb) || emb.length === 0 || !emb.every((x) => typeof x === 'number' && Number.isFinite(x))) {
      throw new EmbeddingUnavailableError('embedding endpoint answered without a numeric data[0].embedding');
    }
    if (this.dims !== null && emb.length !== this.dims) {
      throw new EmbeddingUnavailableError(`embedding endpoint answered ${emb.length} dimensions, ${this.dims} expected`);
    }
    this.dims = emb.length;
    return normalize(Float32Array.from(emb as number[]));
  }
}
