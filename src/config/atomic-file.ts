import * as fs from 'node:fs';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';

const TEMP_SUFFIX = '.tmp';

/**
 * Writes `data` to `file` atomically: a temp file in the same directory (created exclusively
 * with `mode`), fsync, rename over the target, fsync the directory. A crash at any point leaves
 * either the old file or the new one, never a torn file. The temp file is removed on failure.
 */
export function writeFileAtomic(file: string, data: string | Buffer, mode = 0o600): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.${randomBytes(6).toString('hex')}${TEMP_SUFFIX}`);
  let fd: number | undefined;
  try {
    fd = fs.openSync(tmp, 'wx', mode);
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    let off = 0;
    while (off < buf.length) off += fs.writeSync(fd, buf, off, buf.length - off);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = undefined;
    fs.chmodSync(tmp, mode); // the umask may have narrowed or widened the create mode
    fs.renameSync(tmp, file);
  } catch (err) {
    if (fd !== undefined) {
      try {
        fs.closeSync(fd);
      } catch {
        /* already failing */
      }
    }
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fsyncDir(dir);
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Not every platform can fsync a directory; the rename is still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** Removes (minute-old) temp files a crashed writer of `file` left behind (`.<name>.<pid>.<rand>.tmp`). */
export function removeStaleTempFiles(file: string): void {
  const dir = path.dirname(file);
  const prefix = `.${path.basename(file)}.`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) {
    if (!n.startsWith(prefix) || !n.endsWith(TEMP_SUFFIX)) continue;
    const p = path.join(dir, n);
    try {
      // Leave a temp file younger than a minute alone: another process may be writing it.
      if (Date.now() - fs.statSync(p).mtimeMs > 60_000) fs.rmSync(p, { force: true });
    } catch {
      /* gone already */
    }
  }
}

/** The file's text, or null when it does not exist. */
export function readFileIfExists(file: string): Buffer | null {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}
