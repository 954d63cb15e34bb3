import * as fs from 'node:fs';
import * as path from 'node:path';
import { EmbeddingKind, EmbeddingProvider, EmbeddingUnavailableError, normalize } from './embedding-provider.port';

/** model.json beside the model files (written by scripts/fetch-model.js; an operator's own model dir may carry one). */
interface ModelMeta {
  model?: string;
  dimensions?: number;
  /** 'cls' (bge) or 'mean' (MiniLM). */
  pooling?: 'cls' | 'mean';
  maxTokens?: number;
  queryPrefix?: string;
}

type OrtModule = typeof import('onnxruntime-node');
type Session = import('onnxruntime-node').InferenceSession;
interface Encoder {
  encode(text: string): { ids: number[] };
}

/** The files a model directory must hold. */
export function localModelFiles(dir: string): { onnx: string; tokenizer: string; meta: string } {
  return { onnx: path.join(dir, 'model.onnx'), tokenizer: path.join(dir, 'tokenizer.json'), meta: path.join(dir, 'model.json') };
}

export function hasLocalModel(dir: string): boolean {
  const f = localModelFiles(dir);
  return fs.existsSync(f.onnx) && fs.existsSync(f.tokenizer);
}

/**
 * The ONNX model in-process (onnxruntime-node, CPU). One intra-op thread (two collapse under load
 * on a small machine) and one text per call (dynamic quantisation makes a vector depend on its
 * batch). Tokens are truncated here (the tokenizer ignores tokenizer.json's truncation): the
 * first `maxTokens - 1` and the final [SEP]. Pooling: the [CLS] vector (bge) or the mean over
 * tokens (MiniLM), then L2-normalised. Loads lazily on the first embed (~0.2–0.3 s).
 */
export class LocalEmbeddingProvider extends EmbeddingProvider {
  readonly provider = 'local' as const;
  readonly model: string;
  readonly dimensions: number;
  readonly unavailable: string | null;
  private readonly meta: ModelMeta;
  private loading: Promise<{ session: Session; tokenizer: Encoder; ort: OrtModule }> | null = null;
  /** One text at a time on one thread; searches go before the background worker's memories. */
  private readonly waiting: { query: Array<() => void>; document: Array<() => void> } = { query: [], document: [] };
  private busy = false;

  constructor(readonly dir: string) {
    super();
    const files = localModelFiles(dir);
    let meta: ModelMeta = {};
    try {
      meta = JSON.parse(fs.readFileSync(files.meta, 'utf8')) as ModelMeta;
    } catch {
      meta = {};
    }
    this.meta = meta;
    this.model = meta.model ?? path.basename(dir);
    this.dimensions = meta.dimensions ?? 384;
    this.unavailable = hasLocalModel(dir) ? null : `no local model in ${dir} (run \`npm run fetch-model\`, or set MEMSTORE_EMBEDDING_MODEL_DIR)`;
  }

  override async embed(text: string, kind: EmbeddingKind, urgent = kind === 'query'): Promise<Float32Array> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting[urgent ? 'query' : 'document'].push(resolve));
    this.busy = true;
    try {
      return await this.embedNow(text, kind);
    } finally {
      const next = this.waiting.query.shift() ?? this.waiting.document.shift();
      if (next) next();
      else this.busy = false;
    }
  }

  /** Loads the model now (tests, warm-up). */
  async load(): Promise<void> {
    await this.loaded();
  }

  override async close(): Promise<void> {
    const l = this.loading;
    this.loading = null;
    if (l) await (await l.catch(() => null))?.session.release();
  }

  private loaded() {
    if (this.unavailable) return Promise.reject(new EmbeddingUnavailableError(this.unavailable));
    this.loading ??= (async () => {
      const ort = (await import('onnxruntime-node')) as OrtModule;
      const { Tokenizer } = (await import('@huggingface/tokenizers')) as unknown as { Tokenizer: new (json: object, cfg: object) => Encoder };
      const files = localModelFiles(this.dir);
      const tokenizer = new Tokenizer(JSON.parse(fs.readFileSync(files.tokenizer, 'utf8')) as object, {});
      const session = await ort.InferenceSession.create(files.onnx, { intraOpNumThreads: 1, interOpNumThreads: 1, executionMode: 'sequential' });
      return { session, tokenizer, ort };
    })();
    this.loading.catch(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async embedNow(text: string, kind: EmbeddingKind): Promise<Float32Array> {
    const { session, tokenizer, ort } = await this.loaded();
    const prefix = kind === 'query' ? (this.meta.queryPrefix ?? '') : '';
    let ids = tokenizer.encode(prefix + text).ids;
    const max = this.meta.maxTokens ?? 512;
    if (ids.length > max) ids = [...ids.slice(0, max - 1), ids[ids.length - 1]];
    const n = ids.length;
    const feeds: Record<string, import('onnxruntime-node').Tensor> = {
      input_ids: new ort.Tensor('int64', BigInt64Array.from(ids, (x) => BigInt(x)), [1, n]),
      attention_mask: new ort.Tensor('int64', new BigInt64Array(n).fill(1n), [1, n]),
    };
    if (session.inputNames.includes('token_type_ids')) feeds.token_type_ids = new ort.Tensor('int64', new BigInt64Array(n), [1, n]);
    const out = await session.run(feeds);
    const hidden = (out.last_hidden_state ?? out[session.outputNames[0]]).data as Float32Array;
    const d = hidden.length / n;
    const v = new Float32Array(d);
    if ((this.meta.pooling ?? 'cls') === 'cls') v.set(hidden.subarray(0, d));
    else {
      for (let t = 0; t < n; t++) for (let i = 0; i < d; i++) v[i] += hidden[t * d + i];
      for (let i = 0; i < d; i++) v[i] /= n;
    }
    return normalize(v);
  }
}
