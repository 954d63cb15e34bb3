import { Logger } from '@nestjs/common';
import type { Worker } from 'node:worker_threads';
import { AppError, BackendName, BackendUnavailableError } from '../../common/errors';
import type { MemoryPage, SearchQuery } from '../ports/memory.model';
import type { VectorHit } from '../vector/vector-index';
import type { SearchDelegate, SqliteMemoryIndexOptions } from './sqlite-memory-index';
import { startWorker, stopWorker } from '../../common/worker-script';

/** What a search worker is started with (sqlite-search-worker.ts). */
export interface SearchWorkerData {
  file: string;
  index: SqliteMemoryIndexOptions;
}

/** An error as it crosses the thread boundary (see revive). */
export interface WorkerError {
  name: string;
  message: string;
  status?: number;
  backend?: string;
  reason?: string;
}

export function serializeError(e: unknown): WorkerError {
  const err = e as Partial<BackendUnavailableError> | null;
  return { name: err?.name ?? 'Error', message: err?.message ?? String(e), status: err?.status, backend: err?.backend, reason: err?.reason };
}

/** The error a search on the main thread would have thrown. */
export function revive(e: WorkerError): Error {
  if (e.name === 'BackendUnavailableError' && e.backend) return new BackendUnavailableError(e.backend as BackendName, e.reason ?? '');
  if (typeof e.status === 'number') {
    const err = new AppError(e.status, e.message);
    err.name = e.name;
    return err;
  }
  const err = new Error(e.message);
  err.name = e.name;
  return err;
}

interface Pending {
  resolve: (result: unknown) => void;
  reject: (e: Error) => void;
}

/** What a worker is asked: a search (a vector search with its hits from the main thread's vector index). */
export interface WorkerRequest {
  query: SearchQuery;
  semantic?: VectorHit[];
}

interface Slot {
  worker: Worker;
  ready: boolean;
  pending: Map<number, Pending>;
}

/** A request waiting for a worker with room (Pool.queue). */
interface Queued extends Pending {
  id: number;
  request: WorkerRequest;
}

/**
 * Requests in flight per worker at most; the others wait in the pool's one queue and go to the
 * first worker with room. More than one hides the message's round trip, and a worker that has the
 * next search at hand when it answers goes on without sleeping and being woken: on 2 cores, four
 * served 1–16 % more searches a second than two, at less CPU each in ten of twelve pairs of
 * processes and p99 within the same spread, in keyword, hybrid and mixed loads (bench/README,
 * "Four searches in flight per worker"). Unbounded, a search waits behind its worker's backlog
 * while the other is free.
 */
export const IN_FLIGHT = 4;

/** Restarts of a worker that stopped unexpectedly, at most this often. */
const RESTART_DELAY_MS = 1000;
const CLOSE_TIMEOUT_MS = 2000;

/**
 * Searches on worker threads, each with its own connection to the SQLite file (WAL: readers do
 * not block the writer nor each other), so searches use the other cores while the main thread
 * serves HTTP and does every write. A search reads one snapshot that includes every write
 * committed before it was asked for (writes commit synchronously on the main thread before their
 * response). Each worker holds at most IN_FLIGHT searches; the others wait in one queue. The
 * workers start with the first search (a process that never searches, like the reindex command,
 * starts none); until one is ready, or when none is left, `search` returns null and the index
 * searches on the main thread: the results are the same either way.
 */
export class SqliteSearchPool implements SearchDelegate {
  private readonly logger = new Logger('SqliteSearchPool');
  private readonly slots = new Set<Slot>();
  /** Requests waiting for a worker with room, oldest first. */
  private readonly queue: Queued[] = [];
  private nextId = 1;
  private closed = false;
  private started: Promise<void> | null = null;

  constructor(
    private readonly file: string,
    private readonly size: number,
    private readonly indexOptions: SqliteMemoryIndexOptions = {},
  ) {}

  /**
   * Starts the workers (once); resolves when every one of them is ready or has failed to start.
   * The first search starts them when nobody did.
   */
  start(): Promise<void> {
    this.started ??= Promise.all(Array.from({ length: this.size }, () => this.spawn())).then(() => undefined);
    return this.started;
  }

