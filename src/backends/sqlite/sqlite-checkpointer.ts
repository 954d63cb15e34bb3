import { Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';

/**
 * Checkpoints the embedded database's WAL on a worker thread with its own connection.
 *
 * A create dirties ~30 pages (the row, twelve list indexes, tags, both full-text indexes). With
 * SQLite's automatic checkpoint, the commit that crosses 1,000 WAL pages copies them back into the
 * database file and fsyncs it on the main thread, which serves no request meanwhile. Here the main
 * connection only appends to the WAL (its own automatic checkpoint stays as a safety net at
 * SAFETY_CHECKPOINT_PAGES), and this thread runs a PASSIVE checkpoint (it never waits for or
 * blocks a reader or the writer) every `intervalMs`: that copy and its fsync are the bulk of the
 * work. Under steady writes the writer never finds the WAL fully copied, so the log would only
 * grow; past RESTART_PAGES the thread follows with a RESTART checkpoint, which holds new writes back
 * only while it copies the frames written since and syncs, and lets the next write start the WAL
 * over. An insert at 100,000 memories costs the main thread 0.73–0.82 ms instead of 1.34–1.56
 * (bench/README.md, "Create and the WAL checkpoint").
 *
 * Plain JS evaluated in the worker (no ts-node under jest): it needs only the driver.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
let timer;
const tick = () => {
  let behind = false;
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    behind = r.log > 0 && (r.busy !== 0 || r.log >= workerData.catchUpPages);
  } catch (e) { parentPort.postMessage({ error: e.message }); }
  timer = setTimeout(tick, behind ? workerData.catchUpMs : workerData.intervalMs);
};
timer = setTimeout(tick, workerData.intervalMs);
parentPort.on('message', () => { clearTimeout(timer); db.close(); parentPort.close(); });
`;

/** Pages the main connection lets into the WAL before it checkpoints by itself (the checkpointer lagging or gone). */
export const SAFETY_CHECKPOINT_PAGES = 16_384;
/** A WAL this long (4 MiB) is checkpointed again after CATCH_UP_MS rather than the interval. */
const CATCH_UP_PAGES = 1024;
const CATCH_UP_MS = 10;

export class SqliteCheckpointer {
  private readonly logger = new Logger('SqliteCheckpointer');
  private worker?: Worker;
  private exited: Promise<void> = Promise.resolve();
  private lastError = '';

  constructor(
    private readonly file: string,
    private readonly intervalMs = 100,
  ) {}

  start(): void {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.file, intervalMs: this.intervalMs, catchUpPages: CATCH_UP_PAGES, catchUpMs: CATCH_UP_MS, driver: require.resolve('better-sqlite3') } });
    worker.unref(); // never keeps the process alive
    this.exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.on('message', (m: { error?: string }) => {
      // One line per distinct failure (a busy database is retried on the next tick anyway).
      if (m.error && m.error !== this.lastError) this.logger.warn(`WAL checkpoint failed: ${m.error}`);
      this.lastError = m.error ?? '';
    });
    worker.on('error', (e) => this.logger.error(`WAL checkpoint worker error: ${e.message}; the main connection checkpoints by itself`));
    this.worker = worker;
  }

  /** Stops the thread (its connection closes first; the main connection does the final checkpoint). */
  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    worker.postMessage('stop');
    const timer = setTimeout(() => void worker.terminate(), 2000);
    await this.exited;
    clearTimeout(timer);
  }
}
