import session from 'express-session';
import type { SessionRepository } from '../../backends/ports/session.repository';

/**
 * express-session Store backed by the SessionRepository port: sessions live in the active
 * document database (embedded SQLite or MongoDB), survive restarts and are shared between
 * instances. Never a MemoryStore.
 *
 * No `touch`: sessions do not roll (their expiry is fixed at sign-in), so express-session would
 * only rewrite the same expiry on every signed-in request.
 */
export class RepositorySessionStore extends session.Store {
  constructor(
    private readonly repo: SessionRepository,
    private readonly ttlMs: number,
  ) {
    super();
  }

  private expiry(sess: session.SessionData): Date {
    const e = sess.cookie?.expires;
    return e ? new Date(e) : new Date(Date.now() + this.ttlMs);
  }

  override get(sid: string, cb: (err: unknown, session?: session.SessionData | null) => void): void {
    this.repo.get(sid).then(
      (s) => {
        if (!s) return cb(null, null);
        let data: session.SessionData | null;
        try {
          data = JSON.parse(s.data) as session.SessionData;
        } catch {
          data = null; // unreadable row: treat as signed out
        }
        cb(null, data);
      },
      (err) => cb(err),
    );
  }

  override set(sid: string, sess: session.SessionData, cb?: (err?: unknown) => void): void {
    this.repo.set({ sid, data: JSON.stringify(sess), expiresAt: this.expiry(sess) }).then(
      () => cb?.(),
      (err) => cb?.(err),
    );
  }

  override destroy(sid: string, cb?: (err?: unknown) => void): void {
    this.repo.destroy(sid).then(
      () => cb?.(),
      (err) => cb?.(err),
    );
  }
}
