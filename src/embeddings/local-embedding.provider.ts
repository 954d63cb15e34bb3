import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Worker } from 'node:worker_threads';
import type { ResolvedSettings } from '../config/settings.service';
import { CosineScale, EmbeddingKind, EmbeddingProvider, EmbeddingProviderName, EmbeddingUnavailableError, toCosineScale } from './embedding-provider.port';
import { startWorker } from '../common/worker-script';
import { DEFAULT_EMBEDDING_MAX_TOKENS } from './local-embedding.text';

/** model.json beside the model files (written by scripts/fetch-model.js; an operator's own model dir may carry one). */
interface ModelMeta {
  model?: string;
  dimensions?: number;
  /** 'cls' (bge) or 'mean' (MiniLM). */
  pooling?: 'cls' | 'mean';
  maxTokens?: number;
  queryPrefix?: string;
  /** Prepended to every memory's text (e5: `passage: `). */
  documentPrefix?: string;
  /** Duplicate hints' cosine for this model (decision 0146), when not the service's default. */
  duplicateThreshold?: number;
  /** The model's cosine scale for relevance (decision 0172), when not the service's default (bge-small's). */
  cosineZero?: number;
  cosineOne?: number;
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

/** Model threads by default: two on two cores or more (one session each), one on one core. */
export function defaultEmbeddingThreads(): number {
  return Math.min(2, os.availableParallelism());
}

/** After a request's embedding (a search, a hint), background work keeps to one thread this long. */
const REQUEST_QUIET_MS = 2_000;

/** One model thread: its worker, started on first use. */
interface Lane {
  worker: Promise<Worker> | null;
  calls: Map<number, { resolve: (v: Float32Array) => void; reject: (e: Error) => void }>;
  busy: boolean;
}

/**
 * The ONNX model in-process (onnxruntime-node, CPU), on worker threads of its own
 * (local-embedding.worker.ts) so tokenising and pooling stay off the main thread. `threads`
 * sessions (default: 2 on two cores), each with one intra-op thread and one text per call: two
 * intra-op threads of one session collapse under load on a small machine, and batching changes
 * the vectors (dynamic quantisation scales a whole batch at once: cosine 0.996 against one text
 * per call). Background texts use the second thread only while no request has embedded for 2 s
 * (the service is idle); requests' texts (urgent: a search, a duplicate hint) go first, on any
 * thread. Tokens are truncated to `maxTokens` (the tokenizer ignores tokenizer.json's
 * truncation), keeping the head. Pooling: the [CLS] vector (bge) or the mean over tokens
 * (MiniLM), then L2-normalised. A thread loads the model on its first embed (~0.2–0.3 s).
 */
export class LocalEmbeddingProvider extends EmbeddingProvider {
  readonly provider = 'local' as const;
  readonly model: string;
  readonly dimensions: number;
  readonly unavailable: string | null;
  readonly threads: number;
  readonly maxTokens: number;
  private readonly meta: ModelMeta;
  private readonly lanes: Lane[];
  private nextId = 1;
  private readonly waiting: { urgent: Array<(lane: Lane) => void>; background: Array<(lane: Lane) => void> } = { urgent: [], background: [] };
  /** Urgent calls running or waiting. */
  private urgentCalls = 0;
  /** Background calls running. */
  private backgroundRunning = 0;
  private lastUrgentAt = -Infinity;

  constructor(
    readonly dir: string,
    /** threads: model sessions (default defaultEmbeddingThreads()); maxTokens: read at most this many tokens (default DEFAULT_EMBEDDING_MAX_TOKENS, at most the model's, model.json). */
    opts: { threads?: number; maxTokens?: number } = {},
  ) {
    super();
    const files = localModelFiles(dir);
    let meta: ModelMeta;
    try {
      meta = JSON.parse(fs.readFileSync(files.meta, 'utf8')) as ModelMeta;
    } catch {
      meta = {};
    }
    this.meta = meta;
    this.model = meta.model ?? path.basename(dir);
    this.dimensions = meta.dimensions ?? 384;
    this.unavailable = hasLocalModel(dir) ? null : noLocalModel(dir);
    this.threads = Math.max(1, Math.floor(opts.threads ?? defaultEmbeddingThreads()));
    this.maxTokens = Math.max(2, Math.min(opts.maxTokens ?? DEFAULT_EMBEDDING_MAX_TOKENS, meta.maxTokens ?? 512));
    this.lanes = Array.from({ length: this.threads }, () => ({ worker: null, calls: new Map(), busy: false }));
  }

  /**
   * The vector space also names a truncation shorter than the model's own (`/256t`): vectors read
   * to another length are not the same vectors, so a change of MEMSTORE_EMBEDDING_MAX_TOKENS
   * re-embeds every memory. At the model's limit the key is the one from before the setting existed.
   */
  override get key(): string | null {
    const base = super.key;
    if (base === null || this.maxTokens >= (this.meta.maxTokens ?? 512)) return base;
    const format = base.lastIndexOf('#');
    return `${base.slice(0, format)}/${this.maxTokens}t${base.slice(format)}`;
  }

  override get duplicateThreshold(): number | null {
    const t = this.meta.duplicateThreshold;
    return typeof t === 'number' && t > 0 && t < 1 ? t : null;
  }

  override get cosineScale(): CosineScale | null {
    return toCosineScale(this.meta.cosineZero, this.meta.cosineOne);
  }

