import * as yauzl from 'yauzl';
import { ZipFile } from 'yazl';

/** Every entry of a zip held in memory (tests only). */
export async function unzip(buf: Buffer): Promise<Map<string, Buffer>> {
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) => yauzl.fromBuffer(buf, { lazyEntries: true }, (err, z) => (err || !z ? reject(err ?? new Error('unreadable zip')) : resolve(z))));
  const out = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', resolve);
    zip.on('entry', (e: yauzl.Entry) => {
      zip.openReadStream(e, (err, s) => {
        if (err || !s) return reject(err ?? new Error(`unreadable zip entry ${e.fileName}`));
        const parts: Buffer[] = [];
        s.on('data', (c: Buffer) => parts.push(c));
        s.on('end', () => {
          out.set(e.fileName, Buffer.concat(parts));
          zip.readEntry();
        });
      });
    });
    zip.readEntry();
  });
  return out;
}

/** A zip of the given files (tests only); `store`: entries kept uncompressed (method 0), as Info-ZIP's `zip` does for small files. */
export async function makeZip(files: Record<string, string | Buffer>, mtime = new Date('2025-03-04T05:06:07Z'), opts: { store?: boolean } = {}): Promise<Buffer> {
  const zip = new ZipFile();
  for (const [name, body] of Object.entries(files)) zip.addBuffer(Buffer.from(body), name, { mtime, compress: !opts.store });
  zip.end();
  const parts: Buffer[] = [];
  for await (const c of zip.outputStream) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

/** A supertest parser that keeps a binary body as a Buffer. */
export function binaryParser(res: NodeJS.ReadableStream & { setEncoding(e: string): void }, cb: (err: Error | null, body: Buffer) => void): void {
  const parts: Buffer[] = [];
  res.on('data', (c: Buffer) => parts.push(c));
  res.on('end', () => cb(null, Buffer.concat(parts)));
}
