import { IdempotencyRepository } from '../../src/backends/ports/idempotency.repository';
import { WriteIntentRepository } from '../../src/backends/ports/write-intent.repository';

/** WriteIntentRepository contract (issue 9), run on every document database adapter. */
export function writeIntentRepositoryContract(name: string, make: () => Promise<{ repo: WriteIntentRepository; cleanup(): Promise<void> }>): void {
  describe(`WriteIntentRepository contract: ${name}`, () => {
    let repo: WriteIntentRepository;
    let cleanup: () => Promise<void>;
    beforeEach(async () => ({ repo, cleanup } = await make()));
    afterEach(async () => cleanup());

    it('lists intents older than a time, oldest first, and forgets removed ones (idempotently)', async () => {
      const t0 = Date.UTC(2026, 0, 1);
      await repo.add({ objectKey: 'memories/a/v1-000000000001.md', memoryId: 'a', createdAt: new Date(t0 + 2000) });
      await repo.add({ objectKey: 'memories/b/v1-000000000002.md', memoryId: 'b', createdAt: new Date(t0) });
      await repo.add({ objectKey: 'memories/c/v1-000000000003.md', memoryId: 'c', createdAt: new Date(t0 + 10_000) });
      const old = await repo.olderThan(new Date(t0 + 5000), 10);
      expect(old).toEqual([
        { objectKey: 'memories/b/v1-000000000002.md', memoryId: 'b', createdAt: new Date(t0), kind: 'write' },
        { objectKey: 'memories/a/v1-000000000001.md', memoryId: 'a', createdAt: new Date(t0 + 2000), kind: 'write' },
      ]);
      expect(await repo.olderThan(new Date(t0 + 5000), 1)).toHaveLength(1);
      await repo.remove('memories/b/v1-000000000002.md');
      await repo.remove('memories/b/v1-000000000002.md');
      expect((await repo.olderThan(new Date(t0 + 60_000), 10)).map((i) => i.memoryId)).toEqual(['a', 'c']);
    });

    it('keeps delete intents (issue 46) apart from writes, also when added in bulk', async () => {
      const t0 = Date.UTC(2026, 0, 2);
      await repo.addMany([
        { objectKey: 'memories/d.delete-1', memoryId: 'd', createdAt: new Date(t0), kind: 'delete' },
        { objectKey: 'memories/e.delete-2', memoryId: 'e', createdAt: new Date(t0 + 1), kind: 'delete' },
      ]);
      await repo.add({ objectKey: 'memories/d.v2-000000000004.md', memoryId: 'd', createdAt: new Date(t0 + 2) });
      expect((await repo.olderThan(new Date(t0 + 60_000), 10)).map((i) => [i.memoryId, i.kind])).toEqual([
        ['d', 'delete'],
        ['e', 'delete'],
        ['d', 'write'],
      ]);
      await repo.remove('memories/d.delete-1');
      expect((await repo.olderThan(new Date(t0 + 60_000), 10)).map((i) => i.objectKey)).toEqual(['memories/e.delete-2', 'memories/d.v2-000000000004.md']);
    });
  });
}

/** IdempotencyRepository contract (issue 9), run on every document database adapter. */
export function idempotencyRepositoryContract(name: string, make: () => Promise<{ repo: IdempotencyRepository; cleanup(): Promise<void> }>): void {
  describe(`IdempotencyRepository contract: ${name}`, () => {
    let repo: IdempotencyRepository;
    let cleanup: () => Promise<void>;
    beforeEach(async () => ({ repo, cleanup } = await make()));
    afterEach(async () => cleanup());
    const DAY = 86_400_000;
    const rec = (key: string, fingerprint = 'f1', at = new Date()) => ({ key, fingerprint, status: null, body: null, createdAt: at });

    it('the first claim wins; a repeat sees the running, then the finished record', async () => {
      expect(await repo.claim(rec('k1'), DAY)).toBeNull();
      expect(await repo.claim(rec('k1', 'f2'), DAY)).toMatchObject({ key: 'k1', fingerprint: 'f1', status: null, body: null });
      await repo.complete('k1', 201, '{"ok":true}');
      expect(await repo.claim(rec('k1'), DAY)).toMatchObject({ status: 201, body: '{"ok":true}' });
      expect(await repo.get('k1')).toMatchObject({ status: 201 });
    });

    it('of concurrent claims of one key exactly one wins', async () => {
      const res = await Promise.all(Array.from({ length: 10 }, () => repo.claim(rec('race'), DAY)));
      expect(res.filter((r) => r === null)).toHaveLength(1);
    });

    it('a released key can be claimed again; a finished one is not released', async () => {
      await repo.claim(rec('k2'), DAY);
      await repo.release('k2');
      expect(await repo.get('k2')).toBeNull();
      expect(await repo.claim(rec('k2'), DAY)).toBeNull();
      await repo.complete('k2', 200, '{}');
      await repo.release('k2');
      expect(await repo.get('k2')).toMatchObject({ status: 200 });
    });

    it('a record older than the retention period does not count: the key is claimed afresh', async () => {
      await repo.claim(rec('old', 'f1', new Date(Date.now() - 2 * DAY)), DAY);
      await repo.complete('old', 201, '{"first":true}');
      expect(await repo.claim(rec('old', 'f2'), DAY)).toBeNull();
      expect(await repo.get('old')).toMatchObject({ fingerprint: 'f2', status: null });
    });

    it("forgets a namespace's records (issue 43 purge): all of them, or those whose answer shows one of the given memories", async () => {
      // Keys as IdempotencyInterceptor builds them: 'default' without the ns: part.
      const keys = {
        d: 'token:t1|POST /api/memories|a',
        x1: 'token:t1|ns:acme.x|POST /api/memories|a',
        x2: 'admin|ns:acme.x|POST /api/memories|b',
        x3: 'token:t2|ns:acme.x|POST /api/memories/bulk-delete|c',
        sub: 'token:t1|ns:acme.x/sub|POST /api/memories|a',
        dot: 'token:t1|ns:acmeax|POST /api/memories|a', // '.' is no wildcard
        tricky: 'token:t1|POST /api/memories||ns:acme.x|', // a caller's key that looks like a namespace: default's
      };
      for (const k of Object.values(keys)) await repo.claim(rec(k), DAY);
      await repo.complete(keys.x1, 201, JSON.stringify({ ok: true, memory: { id: 'm1', content: 'secret' }, similar: [] }));
      await repo.complete(keys.x2, 201, JSON.stringify({ ok: true, memory: { id: 'm2' }, similar: [{ id: 'm1', title: 'secret' }] }));
      await repo.complete(keys.x3, 200, JSON.stringify({ ok: true, deleted: 1, ids: ['m1'], missing: [] }));
      await repo.complete(keys.sub, 201, JSON.stringify({ ok: true, memory: { id: 'm1' }, similar: [] }));
      const left = async () => {
        const out: string[] = [];
        for (const [name, k] of Object.entries(keys)) if (await repo.get(k)) out.push(name);
        return out;
      };
      expect(await repo.forget('acme.x', [])).toBe(0);
      expect(await repo.forget('acme.x', ['m1'])).toBe(2); // the answer holding m1 and the one naming it as a near-copy
      expect(await left()).toEqual(['d', 'x3', 'sub', 'dot', 'tricky']);
      expect(await repo.forget('acme.x')).toBe(1);
      expect(await left()).toEqual(['d', 'sub', 'dot', 'tricky']);
      expect(await repo.forget('default')).toBe(2);
      expect(await left()).toEqual(['sub', 'dot']);
    });
  });
}