  override get parallelism(): number {
    return this.threads;
  }

  override busyWithUrgent(): boolean {
    return this.urgentCalls > 0;
  }

  override async embed(text: string, kind: EmbeddingKind, urgent = kind === 'query'): Promise<Float32Array> {
    if (urgent) this.urgentCalls++;
    try {
      return await this.embedInTurn(text, kind, urgent);
    } finally {
      if (urgent) {
        this.urgentCalls--;
        this.lastUrgentAt = performance.now();
      }
    }
  }

  private async embedInTurn(text: string, kind: EmbeddingKind, urgent: boolean): Promise<Float32Array> {
    const lane = await this.acquire(urgent);
    try {
      const prefix = (kind === 'query' ? this.meta.queryPrefix : this.meta.documentPrefix) ?? '';
      return await this.call(lane, prefix + text);
    } finally {
      this.release(lane, urgent);
    }
  }

  /** Background calls may run on this many threads now: all of them while no request embeds. */
  private backgroundLimit(): number {
    return this.urgentCalls > 0 || performance.now() - this.lastUrgentAt < REQUEST_QUIET_MS ? 1 : this.threads;
  }

  private acquire(urgent: boolean): Promise<Lane> {
    const free = this.lanes.find((l) => !l.busy);
    const fair = urgent ? this.waiting.urgent.length === 0 : this.waiting.urgent.length === 0 && this.waiting.background.length === 0 && this.backgroundRunning < this.backgroundLimit();
    if (free && fair) return Promise.resolve(this.take(free, urgent));
    return new Promise<Lane>((resolve) => this.waiting[urgent ? 'urgent' : 'background'].push(resolve));
  }

  private take(lane: Lane, urgent: boolean): Lane {
    lane.busy = true;
    if (!urgent) this.backgroundRunning++;
    return lane;
  }

  /** Frees `lane` and hands free threads to the waiting calls: requests first. */
  private release(lane: Lane, urgent: boolean): void {
    lane.busy = false;
    if (!urgent) this.backgroundRunning--;
    for (const free of this.lanes) {
      if (free.busy) continue;
      const next = this.waiting.urgent.shift();
      if (next) next(this.take(free, true));
      else if (this.waiting.background.length > 0 && this.backgroundRunning < this.backgroundLimit()) this.waiting.background.shift()!(this.take(free, false));
    }
  }

  /**
   * Loads the model on every thread now and runs it once, if that is not done yet (~0.3 s each
   * here; embed does it on first use): a duplicate hint's embedding, timed against its budget,
   * never pays for a load, nor a served process's first searches (EmbeddingsService.warmUp).
   */
  override async load(): Promise<void> {
    await Promise.all(this.lanes.map((lane) => this.started(lane)));
  }

  override async close(): Promise<void> {
    await Promise.all(
      this.lanes.map(async (lane) => {
        const w = lane.worker;
        lane.worker = null;
        const worker = await w?.catch(() => null);
        if (worker) await worker.terminate();
      }),
    );
  }

  private started(lane: Lane): Promise<Worker> {
    if (this.unavailable) return Promise.reject(new EmbeddingUnavailableError(this.unavailable));
    // onnxruntime-node 1.30's Linux build starts Microsoft's telemetry client (HTTPS uploads when a CA
    // bundle is readable) unless ORT_DISABLE_TELEMETRY is set in the process environment (a worker's
    // process.env is a copy, so it is set here, before the worker starts; an operator's value wins).
    process.env.ORT_DISABLE_TELEMETRY ??= '1';
    if (lane.worker) return lane.worker;
    const starting = new Promise<Worker>((resolve, reject) => {
      const files = localModelFiles(this.dir);
      const worker = startWorker(__filename, 'local-embedding.worker', { onnx: files.onnx, tokenizer: files.tokenizer, maxTokens: this.maxTokens, pooling: this.meta.pooling ?? 'cls' });
      worker.unref();
      worker.on('message', (msg: { ready?: true; failed?: string; id?: number; vector?: Float32Array; error?: string }) => {
        if (msg.ready) resolve(worker);
        else if (msg.failed !== undefined) reject(new EmbeddingUnavailableError(`the local model could not be loaded: ${msg.failed}`));
        else if (msg.id !== undefined) {
          const c = lane.calls.get(msg.id);
          lane.calls.delete(msg.id);
          if (lane.calls.size === 0) worker.unref();
          if (msg.vector) c?.resolve(Float32Array.from(msg.vector));
          else c?.reject(new EmbeddingUnavailableError(`the local model failed: ${msg.error}`));
        }
      });
      worker.on('exit', (code) => {
        const gone = new EmbeddingUnavailableError(`the local model's thread stopped (exit code ${code})`);
        for (const c of lane.calls.values()) c.reject(gone);
        lane.calls.clear();
        if (lane.worker === starting) lane.worker = null;
        reject(gone);
      });
    });
    lane.worker = starting;
    starting.catch(() => {
      if (lane.worker === starting) lane.worker = null;
    });
    return starting;
  }

  private async call(lane: Lane, text: string): Promise<Float32Array> {
    const worker = await this.started(lane);
    const id = this.nextId++;
    return new Promise<Float32Array>((resolve, reject) => {
      if (lane.calls.size === 0) worker.ref();
      lane.calls.set(id, { resolve, reject });
      worker.postMessage({ id, text });
    });
  }
}
