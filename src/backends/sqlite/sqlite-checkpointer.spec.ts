import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { wheelDoc } from '../../../test/support/word-wheel';
import { SAFETY_CHECKPOINT_PAGES } from './sqlite-checkpointer';
import { SqliteDocumentDatabase } from './sqlite-database';

/**
 * The WAL checkpoint runs on a worker thread (sqlite-checkpointer.ts): written pages reach the
 * database file without the writing connection checkpointing, and closing leaves a clean file.
 */
describe('SqliteCheckpointer', () => {
  let dir: string;
  let file: string;
  let database: SqliteDocumentDatabase;
  const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-ckpt-'));
    file = path.join(dir, 'memstore.db');
    database = new SqliteDocumentDatabase(file);
    await database.init();
  });
  afterEach(async () => {
    await database.close(); // closing twice is harmless
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('copies committed pages into the database file while the writer only appends to the WAL', async () => {
    const before = size(file);
    // One transaction per memory, as creates are; far fewer pages than the writer's own threshold.
    for (let i = 0; i < 200; i++) {
      await database.memories.insert(wheelDoc(i, { idBase: 0x68000000, stride: 3, titleEvery: 2 }));
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    const walPages = size(`${file}-wal`) / 4096;
    expect(walPages).toBeGreaterThan(100);
    expect(walPages).toBeLessThan(SAFETY_CHECKPOINT_PAGES); // so the writer never checkpointed by itself
    const deadline = Date.now() + 10_000;
    while (size(file) <= before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(size(file)).toBeGreaterThan(before + 100 * 1024);
    expect(await database.memories.count('default')).toBe(200);
  });

  it('close ends the thread and its connection: the WAL is folded into the file and removed, nothing is lost', async () => {
    for (let i = 0; i < 50; i++) await database.memories.insert(wheelDoc(i, { idBase: 0x69000000, stride: 3, titleEvery: 2 }));
    expect(size(`${file}-wal`)).toBeGreaterThan(0);
    await database.close();
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    // Everything is in the database file alone.
    const again = new SqliteDocumentDatabase(file);
    await again.init();
    try {
      expect(await again.memories.count('default')).toBe(50);
    } finally {
      await again.close();
    }
  });
});
