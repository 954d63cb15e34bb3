import type Database from 'better-sqlite3';
import { FTS_TABLES } from './sqlite-memory-schema';
import type { Stmt } from './sqlite-memory-rows';

/** Leaf pages of FTS5 merge work per maintenance step (a step takes ~5 ms, rarely ~15 ms, at 100,000 memories). */
const MERGE_PAGES_PER_STEP = 100;

/**
 * FTS5 segment maintenance. Every write transaction adds a small segment to each full-text
 * index and FTS5's automerge keeps up to ~4 per level, so at 100,000 memories a term lookup
 * read ~15 segments (~25 % slower than one). When writes pause, we merge them in small steps
 * (`merge` with usermerge = 2: levels of two or more segments, smallest first), yielding to
 * requests between steps: a tidy-up after a few hundred writes is ~15 ms of work in all; the
 * first one on an index seeded without it ~0.7 s, spread over ~150 steps.
 */
export class FtsMaintenance {
  private timer: NodeJS.Timeout | null = null;
  private running = false;
  private stopped = false;
  /** A write while maintenance ran: schedule another round when it ends. */
  private again = false;

  /** `idleMs`: tidy this long after the last write, or never when null. */
  constructor(
    private readonly db: Database.Database,
    private readonly stmt: Stmt,
    private readonly idleMs: number | null,
  ) {}

  /** A write happened (or the index opened): tidy once writes pause. */
  schedule(): void {
    if (this.idleMs === null || this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = true;
      const step = () => {
        let more: boolean;
        try {
          more = !this.stopped && this.db.open && this.step();
        } catch {
          more = false; // the next write schedules another attempt
        }
        if (more) {
          setImmediate(step);
          return;
        }
        this.running = false;
        if (this.again) {
          this.again = false;
          this.schedule();
        }
      };
      step();
    }, this.idleMs);
    this.timer.unref();
  }

  /** One bounded step of segment merging on both full-text indexes; true while work remains. */
  step(pages = MERGE_PAGES_PER_STEP): boolean {
    let worked = false;
    const changes = this.stmt('SELECT total_changes()').pluck();
    for (const t of FTS_TABLES) {
      const before = changes.get() as number;
      this.stmt(`INSERT INTO ${t} (${t}, rank) VALUES ('merge', ${Math.max(1, Math.floor(pages))})`).run();
      // FTS5: a merge that did no work changes fewer than two rows.
      if ((changes.get() as number) - before >= 2) worked = true;
    }
    return worked;
  }

  /** Segments in each full-text index (tests, diagnostics). */
  segments(): { fts: number; titleTags: number } {
    const count = (t: string) => this.stmt(`SELECT count(DISTINCT segid) FROM ${t}_idx`).pluck().get() as number;
    return { fts: count('memories_fts'), titleTags: count('memories_tt') };
  }

  /** No more maintenance (the connection is about to close). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}
