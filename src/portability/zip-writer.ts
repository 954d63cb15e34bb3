import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import * as zlib from 'node:zlib';

const deflateRaw = promisify(zlib.deflateRaw);

const U32 = 0xffffffff;
const U16 = 0xffff;
/** Entries smaller than this are stored, not deflated (deflate would not pay for its header). */
const STORE_BELOW = 64;
/** General purpose flags: bit 11 = names are UTF-8; bit 3 = sizes and CRC follow the data. */
const FLAG_UTF8 = 0x0800;
const FLAG_DESCRIPTOR = 0x0008;
const VERSION_MADE_BY = (3 << 8) | 45; // Unix, spec 4.5 (ZIP64)

/**
 * A streaming zip writer whose memory stays flat however many entries it writes (issue 12):
 * each entry's local header and data go straight to `output` (waiting while the reader is slow),
 * and its central-directory record is appended to a temp file instead of being kept in memory
 * (yazl kept ~0.9 KB per entry: +89 MiB of heap at 100,000 memories). `end()` copies that file
 * to the output and writes the end records, ZIP64 ones when the entry count or an offset needs
 * them. What stays in memory per archive is a few counters.
 *
 * Entries are deflated (stored when tiny), names are UTF-8 (flag bit 11), and each carries an
 * extended timestamp (0x5455) besides the DOS time, so readers see the exact second in UTC.
 * Readable by yauzl (the import), jszip and Info-ZIP `unzip`.
 */
export class ZipStreamWriter {
  private readonly out = new PassThrough({ highWaterMark: 256 * 1024 });
  private offset = 0;
  private entries = 0;
  private cdDir: string | null = null;
  private cd: fs.WriteStream | null = null;
  private cdBytes = 0;
  private failure: Error | null = null;
  private ended = false;
  private queue: Promise<void> = Promise.resolve();

  constructor(signal?: AbortSignal) {
    signal?.addEventListener('abort', () => this.fail(new Error('export aborted: the client went away')));
    this.out.on('close', () => {
      if (!this.ended) this.fail(new Error('export aborted: the archive stream was closed'));
    });
  }

  /** The archive bytes; pipe it to the destination. */
  get output(): NodeJS.ReadableStream {
    return this.out;
  }

  /** Entries written so far. */
  get count(): number {
    return this.entries;
  }

  /** Adds an entry whose bytes are in memory; resolves once they are handed to the output. */
  add(name: string, data: Buffer, mtime: Date): Promise<void> {
    return this.serial(async () => {
      const crc = zlib.crc32(data);
      const deflate = data.length >= STORE_BELOW;
      const body = deflate ? await deflateRaw(data) : data;
      if (body.length >= U32 || data.length >= U32) throw new Error(`zip entry ${name} is too large`);
      const nameBuf = Buffer.from(name, 'utf8');
      const start = this.offset;
      await this.write(localHeader(nameBuf, mtime, deflate ? 8 : 0, FLAG_UTF8, crc, body.length, data.length));
      await this.write(body);
      await this.record(nameBuf, mtime, deflate ? 8 : 0, FLAG_UTF8, crc, body.length, data.length, start);
    });
  }

  /** Adds a file from disk, streamed through deflate (its CRC and sizes follow in a data descriptor). */
  addFile(realPath: string, name: string, mtime: Date): Promise<void> {
    return this.serial(async () => {
      const nameBuf = Buffer.from(name, 'utf8');
      const start = this.offset;
      const flags = FLAG_UTF8 | FLAG_DESCRIPTOR;
      await this.write(localHeader(nameBuf, mtime, 8, flags, 0, 0, 0));
      let crc = 0;
      let size = 0;
      let csize = 0;
      const deflater = zlib.createDeflateRaw();
      const src = fs.createReadStream(realPath);
      src.on('data', (c) => {
        crc = zlib.crc32(c, crc);
        size += (c as Buffer).length;
      });
      src.on('error', (e) => deflater.destroy(e));
      src.pipe(deflater);
      for await (const chunk of deflater as AsyncIterable<Buffer>) {
        csize += chunk.length;
        await this.write(chunk);
      }
      if (size >= U32 || csize >= U32) throw new Error(`zip entry ${name} is too large`);
      const dd = Buffer.alloc(16);
      dd.writeUInt32LE(0x08074b50, 0);
      dd.writeUInt32LE(crc, 4);
      dd.writeUInt32LE(csize, 8);
      dd.writeUInt32LE(size, 12);
      await this.write(dd);
      await this.record(nameBuf, mtime, 8, flags, crc, csize, size, start);
    });
  }

