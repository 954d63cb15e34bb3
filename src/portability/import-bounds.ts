import * as fs from 'node:fs';
import * as path from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { AppError } from '../common/errors';
import type { ImportLimits } from '../config/app-config';

/**
 * The bounds of an import (issue 46 item 4, decision 0070): what one import may cost (items,
 * unpacked bytes, compression ratio, time), how many run at once, where their temp files live,
 * and the pacing that keeps the event loop answering other requests while one runs.
 */

/** Work between two turns of the event loop: at most this many items (files or lines) … */
export const PACE_ITEMS = 256;
/** … or this much time on the thread, whichever comes first. */
const PACE_SLICE_MS = 10;

/**
 * A zip entry's ratio is only looked at above this unpacked size (small files of repeated text
 * compress well and cost nothing); the import service raises it to the largest markdown file it
 * reads (a memory at the content limit, however repetitive, is read once and bounded anyway).
 */
export const RATIO_FLOOR_BYTES = 1024 * 1024;

/** An import refused or stopped by one of its bounds: 413 (it is too large to import here). */
export class ImportTooLargeError extends AppError {
  constructor(message: string) {
    super(413, message);
  }
}

/** The client went away (or the upload was cut off): the import stops; nothing is sent. */
export class ImportAbortedError extends Error {
  constructor(readonly stage: 'upload' | 'import') {
    super(stage === 'upload' ? 'the client left during the upload' : 'the client left during the import');
    this.name = 'ImportAbortedError';
  }
}

/** The temp directory cannot take an upload (read-only, full, missing, not ours): 503 naming the setting, never the path. */
export class ImportTempDirError extends AppError {
  readonly headers = { 'Retry-After': '60' };
  constructor(code: string) {
    super(503, `Import unavailable: the temporary directory for uploads cannot be written (${code}); the operator sets MEMSTORE_IMPORT_TMP_DIR to a writable directory (or mounts a tmpfs)`);
  }
}

/** Too many imports at once: 429 for one token's, 503 for the instance's. */
export class ImportBusyError extends AppError {
  readonly headers = { 'Retry-After': '5' };
  constructor(status: 429 | 503, message: string) {
    super(status, message);
  }
}

/** File-system errors that mean "this directory cannot take files", not "the client sent something wrong". */
const TEMP_DIR_CODES = new Set(['EROFS', 'EACCES', 'EPERM', 'ENOSPC', 'EDQUOT', 'ENOENT', 'ENOTDIR', 'EEXIST', 'EMFILE', 'ENFILE', 'EIO']);

export function tempDirError(e: unknown): ImportTempDirError | null {
  const code = (e as NodeJS.ErrnoException)?.code;
  return typeof code === 'string' && TEMP_DIR_CODES.has(code) ? new ImportTempDirError(code) : null;
}

/**
 * Lets the event loop turn every PACE_ITEMS steps or PACE_SLICE_MS of work, and stops the work
 * (throws the signal's reason) once the signal is aborted. One per import.
 */
export class Pacer {
  private steps = 0;
  private since = performance.now();

  constructor(private readonly signal?: AbortSignal) {}

  async step(): Promise<void> {
    this.signal?.throwIfAborted();
    if (++this.steps < PACE_ITEMS && performance.now() - this.since < PACE_SLICE_MS) return;
    this.steps = 0;
    await nextTurn();
    this.since = performance.now();
    this.signal?.throwIfAborted();
  }
}

/** Counts items against MEMSTORE_IMPORT_MAX_ITEMS. */
export class ItemBudget {
  private n = 0;
  constructor(private readonly max: number) {}
  add(count = 1): void {
    this.n += count;
    if (this.n > this.max) throw new ImportTooLargeError(`The upload holds more than ${this.max} items (files and JSONL lines; MEMSTORE_IMPORT_MAX_ITEMS): nothing was imported`);
  }
}

