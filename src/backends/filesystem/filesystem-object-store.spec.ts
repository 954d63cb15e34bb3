import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FilesystemObjectStore } from './filesystem-object-store';

describe('FilesystemObjectStore.sweepTemporary (issue 9: temp files left by a crash)', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-fs-sweep-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('removes temp files older than the grace period, keeps newer ones and every object', async () => {
    const store = new FilesystemObjectStore(dir, Buffer.alloc(32));
    await store.put('memories/a.md', 'kept', 'text/markdown');
    const tmp = path.join(dir, '.tmp');
    fs.writeFileSync(path.join(tmp, 'a.md.123.dead'), 'half a write');
    const old = new Date(Date.now() - 3_600_000);
    fs.utimesSync(path.join(tmp, 'a.md.123.dead'), old, old);
    fs.writeFileSync(path.join(tmp, 'b.md.456.live'), 'a write in progress');

    expect(await store.sweepTemporary(60_000)).toBe(1);
    expect(fs.readdirSync(tmp)).toEqual(['b.md.456.live']);
    expect((await store.get('memories/a.md')).toString()).toBe('kept');
  });

  it('has nothing to do on a store without a temp directory', async () => {
    expect(await new FilesystemObjectStore(path.join(dir, 'fresh'), Buffer.alloc(32)).sweepTemporary(0)).toBe(0);
  });
});
