import { randomBytes } from 'node:crypto';
import { ConflictError } from '../../src/common/errors';
import type { TokenRecord, TokenRepository } from '../../src/backends/ports/token.repository';

export interface TokenRepositoryHarness {
  repo: TokenRepository;
  cleanup(): Promise<void>;
}

/** A token record with a fresh 16-hex id; times at millisecond precision like the service writes them. */
export function tokenFactory(over: Partial<TokenRecord> = {}): TokenRecord {
  return {
    id: randomBytes(8).toString('hex'),
    name: 'ci deploy',
    secretHash: randomBytes(32).toString('hex'),
    scopes: ['memory:read'],
    namespaces: ['default'],
    createdAt: new Date(Math.floor(Date.now() / 1000) * 1000 + 123),
    expiresAt: null,
    allowedIps: [],
    lastUsedAt: null,
    revokedAt: null,
    rateLimitPerMinute: 600,
    createdBy: null,
    ...over,
  };
}

/**
 * The behaviour every TokenRepository adapter must show (SQLite here, MongoDB in the prod suites).
 * Usage: tokenRepositoryContract('sqlite', async () => ({ repo, cleanup }))
 */
export function tokenRepositoryContract(name: string, make: () => Promise<TokenRepositoryHarness>): void {
  describe(`TokenRepository contract: ${name}`, () => {
    let h: TokenRepositoryHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('keeps the rate limit: a number, 0 (unlimited) or null (the service default), and updates it', async () => {
      for (const limit of [600, 0, null]) {
        const t = tokenFactory({ rateLimitPerMinute: limit });
        await h.repo.create(t);
        expect((await h.repo.findById(t.id))!.rateLimitPerMinute).toBe(limit);
      }
      const t = tokenFactory({ rateLimitPerMinute: null });
      await h.repo.create(t);
      expect((await h.repo.update(t.id, { rateLimitPerMinute: 5 }))!.rateLimitPerMinute).toBe(5);
      expect((await h.repo.update(t.id, { name: 'other' }))!.rateLimitPerMinute).toBe(5);
      expect((await h.repo.list()).find((r) => r.id === t.id)!.rateLimitPerMinute).toBe(5);
    });

    it('stores a record and reads every field back unchanged', async () => {
      const t = tokenFactory({
        name: 'full record',
        scopes: ['memory:read', 'memory:write', 'memory:delete'],
        expiresAt: new Date('2031-01-02T03:04:05.000Z'),
        allowedIps: ['127.0.0.0/8', '::1'],
        lastUsedAt: new Date('2026-11-20T10:00:00.250Z'),
        revokedAt: new Date('2026-11-20T11:00:00.500Z'),
        createdBy: randomBytes(8).toString('hex'),
      });
      await h.repo.create(t);
      expect(await h.repo.findById(t.id)).toEqual(t);
    });

    it('keeps null dates and empty lists as such', async () => {
      const t = tokenFactory();
      await h.repo.create(t);
      const got = await h.repo.findById(t.id);
      expect(got).toEqual(t);
      expect(got!.expiresAt).toBeNull();
      expect(got!.allowedIps).toEqual([]);
    });

    it('returns null for an unknown id', async () => {
      expect(await h.repo.findById('0123456789abcdef')).toBeNull();
    });

    it('refuses a second record with the same id (ConflictError)', async () => {
      const t = tokenFactory();
      await h.repo.create(t);
      await expect(h.repo.create({ ...t, name: 'again' })).rejects.toBeInstanceOf(ConflictError);
      expect((await h.repo.findById(t.id))!.name).toBe(t.name);
    });

    it('lists newest first', async () => {
      const base = Date.now();
      const a = tokenFactory({ name: 'a', createdAt: new Date(base - 3000) });
      const b = tokenFactory({ name: 'b', createdAt: new Date(base - 1000) });
      const c = tokenFactory({ name: 'c', createdAt: new Date(base - 2000) });
      for (const t of [a, b, c]) await h.repo.create(t);
      expect((await h.repo.list()).map((t) => t.name)).toEqual(['b', 'c', 'a']);
    });

    it('updates only the given fields and returns the new record', async () => {
      const t = tokenFactory({ expiresAt: new Date('2030-01-01T00:00:00.000Z'), allowedIps: ['10.0.0.0/8'] });
      await h.repo.create(t);
      const revokedAt = new Date('2026-11-21T06:00:00.000Z');
      const updated = await h.repo.update(t.id, { name: 'renamed', revokedAt });
      expect(updated).toEqual({ ...t, name: 'renamed', revokedAt });
      expect(await h.repo.findById(t.id)).toEqual(updated);
    });

    it('clears nullable fields when patched with null and replaces lists', async () => {
      const t = tokenFactory({ expiresAt: new Date('2030-01-01T00:00:00.000Z'), revokedAt: new Date(), allowedIps: ['10.0.0.0/8'] });
      await h.repo.create(t);
      const updated = await h.repo.update(t.id, { expiresAt: null, revokedAt: null, allowedIps: [], scopes: ['memory:write'] });
      expect(updated).toEqual({ ...t, expiresAt: null, revokedAt: null, allowedIps: [], scopes: ['memory:write'] });
    });

    it('writes last_used_at', async () => {
      const t = tokenFactory();
      await h.repo.create(t);
      const at = new Date('2026-11-21T06:30:00.123Z');
      await h.repo.update(t.id, { lastUsedAt: at });
      expect((await h.repo.findById(t.id))!.lastUsedAt).toEqual(at);
    });

    it('update of an unknown id returns null and creates nothing', async () => {
      expect(await h.repo.update('fedcba9876543210', { name: 'x' })).toBeNull();
      expect(await h.repo.findById('fedcba9876543210')).toBeNull();
    });

    it('deletes a record (true), then reports it missing (false)', async () => {
      const t = tokenFactory();
      const keep = tokenFactory();
      await h.repo.create(t);
      await h.repo.create(keep);
      expect(await h.repo.delete(t.id)).toBe(true);
      expect(await h.repo.findById(t.id)).toBeNull();
      expect(await h.repo.delete(t.id)).toBe(false);
      expect((await h.repo.list()).map((x) => x.id)).toEqual([keep.id]);
    });
  });
}
