import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { memoryDoc } from '../../test/contract/memory-index.contract';
import { FilesystemObjectStore } from '../backends/filesystem/filesystem-object-store';
import { SqliteMemoryIndex } from '../backends/sqlite/sqlite-memory-index';
import { SqliteWriteIntentRepository } from '../backends/sqlite/sqlite-write-intent.repository';
import { BackendUnavailableError } from '../common/errors';
import { memoryKey, versionKey } from './memory-id';
import { toMarkdown } from './memory-markdown';
import { ReindexService } from './reindex.service';

describe('ReindexService', () => {
  let dir: string;
  let db: Database.Database;
  let index: SqliteMemoryIndex;
  let store: FilesystemObjectStore;
  let intents: SqliteWriteIntentRepository;
  const service = () => new ReindexService(index, store, intents);

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-reindex-'));
    db = new Database(path.join(dir, 'memstore.db'));
    db.pragma('foreign_keys = ON');
    index = new SqliteMemoryIndex(db);
    store = new FilesystemObjectStore(path.join(dir, 'objects'), Buffer.alloc(32));
    intents = new SqliteWriteIntentRepository(db);
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

    const report = await service().reindex();
    expect(report).toEqual({ files: 1234, indexed: 1234, orphans: [stale.id], unreadable: [], unacknowledged: [], superseded: [], deleted: [], previous: 1, dryRun: false });
    expect(await index.get('default', docs[999].id)).toEqual(docs[999]);
    const first = await index.list({ filter: { namespace: 'default' }, limit: 3, offset: 0 });
    expect(first.rows.map((r) => r.id)).toEqual(
      docs
        .slice(-3)
        .reverse()
        .map((d) => d.id),
    );
    expect((await index.stats('default')).byType).toMatchObject({ fact: 617, note: 617 });
    expect((await index.list({ filter: { namespace: 'default', tags: ['t1'] }, limit: 5, offset: 0 })).total).toBe(411);
    // A word in every file: more matches than the term window, so the search total is an estimate.
    expect(Math.abs((await index.search({ text: 'file', filter: { namespace: 'default', tags: ['t1'] }, limit: 5, offset: 0 })).total - 411)).toBeLessThanOrEqual(5);
  });

  it('reports a file whose front matter does not match its name', async () => {
    const d = memoryDoc({ content: 'x' });
    const other = memoryDoc({ content: 'y' });
    await store.put(memoryKey(other.id), toMarkdown(d), 'text/markdown');
    const report = await service().reindex();
    expect(report.unreadable).toEqual([{ key: memoryKey(other.id), reason: `front matter id ${d.id} does not match the file name` }]);
    expect(report.indexed).toBe(0);
  });

  it('leaves the old index intact when the store fails in the middle of the listing', async () => {
    const kept = memoryDoc({ content: 'already indexed' });
    await index.insert(kept);
    for (let i = 0; i < 5; i++) {
      const d = memoryDoc({ content: `file ${i}` });
      await store.put(memoryKey(d.id), toMarkdown(d), 'text/markdown');
    }
    const original = store.list.bind(store);
    store.list = async function* (prefix: string) {
      let n = 0;
      for await (const k of original(prefix)) {
        if (++n === 3) throw new BackendUnavailableError('Object store', 'connection reset while listing');
        yield k;
      }
    };
    await expect(service().reindex()).rejects.toThrow(/connection reset/);
    expect(await index.count('default')).toBe(1);
    expect(await index.get('default', kept.id)).toEqual(kept);
  });

  it('leaves the old index intact when a file cannot be read from a failing store', async () => {
    const kept = memoryDoc({ content: 'already indexed' });
    await index.insert(kept);
    const d = memoryDoc({ content: 'on disk' });
    await store.put(memoryKey(d.id), toMarkdown(d), 'text/markdown');
    store.get = async () => {
      throw new BackendUnavailableError('Object store', 'timeout');
    };
    await expect(service().reindex()).rejects.toThrow(/timeout/);
    expect(await index.get('default', kept.id)).toEqual(kept);
  });

  it('leaves out (and reports) files of unacknowledged writes, keeps every version as history, and --dry-run changes nothing', async () => {
    const v1 = memoryDoc({ title: 'first', content: 'one' });
    const k1 = versionKey('default', v1.id, 1);
    const v2 = { ...v1, title: 'second ---', content: 'two', version: 2, updatedAt: new Date(v1.updatedAt.getTime() + 5) };
    const k2 = versionKey('default', v1.id, 2);
    // A third write whose index update never happened (the process died): its intent is still pending.
    const v3 = { ...v2, title: 'never acknowledged', content: 'three', version: 3 };
    const k3 = versionKey('default', v1.id, 3);
    const ghost = memoryDoc({ content: 'a create that failed' });
    const kg = versionKey('default', ghost.id, 1);
    for (const [k, d] of [
      [k1, v1],
      [k2, v2],
      [k3, v3],
      [kg, ghost],
    ] as const)
      await store.put(k, toMarkdown(d), 'text/markdown');
    await intents.add({ objectKey: k3, memoryId: v1.id, createdAt: new Date() });
    await intents.add({ objectKey: kg, memoryId: ghost.id, createdAt: new Date() });

    const dry = await service().reindex({ dryRun: true });
    expect(dry).toMatchObject({ dryRun: true, files: 4, indexed: 1, unacknowledged: [k3, kg].sort(), previous: 0 });
    expect(await index.count('default')).toBe(0);

    const report = await service().reindex();
    expect(report).toMatchObject({ dryRun: false, indexed: 1, unreadable: [] });
    expect(report.unacknowledged.sort()).toEqual([k3, kg].sort());
    expect(await index.get('default', ghost.id)).toBeNull();
    expect(await index.get('default', v1.id)).toMatchObject({ title: 'second ---', content: 'two', version: 2, objectKey: k2 });
    const h = await index.history('default', v1.id, 10, 0);
    expect(h.rows.map((r) => [r.version, r.objectKey, r.title])).toEqual([
      [2, k2, 'second ---'],
      [1, k1, 'first'],
    ]);
  });
});