/** The unpacked-size and ratio checks of one zip entry (from the central directory; yauzl checks the real sizes against it). */
export function checkZipEntry(limits: ImportLimits, name: string, packed: number, unpacked: number, total: number, floor = RATIO_FLOOR_BYTES): void {
  if (total > limits.maxUnpackedBytes) {
    throw new ImportTooLargeError(`The archive unpacks to more than ${limits.maxUnpackedBytes} bytes (MEMSTORE_IMPORT_MAX_UNPACKED_BYTES): nothing was imported`);
  }
  if (unpacked > Math.max(floor, RATIO_FLOOR_BYTES) && unpacked > limits.maxRatio * Math.max(packed, 1)) {
    throw new ImportTooLargeError(
      `${JSON.stringify(name)} unpacks to ${unpacked} bytes from ${packed} (more than ${limits.maxRatio} times; MEMSTORE_IMPORT_MAX_RATIO): the archive looks like a zip bomb and nothing was imported`,
    );
  }
}

/** Newlines in a stream plus a last unterminated line: the JSONL lines an import would look at. */
export async function countLines(stream: AsyncIterable<Buffer>, budget: ItemBudget, pacer: Pacer): Promise<void> {
  let tail = false;
  for await (const chunk of stream) {
    let n = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) n++;
    if (chunk.length > 0) tail = chunk[chunk.length - 1] !== 10;
    budget.add(n);
    await pacer.step();
  }
  if (tail) budget.add(1);
}

/**
 * Imports running now, per token (or admin) and in all: a slot is taken before the upload is
 * received (so parallel uploads cannot fill the temp directory) and given back when it ends.
 */
export class ImportSlots {
  private readonly byOwner = new Map<string, number>();
  private total = 0;

  constructor(private readonly limits: ImportLimits) {}

  take(owner: string): () => void {
    const mine = this.byOwner.get(owner) ?? 0;
    if (mine >= this.limits.perToken) {
      throw new ImportBusyError(429, `Too many imports at once for this token: at most ${this.limits.perToken} (MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN); retry when the running one has finished`);
    }
    if (this.total >= this.limits.concurrent) {
      throw new ImportBusyError(503, `Import busy: ${this.limits.concurrent} imports are running (MEMSTORE_IMPORT_CONCURRENT); retry shortly`);
    }
    this.byOwner.set(owner, mine + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.byOwner.set(owner, left);
      else this.byOwner.delete(owner);
    };
  }
}

/** Uploads are kept in <tmpDir>/<pid>-<random>/upload; this names the owner process of such a directory. */
const UPLOAD_DIR = /^([1-9][0-9]{0,9})-[A-Za-z0-9]{6}$/;

/** Upload directories this process made and has not removed yet (several apps may share one process: tests, the CLI). */
const ours = new Set<string>();

export async function makeUploadDir(tmpDir: string): Promise<string> {
  await fs.promises.mkdir(tmpDir, { recursive: true, mode: 0o700 });
  const dir = await fs.promises.mkdtemp(path.join(tmpDir, `${process.pid}-`));
  ours.add(dir);
  return dir;
}

export async function removeUploadDir(dir: string): Promise<void> {
  await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  ours.delete(dir);
}

/**
 * Removes the upload directories a crashed or killed run left behind: those of a process that is
 * gone, and those named with this process's own id (which, at start, are from an earlier run
 * that had the same id, as in a container where the service is always process 1, unless this
process made them). Directories
 * of other live processes (another instance sharing the temp directory) are left alone.
 * Returns how many were removed; a directory that cannot be read is no error here (the first
 * upload reports it).
 */
export async function removeStaleUploads(tmpDir: string): Promise<number> {
  let names: string[];
  try {
    names = await fs.promises.readdir(tmpDir);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const m = UPLOAD_DIR.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid ? ours.has(path.join(tmpDir, name)) : alive(pid)) continue;
    await fs.promises.rm(path.join(tmpDir, name), { recursive: true, force: true }).then(
      () => removed++,
      () => undefined,
    );
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