  /** Workers ready to search. */
  readyCount(): number {
    let n = 0;
    for (const s of this.slots) if (s.ready) n++;
    return n;
  }

  /** Worker threads started and not yet exited. */
  workerCount(): number {
    return this.slots.size;
  }

  search(query: SearchQuery, semantic: VectorHit[] | null = null): Promise<MemoryPage> | null {
    return this.send<MemoryPage>(semantic ? { query, semantic } : { query });
  }

  private send<T>(request: WorkerRequest): Promise<T> | null {
    if (this.closed) return null;
    if (!this.started) void this.start();
    if (this.readyCount() === 0) return null;
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ id, request, resolve: resolve as (r: unknown) => void, reject });
      this.dispatch();
    });
  }

  /** Hands waiting requests, oldest first, to the ready workers with room, the least busy first. */
  private dispatch(limit = IN_FLIGHT): void {
    while (this.queue.length > 0) {
      let best: Slot | null = null;
      for (const s of this.slots) if (s.ready && s.pending.size < limit && (best === null || s.pending.size < best.pending.size)) best = s;
      if (best === null) return;
      const { id, request, resolve, reject } = this.queue.shift() as Queued;
      // An idle worker does not keep the process alive; one with a request in flight does.
      if (best.pending.size === 0) best.worker.ref();
      best.pending.set(id, { resolve, reject });
      best.worker.postMessage({ id, ...request });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    // The waiting requests go ahead of the workers' close, which answers what they hold first.
    this.dispatch(Infinity);
    this.rejectQueued(new BackendUnavailableError('Document database', 'the embedded database is closed'));
    const slots = [...this.slots];
    this.slots.clear();
    await Promise.all(slots.map((s) => this.stop(s)));
  }

  private spawn(): Promise<void> {
    const data: SearchWorkerData = { file: this.file, index: { ...this.indexOptions, schema: false } };
    const worker = startWorker(__filename, 'sqlite-search-worker', data);
    const slot: Slot = { worker, ready: false, pending: new Map() };
    this.slots.add(slot);
    return new Promise<void>((started) => {
      worker.on('message', (msg: { ready?: true; failed?: string; id?: number; result?: unknown; error?: WorkerError }) => {
        if (msg.ready) {
          worker.unref();
          slot.ready = true;
          started();
          this.dispatch();
        } else if (msg.failed !== undefined) {
          this.logger.warn(`A search worker could not open ${this.file}: ${msg.failed}; searching on the main thread`);
          this.slots.delete(slot);
          started();
        } else if (msg.id !== undefined) {
          const p = slot.pending.get(msg.id);
          if (!p) return;
          slot.pending.delete(msg.id);
          if (slot.pending.size === 0) worker.unref();
          if (msg.error) p.reject(revive(msg.error));
          else p.resolve(msg.result);
          this.dispatch();
        }
      });
      worker.on('error', (e) => this.logger.error(`Search worker error: ${e.message}`));
      worker.on('exit', (code) => {
        const wasReady = slot.ready;
        slot.ready = false;
        const gone = new BackendUnavailableError('Document database', this.closed ? 'the embedded database is closed' : `a search worker stopped (exit code ${code})`);
        for (const p of slot.pending.values()) p.reject(gone);
        slot.pending.clear();
        started();
        if (!this.slots.delete(slot) || this.closed) return;
        // The waiting requests go to the other workers; with none left ready, they fail as the ones in flight did.
        if (this.readyCount() === 0) this.rejectQueued(gone);
        else this.dispatch();
        // An unexpected exit of a worker that was serving: start another (its searches ran on
        // the main thread meanwhile). One that never became ready is not retried.
        if (wasReady) {
          this.logger.warn(`A search worker stopped (exit code ${code}); starting another`);
          setTimeout(() => {
            if (!this.closed) void this.spawn();
          }, RESTART_DELAY_MS).unref();
        }
      });
    });
  }

  private rejectQueued(e: Error): void {
    for (const q of this.queue.splice(0)) q.reject(e);
  }

  private async stop(slot: Slot): Promise<void> {
    slot.ready = false;
    await stopWorker(slot.worker, { close: true }, CLOSE_TIMEOUT_MS);
  }
}
