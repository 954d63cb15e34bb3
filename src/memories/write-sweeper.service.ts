import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { ObjectStore } from '../backends/ports/object-store.port';
import { ALL_NAMESPACES } from '../namespaces/namespace';
import { deleteIntentPrefix, WriteIntent, WriteIntentRepository } from '../backends/ports/write-intent.repository';
import { AppConfig } from '../config/app-config';

const BATCH = 500;

export interface SweepReport {
  /** Objects of unacknowledged writes, deleted. */
  removed: string[];
  /** Intents whose object the index does reference (the process died after the index write): only the intent went. */
  settled: string[];
  /** Memories whose interrupted delete was finished (the index no longer has them): their objects deleted. */
  deleted: string[];
  /** Temporary files of the object store removed. */
  temporary: number;
}

/**
 * The sweep (issue 9 point 5, issue 46; decision 0060), for intents older than the grace period:
 * a write's object is kept when the index holds the write (MemoryIndex.holds), else deleted (the
 * write never happened, was lost, or its outcome was unknown and it did not commit); an
 * interrupted delete is finished (every object of the memory deleted) when the index no longer
 * has the memory, else dropped (the delete did not happen). The object store's temporary files
 * from a crash are removed too. Runs at start and then every half grace period, on whichever
 * backends are active.
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
    const run = () => this.sweep().catch((e: Error) => this.logger.warn(`Sweep of unacknowledged writes failed (next attempt later): ${e.message}`));
    void run();
    this.timer = setInterval(() => void run(), Math.max(10_000, this.graceMs / 2));
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
    const report: SweepReport = { removed: [], settled: [], deleted: [], temporary: 0 };
    const cutoff = new Date(Date.now() - graceMs);
    for (;;) {
      const batch = await this.intents.olderThan(cutoff, BATCH);
      for (const intent of batch) {
        if (intent.kind === 'delete') await this.finishDelete(intent, report);
        else if (await this.index.holds(intent.memoryId, intent.objectKey)) {
          report.settled.push(intent.objectKey);
        } else {
          await this.index.forget(intent.memoryId, intent.objectKey);
          await this.store.delete(intent.objectKey);
          report.removed.push(intent.objectKey);
        }
        await this.intents.remove(intent.objectKey);
      }
      if (batch.length < BATCH) break;
    }
    report.temporary = await this.store.sweepTemporary(graceMs);
    if (report.removed.length + report.settled.length + report.deleted.length + report.temporary > 0) {
      this.logger.log(
        `Removed ${report.removed.length} object(s) of unacknowledged writes${report.removed.length ? ` (${report.removed.join(', ')})` : ''}, ` +
          `finished ${report.deleted.length} interrupted delete(s)${report.deleted.length ? ` (${report.deleted.join(', ')})` : ''}, ` +
          `${report.temporary} temporary file(s); ${report.settled.length} acknowledged write(s) had a stale intent`,
      );
    }
    return report;
  }

  /** An interrupted delete: when the index no longer has the memory, none of its objects is live. */
  private async finishDelete(intent: WriteIntent, report: SweepReport): Promise<void> {
    if (await this.index.get(ALL_NAMESPACES, intent.memoryId)) return; // the delete did not happen
    const keys: string[] = [];
    for await (const key of this.store.list(deleteIntentPrefix(intent.objectKey, intent.memoryId))) keys.push(key);
    for (const key of keys) await this.store.delete(key);
    report.deleted.push(intent.memoryId);
  }
}
