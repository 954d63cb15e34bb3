import { ALL_NAMESPACES } from '../namespaces/namespace';
import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Subscription } from 'rxjs';
import { BackendsService } from '../backends/backends.service';
import { ConflictError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { migrate, MigrationReport } from './migration';
import { closePair, docdbId, openPair, PairSpec, storeId } from './migration-target';

export interface MigrationJob {
  state: 'running' | 'done' | 'failed';
  phase: string;
  done: number;
  total: number | null;
  started_at: string;
  finished_at: string | null;
  report: MigrationReport | null;
  error: string | null;
}

export interface MigrationOffer {
  ok: true;
  /** Whether there are earlier backends to copy from. */
  available: boolean;
  source: string | null;
  target: string;
  /** Memories the earlier backends hold (null when they cannot be read). */
  memories: number | null;
  reason: string | null;
  job: MigrationJob | null;
}

/**
 * The admin page's "copy the N memories to the new backends" (issue 12, point 3): remembers the
 * backends in use before the last settings change (else, while MongoDB is active, the embedded
 * pair of the data directory), and runs the same migration as `memstore migrate` from them into
 * the active backends, one job at a time, in the background. Memories already in the target are
 * kept (it is live); the checkpoint lets a failed or interrupted job resume.
 */
@Injectable()
export class MigrationJobService implements OnModuleDestroy {
  private readonly logger = new Logger('Migration');
  private last: ResolvedSettings;
  private previous: ResolvedSettings | null = null;
  private job: MigrationJob | null = null;
  private lastOffer: MigrationOffer | null = null;
  private readonly sub: Subscription;
  private readonly abort = new AbortController();

  constructor(
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly backends: BackendsService,
  ) {
    this.last = settings.current();
    this.sub = settings.changes.subscribe((next) => {
      const prev = this.last;
      this.last = next;
      const before: PairSpec = { settings: prev, dataDir: cfg.dataDir };
      const after: PairSpec = { settings: next, dataDir: cfg.dataDir };
      if (docdbId(before) !== docdbId(after) || storeId(before) !== storeId(after)) this.previous = prev;
    });
  }

  onModuleDestroy(): void {
    this.sub.unsubscribe();
    this.abort.abort();
  }

  private plan(): { source: PairSpec; target: PairSpec; copyDocdb: boolean; copyObjects: boolean } | null {
    const target: PairSpec = { settings: this.settings.current(), dataDir: this.cfg.dataDir };
    let src: ResolvedSettings | null = this.previous;
    if (!src && target.settings.docdb_uri && fs.existsSync(path.join(this.cfg.dataDir, 'memstore.db'))) {
      src = { ...target.settings, docdb_uri: null, objstore_bucket: null }; // the embedded default left in the data dir
    }
    if (!src) return null;
    const source: PairSpec = { settings: src, dataDir: this.cfg.dataDir };
    const copyDocdb = docdbId(source) !== docdbId(target);
    const copyObjects = storeId(source) !== storeId(target);
    return copyDocdb || copyObjects ? { source, target, copyDocdb, copyObjects } : null;
  }

  async offer(): Promise<MigrationOffer> {
    // While a copy runs the page polls every second: answer from the last look, without opening the source again.
    if (this.job?.state === 'running' && this.lastOffer) return { ...this.lastOffer, job: this.job };
    this.lastOffer = await this.look();
    return this.lastOffer;
  }

  private async look(): Promise<MigrationOffer> {
    await this.backends.settled();
    const active = `${this.backends.docdb.describe()} + ${this.backends.objstore.describe()}`;
    const plan = this.plan();
    if (!plan) return { ok: true, available: false, source: null, target: active, memories: null, reason: 'The backends have not changed: nothing to copy', job: this.job };
    let pair;
    try {
      pair = await openPair(this.cfg, this.settings, plan.source);
      const memories = await pair.db.memories.count(ALL_NAMESPACES);
      return {
        ok: true,
        available: memories > 0 || !plan.copyDocdb,
        source: `${pair.db.describe()} + ${pair.store.describe()}`,
        target: active,
        memories,
        reason: memories > 0 ? null : 'The earlier backends hold no memories',
        job: this.job,
      };
    } catch (e) {
      return { ok: true, available: false, source: null, target: active, memories: null, reason: `The earlier backends cannot be read: ${(e as Error).message}`, job: this.job };
    } finally {
      await closePair(pair);
    }
  }

  /** Starts the copy in the background; the job is polled with offer(). */
  async start(): Promise<MigrationJob> {
    if (this.job?.state === 'running') throw new ConflictError('A copy is already running');
    await this.backends.settled();
    const plan = this.plan();
    if (!plan) throw new ConflictError('The backends have not changed: nothing to copy');
    const source = await openPair(this.cfg, this.settings, plan.source);
    const target = { db: this.backends.docdb, store: this.backends.objstore };
    const job: MigrationJob = { state: 'running', phase: 'starting', done: 0, total: null, started_at: new Date().toISOString(), finished_at: null, report: null, error: null };
    this.job = job;
    void migrate(source, target, {
      copyDocdb: plan.copyDocdb,
      copyObjects: plan.copyObjects,
      allowNonEmptyTarget: true,
      checkpointFile: path.join(this.cfg.dataDir, 'admin-migrate-checkpoint.json'),
      signal: this.abort.signal,
      onProgress: (p) => Object.assign(job, { phase: p.phase, done: p.done, total: p.total }),
    })
      .then((report) => Object.assign(job, { state: report.verified.ok ? 'done' : 'failed', report, error: report.verified.ok ? null : 'Verification found differences' }))
      .catch((e: Error) => {
        this.logger.warn(`Copy to the new backends failed: ${e.message}`);
        Object.assign(job, { state: 'failed', error: e.message });
      })
      .finally(() => {
        job.finished_at = new Date().toISOString();
        void closePair(source);
      });
    return job;
  }
}
