import { Injectable, Logger, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { Subscription } from 'rxjs';
import { BackendsService } from '../backends/backends.service';
import type { DocumentDatabase } from '../backends/ports/document-database.port';
import { EmbeddingQueue } from '../backends/ports/embedding-queue.port';
import type { EmbeddingJob, MemoryFilter, SimilarHit } from '../backends/ports/memory.model';
import { AppConfig } from '../config/app-config';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { parseCosineScale } from '../config/setting-rules';
import { memoryEmbeddingText } from '../../libs/search-query/fusion';
import { CosineScale, EmbeddingProvider } from './embedding-provider.port';
import { HintBudget } from './hint-budget';
import { embeddingChoice, LocalEmbeddingProvider, noLocalModel } from './local-embedding.provider';
import { NoneEmbeddingProvider } from './none-embedding.provider';
import { OpenAiEmbeddingProvider } from './openai-embedding.provider';
import { MetricsService } from '../observability/metrics.service';

/** Jobs taken per round, and how long a taken job is ours before another worker may take it. */
const BATCH = 8;
const LEASE_MS = 120_000;
/** Wait between rounds when the queue is empty (a write wakes the worker at once). */
const IDLE_MS = 1_000;
/** Retry backoff: 5 s, doubling, at most 10 min. */
const BACKOFF_BASE_MS = 5_000;
const BACKOFF_MAX_MS = 600_000;
/** A search waits this long for its query's vector, then runs keyword-only (a slow or stuck provider never stalls search). */
const QUERY_EMBED_TIMEOUT_MS = 3_000;
/** Query vectors kept (agents repeat searches). */
const QUERY_CACHE = 256;
/**
 * Writes first: while writes stream in (one in the last WRITE_QUIET_MS), the queue waits for a
 * pause, for at most MAX_WRITE_DEFER_MS of continuous writes; then it embeds alongside them.
 */
const WRITE_QUIET_MS = 250;
const MAX_WRITE_DEFER_MS = 30_000;
/** Memory vectors just computed (by a hint or the queue), kept so the other one does not embed the same text again (~1.5 KB each). */
const HINT_VECTORS = 4096;

export interface EmbeddingStatus {
  provider: string;
  model: string | null;
  dimensions: number | null;
  /** Memories waiting for a vector of the current model (tooling waits for 0). */
  pending: number | null;
  embedded: number | null;
  failing: number | null;
  last_error: string | null;
  /** keyword-only (no model), ready (every memory embedded), embedding (catching up) or re-embedding (after a model change). */
  state: 'keyword-only' | 'ready' | 'embedding' | 're-embedding';
  /** Share of memories with a vector of the current model, 0..1 (null when keyword-only). */
  progress: number | null;
  /** Why search is keyword-only, when it is. */
  reason: string | null;
}

/**
 * The embedding provider in effect (settings: embedding_provider and friends; default `local`
 * when its model files are present, else keyword-only) and the background worker that drains
 * the durable embedding queue of the active document database, off the request path.
 */
@Injectable()
export class EmbeddingsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Embeddings');
  private current!: EmbeddingProvider;
  private sub?: Subscription;
  private stopped = false;
  private wakeUp: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  /** The database and key whose vector space was last made current. */
  private spaceOf: { db: DocumentDatabase; key: string } | null = null;
  private reembedding = false;
  private switching: Promise<void> | null = null;
  private readonly owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  /** A serving process (warmUp): every provider made current is loaded at once, not on its first search. */
  private warm = false;
  private readonly queryCache = new Map<string, Float32Array>();
  /** Vectors of memory texts just computed (key: vector space + text), by a hint or the queue: the other one reuses them. */
  private readonly hintVectors = new Map<string, Float32Array>();
  /** Memory texts being embedded now (hint or queue), so the other waits for the same vector instead of embedding it again. */
  private readonly inFlight = new Map<string, Promise<Float32Array>>();
  /** Creates answered without hints because the model was busy with a request or the hint budget was spent (diagnostics, tests). */
  hintsSkipped = 0;
  /** Writes first: the share of the provider's time hints may take (hint-budget.ts). */
  private readonly hintBudget = new HintBudget();
  /** The last write, and when the burst of writes it belongs to began (writesFirst). */
  private lastWriteAt = 0;
  private burstSince = 0;

  constructor(
    private readonly settings: SettingsService,
    private readonly cfg: AppConfig,
    private readonly backends: BackendsService,
    private readonly index: EmbeddingQueue,
    @Optional() private readonly metrics?: MetricsService, // absent in the command-line tool
  ) {}

  get provider(): EmbeddingProvider {
    return this.current;
  }

  onModuleInit(): void {
    this.metrics?.gauge('memstore_embedding_queue_depth', 'Memories waiting for an embedding of the current model', async (set) => {
      const pending = (await this.status().catch(() => null))?.pending;
      if (typeof pending === 'number') set(pending);
    });
    this.current = this.build(this.settings.current());
    this.sub = this.settings.changes.subscribe((s) => {
      const next = this.build(s);
      if (next.key === this.current.key && next.provider === this.current.provider) {
        // The same vector space: nothing to re-embed. A remote provider still takes its new URL,
        // key or cosine scale (a rotated key must not wait for a restart); the local model keeps
        // its loaded threads (its files and options do not change while the service runs).
        const unused = next.provider === 'openai' ? this.current : next;
        if (unused !== next) this.current = next;
        void unused.close().catch(() => undefined);
        return;
      }
      const prev = this.current;
      this.current = next;
      this.queryCache.clear();
      this.hintVectors.clear();
      this.logger.log(`Embedding provider is now ${describe(next)}`);
      void prev.close().catch(() => undefined);
      if (this.warm) this.load(next);
      this.wake();
    });
    this.logger.log(`Embedding provider: ${describe(this.current)}`);
    if (this.cfg.embeddingWorker) this.loop = this.run();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    this.sub?.unsubscribe();
    this.wake();
    await this.loop?.catch(() => undefined);
    await this.current?.close().catch(() => undefined);
  }

  /**
   * The server, once it listens: loads the current provider now (the local model's threads, each
   * run once: ~0.3 s of CPU a thread), and each later one when it becomes current, so that no
   * search waits for a load. Tests and the command line load a model on first use only.
   */
  warmUp(): void {
    this.warm = true;
    this.load(this.current);
  }

  private load(p: EmbeddingProvider): void {
    if (p.key === null) return;
    p.load().catch((e: Error) => this.logger.warn(`The embedding model did not load at start (${e.message}); searches will try again`));
  }

  /** A memory was written: embed it soon (after the burst of writes it is part of, if any: writesFirst). */
  written(): void {
    const now = Date.now();
    if (now - this.lastWriteAt >= WRITE_QUIET_MS) this.burstSince = now;
    this.lastWriteAt = now;
    this.wake();
  }

  /** Wakes the worker now. */
  wake(): void {
    const w = this.wakeUp;
    this.wakeUp = null;
    w?.();
  }

  /** The vector of a search query, or null when search is keyword-only (or the provider fails now). */
  async queryVector(text: string): Promise<{ vector: Float32Array; key: string; scale: CosineScale | null } | null> {
    const p = this.current;
    const key = p.key;
    if (key === null || text.trim() === '') return null;
    const scale = p.cosineScale;
    const hit = this.queryCache.get(text);
    if (hit) return { vector: hit, key, scale };
    try {
      let timer: NodeJS.Timeout | undefined;
      const vector = await Promise.race([
        p.embed(text, 'query'),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no vector within ${QUERY_EMBED_TIMEOUT_MS / 1000} s`)), QUERY_EMBED_TIMEOUT_MS);
        }),
      ]).finally(() => clearTimeout(timer));
      if (this.queryCache.size >= QUERY_CACHE) this.queryCache.delete(this.queryCache.keys().next().value as string);
      this.queryCache.set(text, vector);
      return { vector, key, scale };
    } catch (e) {
      this.logger.warn(`Query embedding failed (${(e as Error).message}); searching by keywords only`);
      return null;
    }
  }

  /**
   * Memories that look like near-copies of a new one (duplicate hints; README "Hybrid search").
   * Embeds the memory's own text (memoryEmbeddingText without session context) and keeps the
   * vector for the queue, which reuses it when its job text is the same (a memory with no previous
   * memory in its session), so such a memory is embedded once. A create never waits behind another request's
   * embedding: when the model is busy with one (another create's hint, a search's query), the
   * hints are skipped (`[]`) and the queue embeds the memory as usual; so are they when hints have
   * taken their share of the provider's time (HintBudget: a burst of creates is not slowed down by the model).
   */
  async similar(title: string | null, content: string, filter: MemoryFilter, excludeId: string): Promise<SimilarHit[]> {
    const p = this.current;
    const key = p.key;
    if (key === null || !this.cfg.duplicateHints) return [];
    const reserved = p.busyWithUrgent() ? null : this.hintBudget.take();
    if (reserved === null) {
      this.hintsSkipped++;
      return [];
    }
    try {
      // The queue's text when the memory has no session context yet (else the queue embeds again).
      const text = memoryEmbeddingText(title, content);
      // The budget counts embedding time, not the model's load on first use: a 2 s load on a busy
      // machine would overdraw the bucket for ~15 s, and a just-started service would give no hints.
      await p.load();
      const started = Date.now();
      const v = await this.embedMemory(p, key, text, true).finally(() => this.hintBudget.settle(reserved, Date.now() - started));
      const hits = await this.index.similar(v, key, DUPLICATE_HINTS + 1, filter);
      return hits.filter((h) => h.id !== excludeId && h.score >= (p.duplicateThreshold ?? DUPLICATE_THRESHOLD)).slice(0, DUPLICATE_HINTS);
    } catch (e) {
      this.logger.warn(`Duplicate hints skipped: ${(e as Error).message}`);
      return [];
    }
  }

  /** A memory's text embedded once, whether its hint or the queue asks first, or both at once. */
  private async embedMemory(p: EmbeddingProvider, key: string, text: string, urgent: boolean): Promise<Float32Array> {
    const k = `${key}\u0000${text}`;
    const known = this.hintVectors.get(k);
    if (known) return known;
    const running = this.inFlight.get(k);
    if (running) return running;
    const started = p.embed(text, 'document', urgent).finally(() => this.inFlight.delete(k));
    this.inFlight.set(k, started);
    const v = await started;
    if (this.current === p) {
      if (this.hintVectors.size >= HINT_VECTORS) this.hintVectors.delete(this.hintVectors.keys().next().value as string);
      this.hintVectors.set(k, v);
    }
    return v;
  }

  async status(): Promise<EmbeddingStatus> {
    const p = this.current;
    const key = p.key;
    const base = { provider: p.provider, model: p.model, dimensions: p.dimensions };
    let prog: Awaited<ReturnType<EmbeddingQueue['embeddingProgress']>> | null;
    try {
      // A model just chosen: queue the re-embedding now, so `pending` counts it from the start.
      if (key !== null && this.backends.docdb) await this.ensureSpace(this.backends.docdb, key);
      prog = await this.index.embeddingProgress(key);
    } catch {
      prog = null;
    }
    if (key === null) {
      return { ...base, pending: prog?.pending ?? null, embedded: 0, failing: 0, last_error: null, state: 'keyword-only', progress: null, reason: p.unavailable ?? 'no embedding model' };
    }
    const pending = prog?.pending ?? null;
    const embedded = prog?.embedded ?? null;
    const total = (pending ?? 0) + (embedded ?? 0);
    if (pending === 0) this.reembedding = false;
    return {
      ...base,
      pending,
      embedded,
      failing: prog?.failing ?? null,
      last_error: prog?.lastError ?? null,
      state: pending === 0 ? 'ready' : this.reembedding ? 're-embedding' : 'embedding',
      progress: total === 0 ? 1 : Math.round(((embedded ?? 0) / total) * 1000) / 1000,
      reason: null,
    };
  }

  /** Runs one round of the worker now (tests, the CLI): returns the jobs it completed or failed. */
  async drainOnce(): Promise<number> {
    return this.round();
  }

  private build(s: ResolvedSettings): EmbeddingProvider {
    const choice = embeddingChoice(s, this.cfg.embeddingModelDir);
    if (choice === 'none') {
      return new NoneEmbeddingProvider(s.embedding_provider === 'none' ? 'the embedding provider is set to none' : noLocalModel(this.cfg.embeddingModelDir));
    }
    if (choice === 'openai') {
      if (!s.embedding_url || !s.embedding_model) return new NoneEmbeddingProvider('the openai provider needs embedding_url and embedding_model');
      return new OpenAiEmbeddingProvider({
        url: s.embedding_url,
        apiKey: s.embedding_api_key,
        model: s.embedding_model,
        dimensions: s.embedding_dimensions ? Number(s.embedding_dimensions) : null,
        cosineScale: s.embedding_cosine_scale ? parseCosineScale(s.embedding_cosine_scale) : null,
      });
    }
    const local = new LocalEmbeddingProvider(this.cfg.embeddingModelDir, { threads: this.cfg.embeddingThreads, maxTokens: this.cfg.embeddingMaxTokens });
    return local.unavailable ? new NoneEmbeddingProvider(local.unavailable) : local;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      await this.writesFirst();
      let worked = 0;
      try {
        worked = await this.round();
      } catch (e) {
        this.logger.warn(`Embedding round failed: ${(e as Error).message}`);
      }
      if (worked === 0 && !this.stopped) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, IDLE_MS);
          t.unref();
          this.wakeUp = () => {
            clearTimeout(t);
            resolve();
          };
        });
      }
    }
  }

  /** Waits while writes stream in (WRITE_QUIET_MS, MAX_WRITE_DEFER_MS): each create then costs what it did without embeddings. */
  private async writesFirst(): Promise<void> {
    for (;;) {
      const now = Date.now();
      const quietIn = this.lastWriteAt + WRITE_QUIET_MS - now;
      if (this.stopped || quietIn <= 0 || now - this.burstSince >= MAX_WRITE_DEFER_MS) return;
      await new Promise<void>((resolve) => setTimeout(resolve, quietIn).unref());
    }
  }

  private async round(): Promise<number> {
    const p = this.current;
    const key = p.key;
    const db = this.backends.docdb;
    if (key === null || !db) return 0;
    await this.ensureSpace(db, key);
    const jobs = await db.embeddings.claimEmbeddingJobs(this.owner, BATCH, LEASE_MS);
    // As many jobs at once as the provider computes at once (the local model: one per thread).
    let next = 0;
    const lane = async (): Promise<void> => {
      while (next < jobs.length && !this.stopped && this.current === p) await this.work(db, p, key, jobs[next++]);
    };
    await Promise.all(Array.from({ length: Math.max(1, p.parallelism) }, lane));
    return jobs.length;
  }

  /** Makes `key` the vector space of `db` (queues every memory again after a model change). */
  private async ensureSpace(db: DocumentDatabase, key: string): Promise<void> {
    // One switch at a time: a status read that overlapped the re-queueing of a model change saw
    // pending = 0 (before the queue filled) and cleared the re-embedding state.
    while (this.switching) await this.switching;
    if (this.spaceOf?.db === db && this.spaceOf.key === key) return;
    this.switching = (async () => {
      const changed = await db.embeddings.useVectorSpace(key);
      if (changed) {
        this.reembedding = true;
        this.logger.log(`Vector space is now ${key}: re-embedding every memory in the background`);
      }
      this.spaceOf = { db, key };
    })().finally(() => {
      this.switching = null;
    });
    await this.switching;
  }

  private async work(db: DocumentDatabase, p: EmbeddingProvider, key: string, job: EmbeddingJob): Promise<void> {
    let vector: Float32Array;
    try {
      // Embedded already for its duplicate hints (same model, same text): not again.
      vector = await this.embedMemory(p, key, job.text, false);
    } catch (e) {
      const wait = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(job.attempts, 10));
      await db.embeddings.failEmbeddingJob(job, (e as Error).message, new Date(Date.now() + wait)).catch(() => undefined);
      return;
    }
    await db.embeddings.storeVector(job, key, vector);
  }
}

/** Duplicate hints: at most this many, at least this cosine (bge-small: rephrasings of one note score ~0.85–0.95, unrelated notes of one project < 0.8). */
export const DUPLICATE_HINTS = 3;
export const DUPLICATE_THRESHOLD = 0.86;

function describe(p: EmbeddingProvider): string {
  return p.key ? `${p.provider} (${p.model}, ${p.dimensions ?? '?'} dimensions)` : `none — search is keyword-only (${p.unavailable})`;
}
