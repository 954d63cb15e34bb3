import { createHash } from 'node:crypto';
import { InvalidObjectKeyError } from '../../src/backends/ports/object-key';
import { ObjectStore } from '../../src/backends/ports/object-store.port';
import { NotFoundError } from '../../src/common/errors';

/**
 * Behaviour every ObjectStore adapter must have (filesystem now, S3 in the production-backends
 * work). `make()` returns a fresh, empty store (own directory / bucket) and its cleanup.
 */
export function objectStoreContract(name: string, make: () => Promise<{ store: ObjectStore; cleanup(): Promise<void> }>): void {
  describe(`ObjectStore contract: ${name}`, () => {
    let store: ObjectStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await make());
    });
    afterEach(async () => {
      await cleanup();
    });

    it('puts and gets bytes back exactly (UTF-8, binary, empty)', async () => {
      const text = '---\ntitle: Café\n---\nBody with ünïcödé, emoji 🚀 and\r\nCRLF\n';
      await store.put('memories/a.md', text, 'text/markdown; charset=utf-8');
      expect((await store.get('memories/a.md')).toString('utf8')).toBe(text);
      const bin = Buffer.from([0, 1, 2, 255, 254, 10, 13]);
      await store.put('bin/x', bin, 'application/octet-stream');
      expect(Buffer.compare(await store.get('bin/x'), bin)).toBe(0);
      await store.put('empty', '', 'text/plain');
      expect((await store.get('empty')).length).toBe(0);
    });

    it('overwrites an existing key', async () => {
      await store.put('memories/a.md', 'one', 'text/plain');
      await store.put('memories/a.md', 'two', 'text/plain');
      expect((await store.get('memories/a.md')).toString()).toBe('two');
    });

    it('throws NotFoundError for a missing key', async () => {
      await expect(store.get('memories/missing.md')).rejects.toBeInstanceOf(NotFoundError);
    });

    it('deletes, and deleting a missing key is not an error', async () => {
      await store.put('memories/a.md', 'x', 'text/plain');
      await store.delete('memories/a.md');
      await expect(store.get('memories/a.md')).rejects.toBeInstanceOf(NotFoundError);
      await expect(store.delete('memories/a.md')).resolves.toBeUndefined();
      await expect(store.delete('never/was.md')).resolves.toBeUndefined();
    });

    it('lists every key under a prefix, and only those', async () => {
      const keys = ['memories/a.md', 'memories/b.md', 'memories/sub/c.md', 'other/d.md', 'memoriesx.md'];
      for (const k of keys) await store.put(k, k, 'text/plain');
      const listed: string[] = [];
      for await (const k of store.list('memories/')) listed.push(k);
      expect(listed.sort()).toEqual(['memories/a.md', 'memories/b.md', 'memories/sub/c.md']);
      const all: string[] = [];
      for await (const k of store.list('')) all.push(k);
      expect(all.sort()).toEqual([...keys].sort());
    });

    it('lists nothing for an empty prefix directory', async () => {
      const listed: string[] = [];
      for await (const k of store.list('memories/')) listed.push(k);
      expect(listed).toEqual([]);
    });

    it('does not list a key while it is being written, nor temp files after', async () => {
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.put(`memories/${i}.md`, 'x'.repeat(10000), 'text/plain')));
      const listed: string[] = [];
      for await (const k of store.list('')) listed.push(k);
      expect(listed.sort()).toEqual(Array.from({ length: 20 }, (_, i) => `memories/${i}.md`).sort());
    });

    it('never leaves a half-written object: concurrent writers of one key end with one whole body', async () => {
      const bodies = Array.from({ length: 8 }, (_, i) => String(i).repeat(200_000));
      await Promise.all(bodies.map((b) => store.put('memories/race.md', b, 'text/plain')));
      const got = (await store.get('memories/race.md')).toString();
      expect(bodies).toContain(got);
    });

    it.each([['../escape.md'], ['memories/../../escape.md'], ['/etc/passwd'], ['memories\\..\\x.md'], ['memories/a\0.md'], ['memories//a.md'], ['./a.md'], [''], ['.tmp/a.md'], ['x'.repeat(2000)]])(
      'refuses the unsafe key %j on put, get, delete and signedUrl',
      async (key) => {
        await expect(store.put(key, 'x', 'text/plain')).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.get(key)).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidObjectKeyError);
        await expect(store.signedUrl(key, 60, { baseUrl: 'http://127.0.0.1:1', filename: 'a.md' })).rejects.toBeInstanceOf(InvalidObjectKeyError);
      },
    );

    it('signs a URL that names the object and expires after the TTL', async () => {
      await store.put('memories/a.md', 'x', 'text/markdown');
      const before = Date.now();
      const s = await store.signedUrl('memories/a.md', 120, { baseUrl: 'http://127.0.0.1:9', filename: 'a.md' });
      const url = new URL(s.url);
      expect(['http:', 'https:']).toContain(url.protocol);
      expect(decodeURIComponent(url.pathname)).toContain('memories/a.md');
      expect(s.expiresAt.getTime()).toBeGreaterThanOrEqual(before + 119_000);
      expect(s.expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 121_000);
      // Two different keys never share a signature.
      const other = await store.signedUrl('memories/b.md', 120, { baseUrl: 'http://127.0.0.1:9', filename: 'b.md' });
      expect(hash(other.url)).not.toBe(hash(s.url));
    });

    it('probes successfully and leaves nothing behind', async () => {
      await store.probe();
      const listed: string[] = [];
      for await (const k of store.list('')) listed.push(k);
      expect(listed).toEqual([]);
    });

    it('describes itself', () => {
      expect(store.describe()).toMatch(/\S/);
      expect(typeof store.kind).toBe('string');
    });
  });
}

function hash(s: string): string {
  return createHash('sha256').update(new URL(s).search).digest('hex');
}
