import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import request from 'supertest';
import { runCli } from '../../src/cli';
import { AppConfig } from '../../src/config/app-config';
import type { MemoryDto } from '../../src/memories/dto/memory-response.dto';
import { PACE_ITEMS } from '../../src/portability/import-bounds';
import { ImportService } from '../../src/portability/import.service';
import { adminAgent, createTestApp, createToken, tempDir, TestApp } from '../support/app';
import { testBackends } from '../support/backends';
import { binaryParser, makeZip, unzip } from '../support/zip';
import { Api, createMemory, fullAccessApi } from './memories.helpers';

jest.setTimeout(120_000);

const AWKWARD: Array<Record<string, unknown>> = [
  { title: 'Ünïcødé — 日本語 🚀', content: 'Emoji 🧠 and combining e\u0301 and RTL שלום\n', tags: ['ünï', '日本'], agent: 'agént', project: 'prøject' },
  { title: '---', content: '---\nid: 000000000000000000000000\ntype: fact\n---\nnot front matter\n---\n', type: 'fact', scope: 'project' },
  { title: `"double" and 'single' quotes: yes`, content: `He said "no", she said 'yes' \\ backslash: colon # hash`, tags: ['"quoted"', "it's"], type: 'decision' },
  { title: 'null', content: 'true', tags: ['yes', 'no', '1.0', 'null'], agent: '~', project: 'on' },
  { content: '  leading spaces and no title\r\nCRLF line\r\n\ttab', scope: 'user' },
];

function mib(): string {
  // Exactly 1 MiB of UTF-8 with multi-byte characters.
  const unit = 'ab€\n'; // 6 bytes
  const s = unit.repeat(Math.floor(1048576 / 6));
  return s + 'x'.repeat(1048576 - Buffer.byteLength(s));
}

async function exportZip(api: Api, query = ''): Promise<Buffer> {
  const res = await api
    .get(`/api/export${query}`)
    .buffer(true)
    .parse(binaryParser as never);
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toBe('application/zip');
  return res.body as Buffer;
}

function importRaw(api: Api, body: Buffer | string, query = '', type = 'application/zip'): request.Test {
  return api.post(`/api/import${query}`).set('Content-Type', type).send(Buffer.from(body));
}

/** A stored markdown file without its front matter's author block. */
function authorless(file: Buffer): string {
  return file.toString('utf8').replace(/^author:\n(?: {2}.*\n)*/m, '');
}

/** A version answer without the import claims (`author.imported`): what it was before the import. */
function claimless<T>(body: T): T {
  return JSON.parse(JSON.stringify(body), (k, v) => (k === 'imported' ? undefined : v)) as T;
}

async function allMemories(api: Api): Promise<MemoryDto[]> {
  const out: MemoryDto[] = [];
  let after = '';
  for (;;) {
    const res = await api.get(`/api/memories?limit=200${after ? `&after=${after}` : ''}`).expect(200);
    for (const r of res.body.rows) out.push((await api.get(`/api/memories/${r.id}`).expect(200)).body.memory);
    if (!res.body.next_cursor) return out;
    after = res.body.next_cursor;
  }
}

