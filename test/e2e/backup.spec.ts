import * as fs from 'node:fs';
import * as path from 'node:path';
import request from 'supertest';
import { MemoryIndex } from '../../src/backends/ports/memory-index.port';
import type { ListCursor } from '../../src/backends/ports/memory.model';
import { ObjectStore } from '../../src/backends/ports/object-store.port';
import { SqliteDocumentDatabase } from '../../src/backends/sqlite/sqlite-database';
import { runCli } from '../../src/cli';
import { objectKeyOf } from '../../src/memories/memory-id';
import { parseMarkdown } from '../../src/memories/memory-markdown';
import { memoryDigest } from '../../src/portability/migration';
import { createTestApp, createToken, tempDir } from '../support/app';
import { unzip } from '../support/zip';

jest.setTimeout(180_000);

const SECRET = 'test-secret-key-0123456789abcdef0123456789abcdef';
const CLIENTS = 20;

function cli(argv: string[], env: Record<string, string>): Promise<{ code: number; text: string }> {
  const lines: string[] = [];
  const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) };
  return runCli(argv, { MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_SECRET_KEY: SECRET, ...env }, io).then((code) => ({ code, text: lines.join('\n') }));
}

describe('backup of the embedded default while 20 clients write, restored into a fresh data dir', () => {
  it('has every memory acknowledged before the backup started, and its index agrees with its files', async () => {
    const dataDir = tempDir();
    const a = await createTestApp({ MEMSTORE_DATA_DIR: dataDir, MEMSTORE_SECRET_KEY: SECRET, MEMSTORE_LOG_LEVEL: 'silent' });
    const { plaintext } = await createToken(a, { preset: 'full', rate_limit_per_minute: 0 });
    const acked = new Map<string, string>(); // id -> content, as acknowledged
    let stop = false;
    let failures = 0;
    const client = async (c: number) => {
      for (let i = 0; !stop; i++) {
        const content = `client ${c} write ${i} ${'x'.repeat((i * 37) % 400)}`;
        const res = await request(a.http)
          .post('/api/memories')
          .set('Authorization', `Bearer ${plaintext}`)
          .send({ content, tags: [`c${c}`] });
        if (res.status === 201) acked.set(res.body.memory.id, content);
        else failures++;
      }
    };
    const writers = Array.from({ length: CLIENTS }, (_, c) => client(c));
    try {
      while (acked.size < 200) await new Promise((r) => setTimeout(r, 20));
      const before = new Map(acked); // acknowledged before the backup starts
      const backupDir = path.join(tempDir(), 'backup');
      const res = await cli(['backup', backupDir], { MEMSTORE_DATA_DIR: dataDir });
      expect(res.code).toBe(0);
      expect(res.text).toMatch(/backup of \d+ memories and 1 tokens/);
      await new Promise((r) => setTimeout(r, 200));
      stop = true;
      await Promise.all(writers);
      expect(failures).toBe(0);
      expect(acked.size).toBeGreaterThan(before.size); // the clients really wrote during the backup

      const manifest = JSON.parse(fs.readFileSync(path.join(backupDir, 'backup.json'), 'utf8'));
      expect(manifest).toMatchObject({ format: 'memstore-backup', contains_secret_key: false });
      expect(manifest.memories).toBeGreaterThanOrEqual(before.size);

      // Restore into a fresh data directory and serve it.
      const restored = path.join(tempDir(), 'data');
      const r = await cli(['restore', backupDir, '--data-dir', restored], {});
      expect(r.text).toContain(`restored ${manifest.memories} memories`);
      expect(r.code).toBe(0);
      expect((await cli(['restore', backupDir, '--data-dir', restored], {})).code).toBe(1); // never over existing data

      const b = await createTestApp({ MEMSTORE_DATA_DIR: restored, MEMSTORE_SECRET_KEY: SECRET });
      try {
        for (const [id, content] of before) {
          const got = await request(b.http).get(`/api/memories/${id}`).set('Authorization', `Bearer ${plaintext}`); // the token came along
          expect(got.status).toBe(200);
          expect(got.body.memory.content).toBe(content);
        }
        // The index agrees with the files: one file per indexed memory, each the same memory.
        const index = b.app.get(MemoryIndex);
        const store = b.app.get(ObjectStore);
        const keys: string[] = [];
        for await (const k of store.list('memories/')) keys.push(k);
        expect(keys).toHaveLength(await index.count('default'));
        let after: ListCursor | undefined;
        let checked = 0;
        for (;;) {
          const page = await index.list({ filter: { namespace: 'default' }, limit: 500, offset: 0, after });
          for (const doc of await index.getMany(
            'default',
            page.rows.map((x) => x.id),
          )) {
            const file = parseMarkdown((await store.get(objectKeyOf(doc))).toString('utf8'));
            expect(memoryDigest(file)).toBe(memoryDigest(doc));
            checked++;
          }
          if (page.rows.length < 500) break;
          after = { createdAt: page.rows[page.rows.length - 1].createdAt, id: page.rows[page.rows.length - 1].id };
        }
        expect(checked).toBe(manifest.memories);
      } finally {
        await b.close();
      }
    } finally {
      stop = true;
      await Promise.allSettled(writers);
      await a.close();
    }
  });

  it('refuses a non-empty backup directory and a MongoDB document database, with exit codes', async () => {
    const dataDir = tempDir();
    const db = new SqliteDocumentDatabase(path.join(dataDir, 'memstore.db'));
    await db.init();
    await db.close();
    const busy = tempDir();
    fs.writeFileSync(path.join(busy, 'something'), 'x');
    const res = await cli(['backup', busy], { MEMSTORE_DATA_DIR: dataDir });
    expect(res.text).toMatch(/not empty/);
    expect(res.code).toBe(1);
    expect((await cli(['backup'], { MEMSTORE_DATA_DIR: dataDir })).code).toBe(2);
    expect((await cli(['restore', tempDir()], { MEMSTORE_DATA_DIR: tempDir() })).text).toMatch(/not a memstore backup/);
  });

  it('a command that reads a store refuses a directory without one: exit 1, the directory named, nothing created', async () => {
    const cwd = tempDir();
    const missing = path.join(cwd, 'data');
    const empty = tempDir();
    const out = path.join(cwd, 'export.zip');
    for (const [argv, verb] of [
      [['export', '--out', out], 'export'],
      [['backup', path.join(cwd, 'backup')], 'backup'],
      [['migrate', '--to-filesystem', '--to-data-dir', path.join(cwd, 'new')], 'migrate'],
      [['reindex'], 'reindex'],
      [['embed'], 'embed'],
    ] as const) {
      for (const dataDir of [missing, empty]) {
        const res = await cli([...argv], { MEMSTORE_DATA_DIR: dataDir });
        expect([argv[0], res.code]).toEqual([argv[0], 1]);
        expect(res.text).toContain(`memstore ${verb} failed: `);
        expect(res.text).toContain(dataDir === missing ? `there is no data directory at ${missing}` : `${empty} holds no Memory Store data`);
        expect(res.text).toContain(`nothing to ${verb} (nothing was created)`);
      }
    }
    expect(fs.readdirSync(cwd)).toEqual([]);
    expect(fs.readdirSync(empty)).toEqual([]);

    // import may start a new store, and says where; then export names the directory and backends it reads.
    const note = path.join(tempDir(), 'note.md');
    fs.writeFileSync(note, '# A note\n\nkept in a new store\n');
    const imported = await cli(['import', note], { MEMSTORE_DATA_DIR: missing });
    expect(imported.code).toBe(0);
    expect(imported.text).toContain(`memstore import: creating a new data directory at ${missing}`);
    const exported = await cli(['export', '--out', out], { MEMSTORE_DATA_DIR: missing });
    expect(exported.code).toBe(0);
    expect(exported.text).toContain(`memstore export: data directory ${missing}; embedded SQLite at ${path.join(missing, 'memstore.db')} + filesystem at `);
    expect(exported.text).toContain(`exported 1 of 1 memories to ${out}`);

    // One namespace's backup is its export (decision 0157): --namespace exports only it, and imports back into it.
    fs.writeFileSync(note, '# Alice\n\nkept for one tenant\n');
    expect((await cli(['import', note, '--namespace', 'acme/alice'], { MEMSTORE_DATA_DIR: missing })).code).toBe(0);
    const one = path.join(tempDir(), 'alice.zip');
    const tenant = await cli(['export', '--out', one, '--namespace', 'acme/alice'], { MEMSTORE_DATA_DIR: missing });
    expect(tenant.text).toContain(`exported 1 of 1 memories to ${one}`);
    expect([...(await unzip(fs.readFileSync(one))).entries()].filter(([k]) => k.startsWith('memories/')).map(([, v]) => v.toString('utf8'))).toEqual([expect.stringContaining('kept for one tenant')]);
    expect((await cli(['export', '--out', out], { MEMSTORE_DATA_DIR: missing })).text).toContain('exported 2 of 2 memories');
    expect((await cli(['export', '--out', one, '--namespace', 'Acme'], { MEMSTORE_DATA_DIR: missing })).code).toBe(2);
    const copy = path.join(tempDir(), 'copy');
    expect((await cli(['import', one, '--namespace', 'acme/bob'], { MEMSTORE_DATA_DIR: copy })).code).toBe(0);
    expect((await cli(['export', '--out', path.join(tempDir(), 'bob.zip'), '--namespace', 'acme/bob'], { MEMSTORE_DATA_DIR: copy })).text).toContain('exported 1 of 1 memories');
  });
});
