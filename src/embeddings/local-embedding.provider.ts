import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { ResolvedSettings } from '../config/settings.service';
import { EmbeddingKind, EmbeddingProvider, EmbeddingProviderName, EmbeddingUnavailableError } from './embedding-provider.port';
import { startWorker } from '../common/worker-script';

/** model.json beside the model files (written by scripts/fetch-model.js; an operator's own model dir may carry one). */
interface ModelMeta {
  model?: string;
  dimensions?: number;
  /** 'cls' (bge) or 'mean' (MiniLM). */
  pooling?: 'cls' | 'mean';
  maxTokens?: number;
  queryPrefix?: string;
}

/** The files a model directory must hold. */
export function localModelFiles(dir: string): { onnx: string; tokenizer: string; meta: string } {
  return { onnx: path.join(dir, 'model.onnx'), tokenizer: path.join(dir, 'tokenizer.json'), meta: path.join(dir, 'model.json') };
}

export function hasLocalModel(dir: string): boolean {
  const f = localModelFiles(dir);
  return fs.existsSync(f.onnx) && fs.existsSync(f.tokenizer);
}

/** Why the local model cannot run: its files are not in `dir`. */
export function noLocalModel(dir: string): string {
  return `no local model in ${dir} (run \`npm run fetch-model\`, or set MEMSTORE_EMBEDDING_MODEL_DIR)`;
}

/** The provider the settings pick: the one set, else the local model when its files are in `modelDir`, else none. */
export function embeddingChoice(s: Pick<ResolvedSettings, 'embedding_provider'>, modelDir: string): EmbeddingProviderName {
  return s.embedding_provider ?? (hasLocalModel(modelDir) ? 'local' : 'none');
}

/**
 * The ONNX model in-process (onnxruntime-node, CPU), on a worker thread of its own
 * (local-embedding.worker.ts) so tokenising and pooling stay off the main thread. One intra-op
 * thread (two collapse under load on a small machine) and one text per call (dynamic
 * quantisation makes a vector depend on its batch). Tokens are truncated to `maxTokens` (the
 * tokenizer ignores tokenizer.json's truncation). Pooling: the [CLS] vector (bge) or the mean
 * over tokens (MiniLM), then L2-normalised. Loads on the first embed (~0.2–0.3 s). Urgent texts
 * (a search, a duplicate hint) go before the background worker's memories.
 */
export class LocalEmbeddingProvider extends EmbeddingProvider {
  readonly provider = 'local' as const;
  readonly model: string;
  readonly dimensions: number;
  readonly unavailable: string | null;
  private readonly meta: ModelMeta;
  private worker: Promise<Worker> | null = null;
  private readonly calls = new Map<number, { resolve: (v: Float32Array) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private readonly waiting: { urgent: Array<() => void>; background: Array<() => void> } = { urgent: [], background: [] };
  private busy = false;
  /** Urgent calls running or waiting. */
  private urgentCalls = 0;

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
    this.unavailable = hasLocalModel(dir) ? null : noLocalModel(dir);
  }

  override busyWithUrgent(): boolean {
    return this.urgentCalls > 0;
  }

  override async embed(text: string, kind: EmbeddingKind, urgent = kind === 'query'): Promise<Float32Array> {
    if (urgent) this.urgentCalls++;
    try {
      return await this.embedInTurn(text, kind, urgent);
    } finally {
      if (urgent) this.urgentCalls--;
    }
  }

  private async embedInTurn(text: string, kind: EmbeddingKind, urgent: boolean): Promise<Float32Array> {
    if (this.busy) await new Promise<void>((resolve) => this.waiting[urgent ? 'urgent' : 'background'].push(resolve));
    this.busy = true;
    try {
      const prefix = kind === 'query' ? (this.meta.queryPrefix ?? '') : '';
      return await this.call(prefix + text);
    } finally {
      const next = this.waiting.urgent.shift() ?? this.waiting.background.shift();
      if (next) next();
      else this.busy = false;
    }
  }

  /** Loads the model now, if it is not loaded yet (~200 ms here; embed does it on first use). */
  override async load(): Promise<void> {
    await this.started();
  }

  override async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    const worker = await w?.catch(() => null);
    if (worker) await worker.terminate();
  }

  private started(): Promise<Worker> {
    if (this.unavailable) return Promise.reject(new EmbeddingUnavailableError(this.unavailable));
    // onnxruntime-node 1.30's Linux build starts Microsoft's telemetry client (HTTPS uploads when a CA
    // bundle is readable) unless ORT_DISABLE_TELEMETRY is set in the process environment (a worker's
    // process.env is a copy, so it is set here, before the worker starts; an operator's value wins).
    process.env.ORT_DISABLE_TELEMETRY ??= '1';
    this.worker ??= new Promise<Worker>((resolve, reject) => {
      const files = localModelFiles(this.dir);
      const worker = startWorker(__filename, 'local-embedding.worker', { onnx: files.onnx, tokenizer: files.tokenizer, maxTokens: this.meta.maxTokens ?? 512, pooling: this.meta.pooling ?? 'cls' });
      worker.unref();
      worker.on('message', (msg: { ready?: true; failed?: string; id?: number; vector?: Float32Array; error?: string }) => {
        if (msg.ready) resolve(worker);
        else if (msg.failed !== undefined) reject(new EmbeddingUnavailableError(`the local model could not be loaded: ${msg.failed}`));
        else if (msg.id !== undefined) {
          const c = this.calls.get(msg.id);
          this.calls.delete(msg.id);
          if (this.calls.size === 0) worker.unref();
          if (msg.vector) c?.resolve(Float32Array.from(msg.vector));
          else c?.reject(new EmbeddingUnavailableError(`the local model failed: ${msg.error}`));
        }
      });
      worker.on('exit', (code) => {
        const gone = new EmbeddingUnavailableError(`the local model's thread stopped (exit code ${code})`);
        for (const c of this.calls.values()) c.reject(gone);
        this.calls.clear();
        this.worker = null;
        reject(gone);
      });
    });
    this.worker.catch(() => {
      this.worker = null;
    });
    return this.worker;
  }

  private async call(text: string): Promise<Float32Array> {
    const worker = await this.started();
    const id = this.nextId++;
    return new Promise<Float32Array>((resolve, reject) => {
      if (this.calls.size === 0) worker.ref();
      this.calls.set(id, { resolve, reject });
      worker.postMessage({ id, text });
    });
  }
}
