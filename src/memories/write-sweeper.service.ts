import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { ObjectStore } from '../backends/ports/object-store.port';
import { WriteIntentRepository } from '../backends/ports/write-intent.repository';
import { AppConfig } from '../config/app-config';
import { objectKeyOf } from './memory-id';

const BATCH = 500;

export interface SweepReport {
  /** Objects of unacknowledged writes, deleted. */
  removed: string[];
  /** Intents whose object the index does reference (the process died after the index write): only the intent went. */
  settled: string[];
  /** Temporary files of the object store removed. */
  temporary: number;
}

/**
 * The start-up sweep (issue 9 point 5): objects of writes that were never acknowledged (a write
 * intent older than the grace period whose object the index does not reference) are deleted,
 * and the object store's temporary files from a crash removed. Runs at start and then every
 * half grace period, on whichever backends are active.
 */
@Injectable()
export class WriteSweeper implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('WriteSweeper');
  private timer?: NodeJS.Timeout;
  /** Sweeps and reindexes run one at a time (a sweep must not judge "referenced" against a half-built index). */
  private lock: Promise<unknown> = Promise.resolve();
  readonly graceMs: number;

  constructor(
    private readonly index: MemoryIndex,
    private readonly store: ObjectStore,
    private readonly intents: WriteIntentRepository,
    cfg: AppConfig,
  ) {
    // A write still pending after this long was never acknowledged (no request takes that long).
    this.graceMs = cfg.writeGraceSeconds * 1000;
  }

  onApplicationBootstrap(): void {
    const run = () =>
      this.sweep().catch((e: Error) => this.logger.warn(`Sweep of unacknowledged writes failed (next attempt later): ${e.message}`));
    void run();
    this.timer = setInterval(run, Math.max(10_000, this.graceMs / 2));
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Runs `fn` when no sweep (or other exclusive task, e.g. a reindex) is running. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => undefined);
    return run;
  }

  sweep(graceMs = this.graceMs): Promise<SweepReport> {
    return this.exclusive(() => this.sweepNow(graceMs));
  }

  private async sweepNow(graceMs: number): Promise<SweepReport> {
    const report: SweepReport = { removed: [], settled: [], temporary: 0 };
    const cutoff = new Date(Date.now() - graceMs);
    for (;;) {
      const batch = await this.intents.olderThan(cutoff, BATCH);
      for (const intent of batch) {
        if (await this.referenced(intent.memoryId, intent.objectKey)) {
          report.settled.push(intent.objectKey);
        } else {
          await this.store.delete(intent.objectKey);
          report.removed.push(intent.objectKey);
        }
        await this.intents.remove(intent.objectKey);
      }
      if (batch.length < BATCH) break;
    }
    report.temporary = await this.store.sweepTemporary(graceMs);
    if (report.removed.length + report.settled.length + report.temporary > 0) {
      this.logger.log(
        `Removed ${report.removed.length} object(s) of unacknowledged writes${report.removed.length ? ` (${report.removed.join(', ')})` : ''}, ` +
          `${report.temporary} temporary file(s); ${report.settled.length} acknowledged write(s) had a stale intent`,
      );
    }
    return report;
  }

  private referenced(id: string, key: string): Promise<boolean> {
    return indexReferences(this.index, id, key);
  }
}

/** Whether the index points at the object: the memory's current version or one in its history. */
export async function indexReferences(index: MemoryIndex, id: string, key: string): Promise<boolean> {
  const doc = await index.get(id);
  if (!doc) return false;
  if (objectKeyOf(doc) === key) return true;
  return (await index.history(id, 1000, 0)).rows.some((r) => r.objectKey === key);
}
