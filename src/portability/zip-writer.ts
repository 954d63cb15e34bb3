import { Readable } from 'node:stream';
import { ZipFile } from 'yazl';

/**
 * A streaming zip writer over yazl that keeps memory flat: each entry's bytes are handed to yazl
 * as a lazily opened stream and released once written, and `add` waits while more than a few
 * entries are queued, so a slow reader (the HTTP client) slows the producer down instead of the
 * archive piling up in memory. (yazl's addBuffer would keep every compressed buffer alive.)
 */
export class ZipStreamWriter {
  private readonly zip = new ZipFile();
  private readonly pending: Promise<void>[] = [];
  private readonly aborted: Promise<never>;
  private abortReason: Error | null = null;

  constructor(
    signal?: AbortSignal,
    private readonly window = 8,
  ) {
    this.aborted = new Promise<never>((_, reject) => {
      signal?.addEventListener('abort', () => {
        this.abortReason = new Error('export aborted: the client went away');
        reject(this.abortReason);
      });
    });
    this.aborted.catch(() => undefined);
  }

  /** The archive bytes; pipe it to the destination. */
  get output(): NodeJS.ReadableStream {
    return this.zip.outputStream;
  }

  async add(name: string, data: Buffer, mtime: Date): Promise<void> {
    if (this.abortReason) throw this.abortReason;
    let held: Buffer | null = data;
    let written!: () => void;
    const done = new Promise<void>((resolve) => (written = resolve));
    this.zip.addReadStreamLazy(name, { mtime, size: data.length }, (cb) => {
      const stream = Readable.from([held!]);
      held = null;
      stream.on('end', written);
      cb(null, stream);
    });
    // yazl keeps every entry for the central directory; once written, drop the entry's pump
    // closure (it is never called again), which halves what each entry keeps (~450 bytes left).
    const entry = (this.zip as unknown as { entries?: Array<{ doFileDataPump?: unknown }> }).entries?.at(-1);
    void done.then(() => {
      if (entry) entry.doFileDataPump = null;
    });
    this.pending.push(done);
    if (this.pending.length > this.window) await Promise.race([this.pending.shift()!, this.aborted]);
  }

  addFile(realPath: string, name: string, mtime: Date): void {
    this.zip.addFile(realPath, name, { mtime });
  }

  /** Waits for the queued entries, then writes the central directory. */
  async end(): Promise<void> {
    await Promise.race([Promise.all(this.pending), this.aborted]);
    this.pending.length = 0;
    this.zip.end();
  }
}
