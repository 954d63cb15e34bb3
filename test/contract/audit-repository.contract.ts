import { randomBytes } from 'node:crypto';
import { AuditEntry, AuditRepository, newAuditId } from '../../src/backends/ports/audit.repository';

export interface AuditRepositoryHarness {
  repo: AuditRepository;
  cleanup(): Promise<void>;
}

/** An entry at `at` (default now) with sensible fields; override any. */
export function auditFactory(over: Partial<AuditEntry> = {}): AuditEntry {
  const at = over.at ?? new Date();
  return {
    id: newAuditId(at, randomBytes(6).toString('hex')),
    at,
    action: 'token.create',
    outcome: 'success',
    actor: { kind: 'admin', id: 'admin', name: 'admin' },
    target: randomBytes(8).toString('hex'),
    address: '127.0.0.1',
    requestId: 'req-1',
    detail: { name: 'ci', scopes: ['memory:read'] },
    ...over,
  };
}

/**
 * The behaviour every AuditRepository adapter must show.
 * Usage: auditRepositoryContract('sqlite', async () => ({ repo, cleanup }))
 */
export function auditRepositoryContract(name: string, make: () => Promise<AuditRepositoryHarness>): void {
  describe(`AuditRepository contract: ${name}`, () => {
    let h: AuditRepositoryHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('reads back what it appended, field for field', async () => {
      const e = auditFactory({ detail: { keys: ['docdb_uri'], nested: { n: 1 } }, outcome: 'failure', actor: { kind: 'token', id: 'abcdef0123456789', name: 'agent' } });
      await h.repo.append(e);
      expect(await h.repo.list({ limit: 10 })).toEqual({ entries: [e], hasMore: false });
    });

    it('lists newest first and pages with `before` (the last id of the previous page)', async () => {
      const t0 = Date.now() - 10_000;
      const all = Array.from({ length: 7 }, (_, i) => auditFactory({ at: new Date(t0 + i * 1000) }));
      for (const e of [...all].reverse()) await h.repo.append(e); // insertion order does not matter
      const newestFirst = [...all].reverse().map((e) => e.id);
      const p1 = await h.repo.list({ limit: 3 });
      expect(p1.entries.map((e) => e.id)).toEqual(newestFirst.slice(0, 3));
      expect(p1.hasMore).toBe(true);
      const p2 = await h.repo.list({ limit: 3, before: p1.entries[2].id });
      expect(p2.entries.map((e) => e.id)).toEqual(newestFirst.slice(3, 6));
      const p3 = await h.repo.list({ limit: 3, before: p2.entries[2].id });
      expect(p3).toEqual({ entries: [all[0]], hasMore: false });
    });

    it('filters by action, actor and since, combined', async () => {
      const old = new Date(Date.now() - 3_600_000);
      const a = auditFactory({ action: 'token.revoke', actor: { kind: 'admin', id: 'admin', name: 'admin' } });
      const b = auditFactory({ action: 'memory.delete', actor: { kind: 'token', id: '1111222233334444', name: 'bot' } });
      const c = auditFactory({ action: 'memory.delete', actor: { kind: 'token', id: '1111222233334444', name: 'bot' }, at: old });
      const d = auditFactory({ action: 'memory.delete', actor: { kind: 'token', id: '9999888877776666', name: 'other' } });
      for (const e of [a, b, c, d]) await h.repo.append(e);
      const ids = async (q: Parameters<AuditRepository['list']>[0]) => (await h.repo.list(q)).entries.map((e) => e.id).sort();
      expect(await ids({ limit: 10, action: 'token.revoke' })).toEqual([a.id]);
      expect(await ids({ limit: 10, actor: '1111222233334444' })).toEqual([b.id, c.id].sort());
      expect(await ids({ limit: 10, action: 'memory.delete', since: new Date(Date.now() - 60_000) })).toEqual([b.id, d.id].sort());
      expect(await ids({ limit: 10, action: 'memory.delete', actor: '1111222233334444', since: new Date(Date.now() - 60_000) })).toEqual([b.id]);
      expect(await ids({ limit: 10, action: 'no.such' })).toEqual([]);
      // Filter values are plain values, never query operators.
      expect(await ids({ limit: 10, actor: { $ne: null } as unknown as string })).toEqual([]);
    });

    it('prunes entries older than a date and says how many', async () => {
      const old = auditFactory({ at: new Date(Date.now() - 91 * 86_400_000) });
      const recent = auditFactory();
      await h.repo.append(old);
      await h.repo.append(recent);
      expect(await h.repo.prune(new Date(Date.now() - 90 * 86_400_000))).toBe(1);
      expect((await h.repo.list({ limit: 10 })).entries.map((e) => e.id)).toEqual([recent.id]);
      expect(await h.repo.prune(new Date(Date.now() - 90 * 86_400_000))).toBe(0);
    });
  });
}
