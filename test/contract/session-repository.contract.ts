import { randomBytes } from 'node:crypto';
import type { SessionRepository, StoredSession } from '../../src/backends/ports/session.repository';

export interface SessionRepositoryHarness {
  repo: SessionRepository;
  cleanup(): Promise<void>;
}

export function sessionFactory(over: Partial<StoredSession> = {}): StoredSession {
  return {
    sid: randomBytes(24).toString('base64url'),
    data: JSON.stringify({ cookie: { httpOnly: true }, admin: { username: 'admin', signedInAt: Date.now() } }),
    expiresAt: new Date(Date.now() + 3600_000),
    ...over,
  };
}

/**
 * The behaviour every SessionRepository adapter must show (SQLite here, MongoDB in the prod suites).
 * Usage: sessionRepositoryContract('sqlite', async () => ({ repo, cleanup }))
 */
export function sessionRepositoryContract(name: string, make: () => Promise<SessionRepositoryHarness>): void {
  describe(`SessionRepository contract: ${name}`, () => {
    let h: SessionRepositoryHarness;
    beforeEach(async () => {
      h = await make();
    });
    afterEach(async () => {
      await h.cleanup();
    });

    it('stores a session and reads it back', async () => {
      const s = sessionFactory();
      await h.repo.set(s);
      expect(await h.repo.get(s.sid)).toEqual(s);
    });

    it('returns null for an unknown sid', async () => {
      expect(await h.repo.get('no-such-session')).toBeNull();
    });

    it('set replaces the data and expiry of an existing sid', async () => {
      const s = sessionFactory();
      await h.repo.set(s);
      const next = { ...s, data: JSON.stringify({ admin: { username: 'other', signedInAt: 1 } }), expiresAt: new Date(Date.now() + 7200_000) };
      await h.repo.set(next);
      expect(await h.repo.get(s.sid)).toEqual(next);
      expect((await h.repo.all()).filter((x) => x.sid === s.sid)).toHaveLength(1);
    });

    it('never returns an expired session', async () => {
      const s = sessionFactory({ expiresAt: new Date(Date.now() - 1000) });
      await h.repo.set(s);
      expect(await h.repo.get(s.sid)).toBeNull();
      expect((await h.repo.all()).map((x) => x.sid)).not.toContain(s.sid);
    });

    it('destroy removes the session and is idempotent', async () => {
      const s = sessionFactory();
      const keep = sessionFactory();
      await h.repo.set(s);
      await h.repo.set(keep);
      await h.repo.destroy(s.sid);
      await h.repo.destroy(s.sid);
      expect(await h.repo.get(s.sid)).toBeNull();
      expect(await h.repo.get(keep.sid)).toEqual(keep);
    });

    it('all() lists the live sessions', async () => {
      const a = sessionFactory();
      const b = sessionFactory();
      await h.repo.set(a);
      await h.repo.set(b);
      const sids = (await h.repo.all()).map((x) => x.sid).sort();
      expect(sids).toEqual([a.sid, b.sid].sort());
    });
  });
}