  /** Writes the central directory (from its temp file) and the end records, then ends the output. */
  end(): Promise<void> {
    return this.serial(async () => {
      const cdStart = this.offset;
      if (this.cd) {
        const cd = this.cd;
        cd.end();
        await once(cd, 'finish');
        for await (const chunk of fs.createReadStream(cd.path, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) await this.write(chunk);
      }
      const cdSize = this.offset - cdStart;
      const zip64 = this.entries >= U16 || cdStart >= U32 || cdSize >= U32;
      if (zip64) {
        const eocd64At = this.offset;
        const r = Buffer.alloc(56);
        r.writeUInt32LE(0x06064b50, 0);
        r.writeBigUInt64LE(44n, 4); // size of the rest of this record
        r.writeUInt16LE(VERSION_MADE_BY, 12);
        r.writeUInt16LE(45, 14);
        r.writeUInt32LE(0, 16); // this disk
        r.writeUInt32LE(0, 20); // disk with the central directory
        r.writeBigUInt64LE(BigInt(this.entries), 24);
        r.writeBigUInt64LE(BigInt(this.entries), 32);
        r.writeBigUInt64LE(BigInt(cdSize), 40);
        r.writeBigUInt64LE(BigInt(cdStart), 48);
        const loc = Buffer.alloc(20);
        loc.writeUInt32LE(0x07064b50, 0);
        loc.writeUInt32LE(0, 4);
        loc.writeBigUInt64LE(BigInt(eocd64At), 8);
        loc.writeUInt32LE(1, 16); // total disks
        await this.write(Buffer.concat([r, loc]));
      }
      const e = Buffer.alloc(22);
      e.writeUInt32LE(0x06054b50, 0);
      e.writeUInt16LE(Math.min(this.entries, U16), 8);
      e.writeUInt16LE(Math.min(this.entries, U16), 10);
      e.writeUInt32LE(Math.min(cdSize, U32), 12);
      e.writeUInt32LE(Math.min(cdStart, U32), 16);
      await this.write(e);
      this.ended = true;
      this.out.end();
      await this.cleanup();
    });
  }

  /** Stops the archive: the output errors with `err`, the temp file is removed. */
  destroy(err: Error): void {
    this.fail(err);
  }

  private fail(err: Error): void {
    if (this.failure || this.ended) return;
    this.failure = err;
    this.out.destroy(err);
    void this.cleanup();
  }

  private async cleanup(): Promise<void> {
    const dir = this.cdDir;
    this.cdDir = null;
    this.cd?.destroy();
    if (dir) await fs.promises.rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }

  /** Runs writes one after the other (entries must not interleave). */
  private serial(fn: () => Promise<void>): Promise<void> {
    const run = this.queue.then(() => {
      if (this.failure) throw this.failure;
      if (this.ended) throw new Error('the zip archive has ended');
      return fn();
    });
    this.queue = run.catch(() => undefined);
    return run.catch((e: Error) => {
      this.fail(e);
      throw this.failure ?? e;
    });
  }

  private async write(buf: Buffer): Promise<void> {
    if (this.failure) throw this.failure;
    this.offset += buf.length;
    if (this.out.write(buf)) return;
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        this.out.off('drain', done);
        this.out.off('close', done);
        if (this.failure) reject(this.failure);
        else resolve();
      };
      this.out.on('drain', done);
      this.out.on('close', done);
    });
  }

  private async record(name: Buffer, mtime: Date, method: number, flags: number, crc: number, csize: number, size: number, offset: number): Promise<void> {
    if (!this.cd) {
      this.cdDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'memstore-zip-'));
      this.cd = fs.createWriteStream(path.join(this.cdDir, 'central-directory'), { mode: 0o600 });
      this.cd.on('error', (e) => this.fail(e));
    }
    const big = offset >= U32;
    const ts = Buffer.alloc(9);
    ts.writeUInt16LE(0x5455, 0);
    ts.writeUInt16LE(5, 2);
    ts.writeUInt8(1, 4);
    ts.writeUInt32LE(unixSeconds(mtime), 5);
    let extra = ts;
    if (big) {
      const z = Buffer.alloc(12);
      z.writeUInt16LE(0x0001, 0);
      z.writeUInt16LE(8, 2);
      z.writeBigUInt64LE(BigInt(offset), 4);
      extra = Buffer.concat([z, ts]);
    }
    const { time, date } = dosTime(mtime);
    const h = Buffer.alloc(46);
    h.writeUInt32LE(0x02014b50, 0);
    h.writeUInt16LE(VERSION_MADE_BY, 4);
    h.writeUInt16LE(big ? 45 : 20, 6);
    h.writeUInt16LE(flags, 8);
    h.writeUInt16LE(method, 10);
    h.writeUInt16LE(time, 12);
    h.writeUInt16LE(date, 14);
    h.writeUInt32LE(crc >>> 0, 16);
    h.writeUInt32LE(csize, 20);
    h.writeUInt32LE(size, 24);
    h.writeUInt16LE(name.length, 28);
    h.writeUInt16LE(extra.length, 30);
    h.writeUInt16LE(0, 32); // comment
    h.writeUInt16LE(0, 34); // disk
    h.writeUInt16LE(0, 36); // internal attributes
    h.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file, rw-r--r--
    h.writeUInt32LE(big ? U32 : offset, 42);
    const rec = Buffer.concat([h, name, extra]);
    this.cdBytes += rec.length;
    this.entries++;
    if (!this.cd.write(rec)) await once(this.cd, 'drain');
  }
}

