import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { memoryDoc } from '../../test/contract/memory-index.contract';
import { FilesystemObjectStore } from '../backends/filesystem/filesystem-object-store';
import { SqliteMemoryIndex } from '../backends/sqlite/sqlite-memory-index';
import { memoryKey } from './memory-id';
import { toMarkdown } from './memory-markdown';
import { ReindexService } from './reindex.service';

describe('ReindexService', () => {
  let dir: string;
  let db: Database.Database;
  let index: SqliteMemoryIndex;
  let store: FilesystemObjectStore;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-reindex-'));
    db = new Database(path.join(dir, 'memstore.db'));
    db.pragma('foreign_keys = ON');
    index = new SqliteMemoryIndex(db);
    store = new FilesystemObjectStore(path.join(dir, 'objects'), Buffer.alloc(32));
  });
  afterEach(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('rebuilds more than one batch of files, newest first afterwards, and replaces what the index had', async () => {
    const docs = Array.from({ length: 1234 }, (_, i) => memoryDoc({ content: `file ${i}`, type: i % 2 ? 'fact' : 'note', tags: [`t${i % 3}`] }));
    for (const d of docs) await store.put(memoryKey(d.id), toMarkdown(d), 'text/markdown');
    const stale = memoryDoc({ content: 'only in the index' });
    await index.insert(stale);

    const report = await new ReindexService(index, store).reindex();
    expect(report).toEqual({ files: 1234, indexed: 1234, orphans: [stale.id], unreadable: [], previous: 1 });
    expect(await index.get(docs[999].id)).toEqual(docs[999]);
    const first = await index.list({ filter: {}, limit: 3, offset: 0 });
    expect(first.rows.map((r) => r.id)).toEqual(docs.slice(-3).reverse().map((d) => d.id));
    expect((await index.stats()).byType).toMatchObject({ fact: 617, note: 617 });
    expect((await index.list({ filter: { tags: ['t1'] }, limit: 5, offset: 0 })).total).toBe(411);
    // A word in every file: more matches than the term window, so the search total is an estimate.
    expect(Math.abs((await index.search({ text: 'file', filter: { tags: ['t1'] }, limit: 5, offset: 0 })).total - 411)).toBeLessThanOrEqual(5);
  });

  it('reports a file whose front matter does not match its name', async () => {
    const d = memoryDoc({ content: 'x' });
    const other = memoryDoc({ content: 'y' });
    await store.put(memoryKey(other.id), toMarkdown(d), 'text/markdown');
    const report = await new ReindexService(index, store).reindex();
    expect(report.unreadable).toEqual([{ key: memoryKey(other.id), reason: `front matter id ${d.id} does not match the file name` }]);
    expect(report.indexed).toBe(0);
  });
});