describe.each(testBackends())('export / import on $name', (backend) => {
  let t: TestApp;
  let api: Api;
  beforeAll(async () => {
    t = await createTestApp(await backend.env());
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('round trip: export → wipe → import gives back every memory byte for byte, and a second import changes nothing', async () => {
    for (const m of AWKWARD) await createMemory(api, m);
    await createMemory(api, { title: 'big', content: mib(), tags: ['big'] });
    const before = await allMemories(api);
    const files = new Map<string, Buffer>();
    for (const m of before)
      files.set(
        m.id,
        (
          await api
            .get(`/api/memories/${m.id}/download`)
            .buffer(true)
            .parse(binaryParser as never)
        ).body,
      );
    expect(before).toHaveLength(AWKWARD.length + 1);

    const zip = await exportZip(api);
    const entries = await unzip(zip);
    const manifest = JSON.parse(entries.get('manifest.json')!.toString('utf8'));
    expect(manifest).toMatchObject({ format: 'memstore-export', format_version: 1, service: 'memory-store', count: before.length, filters: {}, history: { dir: 'history/', versions: 0 } });
    expect(manifest.service_version).toMatch(/^\d+\.\d+\.\d+/);
    const sums = entries.get('SHA256SUMS')!.toString('utf8');
    expect(createHash('sha256').update(sums).digest('hex')).toBe(manifest.checksums.sha256);
    for (const m of before) {
      const body = entries.get(`memories/${m.id}.md`)!;
      expect(body.equals(files.get(m.id)!)).toBe(true); // the stored file, byte for byte
      expect(sums).toContain(`${createHash('sha256').update(body).digest('hex')}  memories/${m.id}.md`);
    }

    // Wipe, then import.
    await api.post('/api/memories/bulk-delete', { ids: before.map((m) => m.id) }).expect(200);
    expect((await api.get('/api/memories').expect(200)).body.total).toBe(0);
    const dry = await importRaw(api, zip, '?dry_run=true').expect(200);
    expect(dry.body.items.filter((i: { status: string }) => i.status === 'invalid')).toEqual([]);
    expect(dry.body).toMatchObject({ dry_run: true, format: 'zip', created: before.length, updated: 0, skipped: 0, invalid: 0 });
    expect((await api.get('/api/memories').expect(200)).body.total).toBe(0); // a dry run writes nothing

    const first = await importRaw(api, zip).expect(200);
    expect(first.body).toMatchObject({ ok: true, dry_run: false, created: before.length, updated: 0, skipped: 0, invalid: 0 });
    const after = await allMemories(api);
    expect(after).toEqual(before); // ids, every field, timestamps, content
    for (const m of after) {
      const body = (
        await api
          .get(`/api/memories/${m.id}/download`)
          .buffer(true)
          .parse(binaryParser as never)
      ).body as Buffer;
      // Byte for byte but the author: an imported version names its importer, the file's claim beside it (issue 46).
      expect(authorless(body)).toBe(authorless(files.get(m.id)!));
      expect(body.toString('utf8')).toMatch(/^author:\n(?: {2}.*\n)* {2}claimed:\n/m);
    }
    // Searchable again (the index was rebuilt, not only the files).
    expect((await api.get('/api/memories?q=RTL').expect(200)).body.total).toBe(1);

    const second = await importRaw(api, zip).expect(200);
    expect(second.body).toMatchObject({ created: 0, updated: 0, skipped: before.length, invalid: 0 });
    expect(second.body.items.every((i: { reason: string }) => i.reason.startsWith('unchanged'))).toBe(true);
    expect(await allMemories(api)).toEqual(before);
  });

  it('exports the kept versions as history/<id>/<n>.md and an import into an empty store brings the version history back', async () => {
    const m = await createMemory(api, { title: 'v one', content: 'first body', project: 'history-p', tags: ['h'] });
    await api.patch(`/api/memories/${m.id}`, { title: 'v two', content: 'second body' }).expect(200);
    await api.patch(`/api/memories/${m.id}`, { content: 'third body — ünï' }).expect(200);
    const plain = await createMemory(api, { content: 'never changed', project: 'history-p' });
    const versionsBefore = (await api.get(`/api/memories/${m.id}/versions`).expect(200)).body;
    expect(versionsBefore.total).toBe(3);
    const v1Before = (await api.get(`/api/memories/${m.id}/versions/1`).expect(200)).body;
    const v2Before = (await api.get(`/api/memories/${m.id}/versions/2`).expect(200)).body;

    const zip = await exportZip(api, '?project=history-p');
    const entries = await unzip(zip);
    const manifest = JSON.parse(entries.get('manifest.json')!.toString('utf8'));
    expect(manifest).toMatchObject({ count: 2, history: { dir: 'history/', versions: 2 } });
    expect([...entries.keys()].filter((k) => k.startsWith('history/')).sort()).toEqual([`history/${m.id}/1.md`, `history/${m.id}/2.md`]);
    const sums = entries.get('SHA256SUMS')!.toString('utf8');
    for (const n of [1, 2]) {
      const body = entries.get(`history/${m.id}/${n}.md`)!;
      expect(sums).toContain(`${createHash('sha256').update(body).digest('hex')}  history/${m.id}/${n}.md`);
    }
    expect(entries.get(`history/${m.id}/1.md`)!.toString('utf8')).toContain('first body');
    expect(manifest.checksums.files).toBe(4);

    await api.post('/api/memories/bulk-delete', { ids: [m.id, plain.id] }).expect(200);
    const dry = await importRaw(api, zip, '?dry_run=true').expect(200);
    expect(dry.body).toMatchObject({ created: 2, versions: 2, skipped: 0, invalid: 0 });
    const first = await importRaw(api, zip).expect(200);
    expect(first.body).toMatchObject({ processed: 4, created: 2, versions: 2, updated: 0, skipped: 0, invalid: 0 });
    const versionsAfter = (await api.get(`/api/memories/${m.id}/versions`).expect(200)).body;
    // Every imported version names its importer, with what the file claimed beside it (issue 46).
    for (const r of versionsAfter.rows) expect(r.author.imported).toMatchObject({ claimed_version: r.version });
    expect(claimless(versionsAfter)).toEqual(versionsBefore);
    expect(claimless((await api.get(`/api/memories/${m.id}/versions/1`).expect(200)).body)).toEqual(v1Before);
    expect(claimless((await api.get(`/api/memories/${m.id}/versions/2`).expect(200)).body)).toEqual(v2Before);
    // Restoring an imported version works like any other.
    const restored = await api.post(`/api/memories/${m.id}/versions/1/restore`).expect(200);
    expect(restored.body.memory).toMatchObject({ version: 4, title: 'v one', content: 'first body' });
    await api.delete(`/api/memories/${m.id}`).expect(200);
    await importRaw(api, zip).expect(200);

    // Importing the same archive again changes nothing.
    const again = await importRaw(api, zip).expect(200);
    expect(again.body).toMatchObject({ created: 0, versions: 0, skipped: 4, invalid: 0 });
    expect(claimless((await api.get(`/api/memories/${m.id}/versions`).expect(200)).body)).toEqual(versionsBefore);
  });

  it('keeps supersedes links through export → wipe → import (decision 0130)', async () => {
    const old = await createMemory(api, { content: 'The office is on floor 3', project: 'sup-port' });
    const now = (await api.post('/api/memories', { content: 'The office moved to floor 5', project: 'sup-port', supersedes: [old.id] }).expect(201)).body.memory;
    const before = (await api.get(`/api/memories/${old.id}`).expect(200)).body.memory;
    expect(before).toMatchObject({ superseded_by: now.id, valid_to: now.created_at });

    const zip = await exportZip(api, '?project=sup-port');
    await api.post('/api/memories/bulk-delete', { ids: [old.id, now.id] }).expect(200);
    expect((await importRaw(api, zip).expect(200)).body).toMatchObject({ created: 2, invalid: 0 });
    expect((await api.get(`/api/memories/${old.id}`).expect(200)).body.memory).toMatchObject({ superseded_by: now.id, valid_to: now.created_at, content: before.content });
    expect((await api.get('/api/memories?project=sup-port').expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([now.id]);
    expect((await api.get('/api/memories?q=office&project=sup-port&mode=keyword').expect(200)).body.rows.map((r: { id: string }) => r.id)).toEqual([now.id]);
  });

  it('records the importer as the author of imported versions, beside what the file claimed (issue 46)', async () => {
    const { plaintext, id: tokenId } = await createToken(t, { name: 'importer bot', preset: 'read-write', rate_limit_per_minute: 0 });
    const id = 'aaaaaaaaaaaaaaaaaaaa0046';
    const forged = [
      '---',
      `id: ${id}`,
      'title: Forged',
      'type: note',
      'scope: global',
      'tags: []',
      'created_at: 2001-01-01T00:00:00.000Z',
      'updated_at: 2001-01-02T00:00:00.000Z',
      'version: 7',
      'author: {kind: admin, id: admin, name: null}',
      '---',
      'A note that claims the admin wrote it in 2001.',
    ].join('\n');
    const res = await request(t.http).post('/api/import?format=markdown').set('Authorization', `Bearer ${plaintext}`).set('Content-Type', 'text/markdown').send(forged).expect(200);
    expect(res.body).toMatchObject({ created: 1, invalid: 0 });
    const versions = (await api.get(`/api/memories/${id}/versions`).expect(200)).body;
    expect(versions.rows[0].author).toEqual({
      kind: 'token',
      id: tokenId,
      name: 'importer bot',
      imported: { claimed_author: { kind: 'admin', id: 'admin', name: null }, claimed_version: 7, claimed_created_at: '2001-01-01T00:00:00.000Z', claimed_updated_at: '2001-01-02T00:00:00.000Z' },
    });
    // The stored file says the same, so a rebuild from the object store keeps it.
    const file = (await api.get(`/api/memories/${id}/download`).expect(200)).text;
    expect(file).toContain(tokenId);
  });

  it('checks each file against SHA256SUMS, in the export order and in any other order', async () => {
    const ms = [];
    for (let i = 0; i < 4; i++) ms.push(await createMemory(api, { content: `checked ${i}`, project: 'sums-p' }));
    const entries = await unzip(await exportZip(api, '?project=sums-p'));
    const names = [...entries.keys()];
    const victim = `memories/${ms[2].id}.md`;
    const tampered = new Map(entries);
    tampered.set(victim, Buffer.concat([entries.get(victim)!, Buffer.from('tampered\n')]));
    await api.post('/api/memories/bulk-delete', { ids: ms.map((m) => m.id) }).expect(200);
    for (const order of [names, [...names].reverse()]) {
      const zip = await makeZip(Object.fromEntries(order.map((n) => [n, tampered.get(n)!])));
      const res = await importRaw(api, zip, '?dry_run=true').expect(200);
      expect(res.body).toMatchObject({ created: 3, invalid: 1 });
      expect(res.body.items.find((i: { status: string }) => i.status === 'invalid')).toMatchObject({ file: victim, reason: 'checksum does not match SHA256SUMS' });
    }
  });

  it('exports only what the filters select, and records them in the manifest', async () => {
    const a = await createMemory(api, { content: 'filtered in', project: 'export-p', tags: ['keep'], type: 'task' });
    await createMemory(api, { content: 'filtered out', project: 'export-p', tags: ['other'] });
    const entries = await unzip(await exportZip(api, '?project=export-p&tag=keep&type=task'));
    expect([...entries.keys()].filter((k) => k.startsWith('memories/'))).toEqual([`memories/${a.id}.md`]);
    expect(JSON.parse(entries.get('manifest.json')!.toString()).filters).toEqual({ project: 'export-p', tag: ['keep'], type: 'task' });
    await api.get('/api/export?type=nope').expect(422);
  });

  it('on_conflict: skip keeps, overwrite restores, new_id imports a copy; each idempotent', async () => {
    const m = await createMemory(api, { title: 'conflict', content: 'original', project: 'conflict-p' });
    const zip = await exportZip(api, '?project=conflict-p');
    await api.patch(`/api/memories/${m.id}`, { content: 'changed since the export' }).expect(200);

    const skip = await importRaw(api, zip, '?on_conflict=skip').expect(200);
    expect(skip.body).toMatchObject({ created: 0, updated: 0, skipped: 1 });
    expect(skip.body.items[0].reason).toMatch(/exists/);

    const copy = await importRaw(api, zip, '?on_conflict=new_id').expect(200);
    expect(copy.body).toMatchObject({ created: 1, skipped: 0 });
    const copyId = copy.body.items[0].id;
    expect(copyId).not.toBe(m.id);
    expect((await api.get(`/api/memories/${copyId}`).expect(200)).body.memory).toMatchObject({ content: 'original', created_at: m.created_at });
    expect((await importRaw(api, zip, '?on_conflict=new_id').expect(200)).body).toMatchObject({ created: 0, skipped: 1 });

    const over = await importRaw(api, zip, '?on_conflict=overwrite').expect(200);
    expect(over.body).toMatchObject({ created: 0, updated: 1 });
    // The exported state comes back as a new version (1: created, 2: the patch, 3: the import), history kept.
    expect((await api.get(`/api/memories/${m.id}`).expect(200)).body.memory).toEqual({ ...m, version: 3 });
    expect((await api.get(`/api/memories/${m.id}/versions`).expect(200)).body.total).toBe(3);
    expect((await importRaw(api, zip, '?on_conflict=overwrite').expect(200)).body).toMatchObject({ updated: 0, skipped: 1 });
  });

  it('imports a folder of plain markdown notes (titles from headings or file names, #tags) and reports broken files without stopping', async () => {
    const zip = await makeZip({
      'vault/Meeting notes.md': 'We chose #postgres over #mysql for the #infra/db layer.\n\nNo heading here.',
      'vault/sub/deploy.md': '# Deploy checklist\n\n- run `make` #ops\n- not a tag: issue #42 and a `#code` span\n',
      'vault/obsidian.md': '---\ntags: [from-front-matter, second]\naliases: [x]\n---\n# Obsidian note\nbody #inline\n',
      'vault/broken.md': '---\ntitle: "unterminated\ntags: [a\n---\nbody',
      'vault/unclosed.md': '---\ntitle: never closed\nbody',
      'vault/bad-type.md': '---\nid: 0123456789abcdef01234567\ntype: nonsense\nscope: global\ncreated_at: 2025-01-01T00:00:00.000Z\nupdated_at: 2025-01-01T00:00:00.000Z\n---\nx',
      'vault/empty.md': '   \n',
      'vault/.obsidian/workspace.json': '{}',
      'vault/picture.png': Buffer.from([0x89, 0x50, 0x4e, 0x47]),
    });
    const res = await importRaw(api, zip, '?filename=vault.zip').expect(200);
    expect(res.body).toMatchObject({ created: 3, updated: 0, invalid: 4, skipped: 1 });
    const by = (f: string) => res.body.items.find((i: { file: string }) => i.file === f);
    expect(by('vault/broken.md')).toMatchObject({ status: 'invalid', reason: expect.stringMatching(/front matter is not valid YAML/) });
    expect(by('vault/unclosed.md')).toMatchObject({ status: 'invalid', reason: expect.stringMatching(/not closed/) });
    expect(by('vault/bad-type.md')).toMatchObject({ status: 'invalid', reason: expect.stringMatching(/unknown type/) });
    expect(by('vault/empty.md')).toMatchObject({ status: 'invalid', reason: expect.stringMatching(/empty/) });
    expect(by('vault/picture.png')).toMatchObject({ status: 'skipped' });

    const meeting = (await api.get(`/api/memories/${by('vault/Meeting notes.md').id}`).expect(200)).body.memory;
    expect(meeting).toMatchObject({ title: 'Meeting notes', tags: ['postgres', 'mysql', 'infra/db'], type: 'note', scope: 'global', created_at: '2025-03-04T05:06:07.000Z' });
    expect(meeting.content).toBe('We chose #postgres over #mysql for the #infra/db layer.\n\nNo heading here.');
    const deploy = (await api.get(`/api/memories/${by('vault/sub/deploy.md').id}`).expect(200)).body.memory;
    expect(deploy).toMatchObject({ title: 'Deploy checklist', tags: ['ops'] });
    const obsidian = (await api.get(`/api/memories/${by('vault/obsidian.md').id}`).expect(200)).body.memory;
    expect(obsidian).toMatchObject({ title: 'Obsidian note', tags: ['from-front-matter', 'second', 'inline'], content: '# Obsidian note\nbody #inline\n' });

    // The same folder again: nothing changes.
    expect((await importRaw(api, zip, '?filename=vault.zip').expect(200)).body).toMatchObject({ created: 0, updated: 0, skipped: 4, invalid: 4 });
  });

  it('imports JSONL (our fields), one bad line reported, and streams NDJSON progress when asked', async () => {
    const lines = [
      JSON.stringify({
        id: 'aaaaaaaaaaaaaaaaaaaaaaa1',
        title: 'jsonl one',
        content: 'from jsonl',
        type: 'fact',
        scope: 'agent',
        tags: ['j'],
        agent: 'a',
        project: null,
        created_at: '2024-01-02T03:04:05.678Z',
        updated_at: '2024-02-02T03:04:05.678Z',
      }),
      '{not json',
      JSON.stringify({ content: 'no id, no dates' }),
      '',
      JSON.stringify({ content: 'x', type: 'bogus' }),
    ].join('\n');
    const res = await importRaw(api, lines, '?progress=true&filename=batch.jsonl', 'application/x-ndjson').expect(200);
    expect(res.headers['content-type']).toMatch(/application\/x-ndjson/);
    const events = res.text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'item').map((e) => [e.file, e.status])).toEqual([
      ['batch.jsonl:1', 'created'],
      ['batch.jsonl:2', 'invalid'],
      ['batch.jsonl:3', 'created'],
      ['batch.jsonl:5', 'invalid'],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'report', format: 'jsonl', created: 2, invalid: 2 });
    expect((await api.get('/api/memories/aaaaaaaaaaaaaaaaaaaaaaa1').expect(200)).body.memory).toMatchObject({
      title: 'jsonl one',
      created_at: '2024-01-02T03:04:05.678Z',
      updated_at: '2024-02-02T03:04:05.678Z',
    });
    expect((await importRaw(api, lines, '?filename=batch.jsonl', 'application/x-ndjson').expect(200)).body).toMatchObject({ created: 0, skipped: 2, invalid: 2 });
  });

  it('writes several files at once but reports them in file order; the same id twice in one upload is imported once', async () => {
    const id = (i: number) => `bbbbbbbbbbbbbbbbbbbb${String(i).padStart(4, '0')}`;
    const line = (i: number, content = `parallel ${i}`) =>
      JSON.stringify({ id: id(i), content, project: 'parallel-p', created_at: '2024-03-01T00:00:00.000Z', updated_at: '2024-03-01T00:00:00.000Z' });
    const lines: string[] = [];
    for (let i = 0; i < 40; i++) {
      lines.push(line(i));
      if (i % 10 === 3) lines.push('{broken');
      if (i % 10 === 6) lines.push(line(i)); // the same memory again, right behind it
      if (i === 20) lines.push(line(5, 'a different memory with the id of line 6')); // conflicts with an earlier one
    }
    const res = await importRaw(api, lines.join('\n'), '?filename=par.jsonl', 'application/x-ndjson').expect(200);
    expect(res.body.items.map((i: { file: string }) => i.file)).toEqual(lines.map((_, n) => `par.jsonl:${n + 1}`));
    expect(res.body).toMatchObject({ processed: lines.length, created: 40, updated: 0, skipped: 5, invalid: 4 });
    const skipped = res.body.items.filter((i: { status: string }) => i.status === 'skipped');
    expect(skipped.filter((i: { reason: string }) => i.reason.startsWith('unchanged'))).toHaveLength(4);
    expect(skipped.filter((i: { reason: string }) => /exists \(on_conflict=skip\)/.test(i.reason))).toHaveLength(1);
    expect((await api.get('/api/memories?project=parallel-p&limit=1').expect(200)).body.total).toBe(40);
    expect((await api.get(`/api/memories/${id(5)}`).expect(200)).body.memory).toMatchObject({ content: 'parallel 5', version: 1 });
    // Again: nothing changes.
    expect((await importRaw(api, lines.join('\n'), '?filename=par.jsonl', 'application/x-ndjson').expect(200)).body).toMatchObject({ created: 0, updated: 0, skipped: 45, invalid: 4 });
  });

  it('refuses uploads it cannot take, with the error envelope', async () => {
    const bad = await importRaw(api, 'PK\x03\x04 not really a zip').expect(422);
    expect(bad.body.error ?? bad.body.detail).toBeDefined();
    await api.post('/api/import').send({ content: 'json' }).expect(415);
    const reader = await createToken(t, { preset: 'read-only' });
    await request(t.http).post('/api/import').set('Authorization', `Bearer ${reader.plaintext}`).set('Content-Type', 'text/markdown').send('# x').expect(403);
    await request(t.http).get('/api/export').expect(401);
  });

  it('the admin session exports everything', async () => {
    const agent = await adminAgent(t);
    const res = await agent
      .get('/api/export')
      .buffer(true)
      .parse(binaryParser as never)
      .expect(200);
    const entries = await unzip(res.body as Buffer);
    const total = (await api.get('/api/memories?include_superseded=true').expect(200)).body.total;
    expect(JSON.parse(entries.get('manifest.json')!.toString()).count).toBe(total);
  });
});

/**
 * The hostile-archive set (issue 46 items 3 and 4, decision 0070): stored entries, zip bombs,
 * line floods, uploads and imports the client walks away from, a temp directory that cannot be
 * written, and an import's share of the event loop. One app with small bounds.
 */
describe('import bounds: hostile archives', () => {
  let t: TestApp;
  let api: Api;
  let port: number;
  let tmpDir: string;
  const uploads = () => fs.readdirSync(tmpDir);
  const total = async (project: string) => (await api.get(`/api/memories?project=${project}&limit=1`).expect(200)).body.total as number;
  /** Waits (polling) until no upload is left in the temp directory; the jest timeout is the bound. */
  const noUploadsLeft = async () => {
    while (uploads().length > 0) await new Promise((r) => setTimeout(r, 20));
  };
  const crashedPid = 4_194_000 + Math.floor(Math.random() * 300); // above any pid in use here

  beforeAll(async () => {
    tmpDir = tempDir('memstore-import-tmp-');
    // What a killed run leaves behind: its upload directories (its pid is gone), and ours from an
    // earlier run with the same pid (a container's process 1). Another live process's stays.
    for (const name of [`${crashedPid}-aaaaaa`, `${process.pid}-bbbbbb`, `${process.ppid}-cccccc`]) {
      fs.mkdirSync(path.join(tmpDir, name));
      fs.writeFileSync(path.join(tmpDir, name, 'upload'), 'left behind');
    }
    expect(() => process.kill(crashedPid, 0)).toThrow();
    t = await createTestApp({ MEMSTORE_IMPORT_TMP_DIR: tmpDir, MEMSTORE_IMPORT_MAX_BYTES: String(1024 * 1024), MEMSTORE_IMPORT_MAX_ITEMS: '5000' });
    await new Promise<void>((resolve) => t.http.listen(0, '127.0.0.1', () => resolve()));
    port = (t.http.address() as AddressInfo).port;
    api = await fullAccessApi(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('removes the uploads a crashed run left in MEMSTORE_IMPORT_TMP_DIR at start, not those of a live process', () => {
    expect(uploads()).toEqual([`${process.ppid}-cccccc`]);
    fs.rmSync(path.join(tmpDir, `${process.ppid}-cccccc`), { recursive: true });
  });

  it('imports a zip of stored (uncompressed) entries, over HTTP (with and without progress) and with `memstore import`', async () => {
    const notes = { 'notes/a.md': '# Stored A\nshort note #stored', 'notes/b.md': 'stored b', 'batch.jsonl': `${JSON.stringify({ content: 'stored jsonl', project: 'stored-p' })}\n` };
    const zip = await makeZip(notes, undefined, { store: true });
    expect(zip.readUInt16LE(8)).toBe(0); // method 0: stored
    const res = await importRaw(api, zip, '?filename=notes.zip').expect(200);
    expect(res.body).toMatchObject({ format: 'zip', processed: 3, created: 3, invalid: 0 });
    const progress = await importRaw(api, zip, '?progress=true').expect(200);
    expect(
      progress.text
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).type),
    ).toEqual(['item', 'item', 'item', 'report']);

    const dataDir = tempDir();
    const file = path.join(dataDir, 'notes.zip');
    fs.writeFileSync(file, zip);
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    const code = await runCli(
      ['import', file],
      { MEMSTORE_DATA_DIR: dataDir, MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_SECRET_KEY: 'cli-test-secret-key-0123456789abcdef', MEMSTORE_IMPORT_TMP_DIR: tmpDir },
      io,
    );
    expect(out.join('\n')).toContain('zip: 3 files; created 3, updated 0, skipped 0, invalid 0');
    expect(code).toBe(0);
    expect(uploads()).toEqual([]);
  });

  it('refuses a zip bomb by its compression ratio, and a line flood by the item limit, before writing anything', async () => {
    // {}\n lines: 6 MB in a few KB (the attack's 783 KB zip held ~268 million of them).
    const bomb = await makeZip({ 'flood.jsonl': Buffer.alloc(6 * 1024 * 1024, '{}\n') });
    expect(bomb.length).toBeLessThan(64 * 1024);
    const r1 = await importRaw(api, bomb).expect(413);
    expect(r1.body).toEqual({ ok: false, error: expect.stringMatching(/^"flood\.jsonl" unpacks to 6291456 bytes from \d+ \(more than 100 times; MEMSTORE_IMPORT_MAX_RATIO\)/) });

    const flood = Buffer.from(`${JSON.stringify({ content: 'first line', project: 'flood-p' })}\n${'{}\n'.repeat(5000)}`);
    for (const [body, type] of [
      [flood, 'application/x-ndjson'],
      [await makeZip({ 'flood.jsonl': flood }, undefined, { store: true }), 'application/zip'],
      [await makeZip(Object.fromEntries(Array.from({ length: 5001 }, (_, i) => [`n/${i}.md`, ''])), undefined, { store: true }), 'application/zip'],
    ] as const) {
      const r = await importRaw(api, body, '', type).expect(413);
      expect(r.body).toEqual({ ok: false, error: 'The upload holds more than 5000 items (files and JSONL lines; MEMSTORE_IMPORT_MAX_ITEMS): nothing was imported' });
    }
    expect(await total('flood-p')).toBe(0);
    expect(uploads()).toEqual([]);
  });

  it('answers 413 above MEMSTORE_IMPORT_MAX_BYTES and imports nothing', async () => {
    const res = await importRaw(api, `# big\n${'x'.repeat(1024 * 1024)}`, '', 'text/markdown').expect(413);
    expect(JSON.stringify(res.body)).toMatch(/MEMSTORE_IMPORT_MAX_BYTES/);
    expect(uploads()).toEqual([]);
  });

  it('an upload the client cuts off: temp file removed, the token can import again; meanwhile a second import of the token is 429', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST /api/import?filename=x.jsonl HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.bearer}\r\nContent-Type: application/x-ndjson\r\nContent-Length: 500000\r\n\r\n`);
    socket.write(`${JSON.stringify({ content: 'half an upload', project: 'cut-p' })}\n`.repeat(100));
    while (uploads().length === 0) await new Promise((r) => setTimeout(r, 10));
    const busy = await importRaw(api, '# second', '', 'text/markdown').expect(429);
    expect(busy.headers['retry-after']).toBe('5');
    expect(busy.body).toEqual({ ok: false, error: expect.stringMatching(/MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN/) });
    socket.destroy();
    await noUploadsLeft();
    expect(await total('cut-p')).toBe(0);
    await importRaw(api, '# after the cut', '', 'text/markdown').expect(200);
  });

  it('an import (progress=true) whose client stops reading and leaves is stopped: temp file removed, the rest not imported', async () => {
    const n = 3000;
    const body = Array.from({ length: n }, (_, i) => JSON.stringify({ content: `left ${i}`, project: 'left-p', title: 't'.repeat(200) })).join('\n');
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.pause(); // never reads the progress lines: the server's writes wait on `drain`
    socket.write(
      `POST /api/import?progress=true&filename=${'f'.repeat(200)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${api.bearer}\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
    );
    socket.write(body);
    while ((await total('left-p')) === 0) await new Promise((r) => setTimeout(r, 20));
    socket.destroy();
    await noUploadsLeft();
    const stoppedAt = await total('left-p');
    expect(stoppedAt).toBeLessThan(n);
    // Stopped for good: the token's slot is free and nothing more arrives.
    await importRaw(api, '# after the leave', '', 'text/markdown').expect(200);
    expect(await total('left-p')).toBe(stoppedAt);
  });

  it('a temp directory that cannot be written is a 503 in the envelope naming the setting (not the path), and the time bound stops an import with 413', async () => {
    const limits = t.app.get(AppConfig).importLimits;
    const saved = { ...limits };
    const file = path.join(tmpDir, 'not-a-dir');
    fs.writeFileSync(file, '');
    try {
      limits.tmpDir = path.join(file, 'sub'); // ENOTDIR, like EROFS on `docker run --read-only` without a tmpfs
      const res = await importRaw(api, '# x', '?filename=secret-name.md', 'text/markdown').expect(503);
      expect(res.body).toEqual({
        ok: false,
        error: expect.stringMatching(/^Import unavailable: the temporary directory for uploads cannot be written \(ENOTDIR\); the operator sets MEMSTORE_IMPORT_TMP_DIR/),
      });
      expect(res.headers['retry-after']).toBe('60');
      expect(JSON.stringify(res.body)).not.toContain(tmpDir);
      Object.assign(limits, saved);
      limits.maxSeconds = 0.001;
      // 5,000 writes cannot all be done within 1 ms: the import is stopped between two of them.
      const lines = Array.from({ length: 5000 }, (_, i) => JSON.stringify({ content: `too late ${i}`, project: 'late-p' })).join('\n');
      const late = await importRaw(api, lines, '', 'application/x-ndjson').expect(413);
      expect(late.body).toEqual({ ok: false, error: expect.stringMatching(/^The import ran longer than 0.001 s \(MEMSTORE_IMPORT_MAX_SECONDS\)/) });
      expect(await total('late-p')).toBeLessThan(5000);
    } finally {
      Object.assign(limits, saved);
      fs.rmSync(file);
    }
    await importRaw(api, '# fine again', '', 'text/markdown').expect(200);
  });

  it('lets the event loop turn at least every PACE_ITEMS lines of a flood (work chunked, not one long stall)', async () => {
    const lines = 5000;
    const dir = tempDir();
    const file = path.join(dir, 'flood.jsonl');
    fs.writeFileSync(file, '{}\n'.repeat(lines)); // one 15 KB read: no I/O between the items
    let turns = 0;
    let running = true;
    const turn = () => {
      turns++;
      if (running) setImmediate(turn);
    };
    setImmediate(turn);
    const report = await t.app.get(ImportService).importFile(file, { onConflict: 'skip', dryRun: true, format: 'jsonl', filename: 'flood.jsonl', namespace: 'default' });
    running = false;
    expect(report).toMatchObject({ processed: lines, invalid: lines });
    expect(turns).toBeGreaterThanOrEqual(lines / PACE_ITEMS);
  });
});
