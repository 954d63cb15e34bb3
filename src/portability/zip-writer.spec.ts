import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import JSZip from 'jszip';
import * as yauzl from 'yauzl';
import { ZipStreamWriter } from './zip-writer';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const MTIME = new Date('2025-05-06T07:08:09Z');

function yauzlNames(file: string): Promise<string[]> {
  return new Promise((resolve, reject) =>
    yauzl.open(file, { lazyEntries: false }, (err, zip) => {
      if (err || !zip) return reject(err ?? new Error('unreadable zip'));
      const names: string[] = [];
      zip.on('entry', (e: yauzl.Entry) => names.push(e.fileName));
      zip.on('end', () => resolve(names));
      zip.on('error', reject);
    }),
  );
}

describe('ZipStreamWriter', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'zip-writer-spec-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes entries (tiny, large, unicode names, a file from disk) that unzip, jszip and yauzl read back byte for byte', async () => {
    const file = path.join(dir, 'a.zip');
    const big = Buffer.from('Lorem ipsum dolor sit amet ünïcødé 🙂\n'.repeat(30000));
    const disk = path.join(dir, 'SUMS');
    fs.writeFileSync(disk, 'x'.repeat(200_000) + 'end\n');
    const zip = new ZipStreamWriter();
    const out = pipeline(zip.output, fs.createWriteStream(file));
    await zip.add('memories/tiny.md', Buffer.from('hi'), MTIME);
    await zip.add('memories/empty.md', Buffer.alloc(0), MTIME);
    await zip.add('memories/große 記憶.md', big, MTIME);
    await zip.addFile(disk, 'SHA256SUMS', MTIME);
    await zip.add('manifest.json', Buffer.from('{"ok":true}\n'), MTIME);
    await zip.end();
    await out;

    expect(execFileSync('unzip', ['-t', file]).toString()).toMatch(/No errors detected/);
    const j = await JSZip.loadAsync(fs.readFileSync(file));
    expect(Object.keys(j.files).sort()).toEqual(['SHA256SUMS', 'manifest.json', 'memories/empty.md', 'memories/große 記憶.md', 'memories/tiny.md']);
    expect(await j.file('memories/tiny.md')!.async('string')).toBe('hi');
    expect(await j.file('memories/empty.md')!.async('string')).toBe('');
    expect((await j.file('memories/große 記憶.md')!.async('nodebuffer')).equals(big)).toBe(true);
    expect((await j.file('SHA256SUMS')!.async('nodebuffer')).equals(fs.readFileSync(disk))).toBe(true);
    expect(Math.abs(j.file('manifest.json')!.date.getTime() - MTIME.getTime())).toBeLessThanOrEqual(2000); // DOS time: 2-second steps
    expect(fs.statSync(file).size).toBeLessThan(big.length / 10); // deflated
    expect(await yauzlNames(file)).toHaveLength(5);
  });

  it('writes 70,000 entries (ZIP64 end records) that every reader lists in full, with heap use flat in the entry count', async () => {
    const file = path.join(dir, 'many.zip');
    const zip = new ZipStreamWriter();
    const out = pipeline(zip.output, fs.createWriteStream(file));
    const N = 70_000;
    let heapAt10k = 0;
    for (let i = 0; i < N; i++) {
      await zip.add(`memories/${String(i).padStart(6, '0')}.md`, Buffer.from(`memory ${i}\n`), MTIME);
      if (i === 10_000) {
        gc();
        heapAt10k = process.memoryUsage().heapUsed;
      }
    }
    gc();
    const growth = process.memoryUsage().heapUsed - heapAt10k;
    await zip.end();
    await out;
    // yazl kept ~0.45-0.9 KB per entry (27-54 MiB for these 60,000); here it is counters only.
    expect(growth).toBeLessThan(6 * 1024 * 1024);

    const listing = execFileSync('unzip', ['-t', file], { maxBuffer: 64 * 1024 * 1024 }).toString();
    expect(listing).toMatch(/No errors detected/);
    expect(listing.match(/^\s+testing: /gm)).toHaveLength(N);
    const names = await yauzlNames(file);
    expect(names).toHaveLength(N);
    expect(names[N - 1]).toBe('memories/069999.md');
    const j = await JSZip.loadAsync(fs.readFileSync(file));
    expect(Object.keys(j.files)).toHaveLength(N);
    expect(await j.file('memories/069999.md')!.async('string')).toBe('memory 69999\n');
  }, 120_000);

  it('fails the output when the client goes away, and refuses further entries', async () => {
    const abort = new AbortController();
    const zip = new ZipStreamWriter(abort.signal);
    const sink = fs.createWriteStream(path.join(dir, 'x.zip'));
    const out = pipeline(zip.output, sink);
    await zip.add('a.md', Buffer.from('a'.repeat(100)), MTIME);
    abort.abort();
    await expect(out).rejects.toThrow(/aborted/);
    await expect(zip.add('b.md', Buffer.from('b'), MTIME)).rejects.toThrow(/aborted/);
  });
});
