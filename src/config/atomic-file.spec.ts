import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { removeStaleTempFiles, writeFileAtomic } from './atomic-file';

// The CommonJS module object itself (the `import * as` namespace cannot be spied on).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const nodeFs: typeof fs = require('node:fs');

function dir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-atomic-'));
}

describe('writeFileAtomic', () => {
  afterEach(() => jest.restoreAllMocks());

  it('writes the file with the given mode and leaves no temp file', () => {
    const d = dir();
    const f = path.join(d, 'x.json');
    writeFileAtomic(f, 'one', 0o600);
    writeFileAtomic(f, 'two', 0o600);
    expect(fs.readFileSync(f, 'utf8')).toBe('two');
    expect(fs.statSync(f).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(d)).toEqual(['x.json']);
  });

  it('keeps the old file intact when the write fails midway, and removes the temp file', () => {
    const d = dir();
    const f = path.join(d, 'x.json');
    writeFileAtomic(f, 'old contents');
    const realWrite = fs.writeSync;
    let calls = 0;
    jest.spyOn(nodeFs, 'writeSync').mockImplementation(((fd: number, buf: Buffer, off: number) => {
      calls += 1;
      if (calls > 1) throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      return (realWrite as (fd: number, b: Buffer, o: number, l: number) => number)(fd, buf, off, 3); // a partial write first
    }) as typeof fs.writeSync);
    expect(() => writeFileAtomic(f, 'new contents that will not fit')).toThrow(/ENOSPC/);
    expect(calls).toBe(2);
    expect(fs.readFileSync(f, 'utf8')).toBe('old contents');
    expect(fs.readdirSync(d)).toEqual(['x.json']);
  });

  it('keeps the old file when the process dies before the rename (stale temp file cleaned up later)', () => {
    const d = dir();
    const f = path.join(d, 'x.json');
    writeFileAtomic(f, 'old');
    jest.spyOn(nodeFs, 'renameSync').mockImplementation(() => {
      throw new Error('simulated crash before rename');
    });
    expect(() => writeFileAtomic(f, 'new')).toThrow(/simulated crash/);
    jest.restoreAllMocks();
    expect(fs.readFileSync(f, 'utf8')).toBe('old');
    // A real crash would leave the temp file behind: simulate one that is old enough.
    const stale = path.join(d, '.x.json.12345.abcdef.tmp');
    fs.writeFileSync(stale, 'torn');
    const fresh = path.join(d, '.x.json.12346.abcdef.tmp');
    fs.writeFileSync(fresh, 'being written');
    const past = new Date(Date.now() - 120_000);
    fs.utimesSync(stale, past, past);
    removeStaleTempFiles(f);
    expect(fs.readdirSync(d).sort()).toEqual(['.x.json.12346.abcdef.tmp', 'x.json']);
  });
});
