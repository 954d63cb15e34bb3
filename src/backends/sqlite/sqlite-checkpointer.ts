import { Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { stopWorker } from '../../common/worker-script';

/**
 * Checkpoints the embedded database's WAL on a worker thread with its own connection.
 *
 * A create dirties ~30 pages (the row, twelve list indexes, tags, both full-text indexes). With
 * SQLite's automatic checkpoint, the commit that crosses 1,000 WAL pages copies them back into the
 * database file and fsyncs it on the main thread, which serves no request meanwhile. Here the main
 * connection only appends to the WAL, and this thread runs a PASSIVE checkpoint (it never waits
 * for or blocks a reader or the writer) every `intervalMs`: that copy and its fsync are the bulk of
 * the work. The writer starts the WAL over when it finds it fully copied. Under a steady stream of
 * writes it seldom does, and then its own automatic checkpoint at SAFETY_CHECKPOINT_PAGES does,
 * short because this thread has copied nearly every frame already. An insert at 100,000 memories
 * costs the main thread 0.90–0.92 ms instead of 1.37–1.67 (bench/README.md, "Create and the WAL
 * checkpoint").
 *
 * Plain JS evaluated in the worker (no ts-node under jest): it needs only the driver.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 0');
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch (e) { parentPort.postMessage({ error: e.message }); }
}, workerData.intervalMs);
parentPort.on('message', () => { clearInterval(timer); db.close(); parentPort.close(); });
`;

/** Pages the main connection lets into the WAL before it checkpoints by itself (the checkpointer lagging or gone). */
export const SAFETY_CHECKPOINT_PAGES = 16_384;

export class SqliteCheckpointer {
  private readonly logger = new Logger('SqliteCheckpointer');
  private worker?: Worker;
  private lastError = '';

  constructor(
    private readonly file: string,
    private readonly intervalMs = 100,
  ) {}

  start(): void {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { file: this.file, intervalMs: this.intervalMs, driver: require.resolve('better-sqlite3') } });
    worker.unref(); // never keeps the process alive
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
    if (worker) await stopWorker(worker, 'stop', 2000);
  }
}