function localHeader(name: Buffer, mtime: Date, method: number, flags: number, crc: number, csize: number, size: number): Buffer {
  const { time, date } = dosTime(mtime);
  const ts = Buffer.alloc(9);
  ts.writeUInt16LE(0x5455, 0);
  ts.writeUInt16LE(5, 2);
  ts.writeUInt8(1, 4);
  ts.writeUInt32LE(unixSeconds(mtime), 5);
  const h = Buffer.alloc(30);
  h.writeUInt32LE(0x04034b50, 0);
  h.writeUInt16LE(20, 4);
  h.writeUInt16LE(flags, 6);
  h.writeUInt16LE(method, 8);
  h.writeUInt16LE(time, 10);
  h.writeUInt16LE(date, 12);
  h.writeUInt32LE(crc >>> 0, 14);
  h.writeUInt32LE(csize, 18);
  h.writeUInt32LE(size, 22);
  h.writeUInt16LE(name.length, 26);
  h.writeUInt16LE(ts.length, 28);
  return Buffer.concat([h, name, ts]);
}

function unixSeconds(d: Date): number {
  return Math.min(U32, Math.max(0, Math.floor(d.getTime() / 1000)));
}

/** MS-DOS date and time (local time, 2-second resolution, 1980–2107), as zip readers expect. */
function dosTime(d: Date): { time: number; date: number } {
  const year = Math.min(2107, Math.max(1980, d.getFullYear()));
  const date = ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate();
  const time = (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1);
  return { time, date: d.getFullYear() < 1980 ? (0 << 9) | (1 << 5) | 1 : date };
}
