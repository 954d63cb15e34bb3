import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { SessionRepository } from '../backends/ports/session.repository';

/** Key prefix of the OAuth records in the session collection (an express-session id never has it: those are signed cookies). */
const PREFIX = 'oauth:';
/** Records the provider gives no lifetime: registered clients (a connector registers once and keeps its client id). */
const DEFAULT_TTL_S = 365 * 86_400;

/**
 * oidc-provider's storage (clients, codes, grants, refresh tokens, interactions) in the active
 * document database, as key -> JSON with an expiry in the SessionRepository the admin sessions
 * already use: both backends have it, it expires entries, and a backend switch carries it over.
 * A grant keeps the list of the keys issued under it (revokeByGrantId).
 */
export function oauthAdapterFactory(sessions: SessionRepository): (name: string) => Adapter {
  return (name: string) => new RepositoryAdapter(sessions, name);
}

class RepositoryAdapter implements Adapter {
  constructor(
    private readonly sessions: SessionRepository,
    private readonly name: string,
  ) {}

  private key(id: string): string {
    return `${PREFIX}${this.name}:${id}`;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn: number): Promise<void> {
    const expiresAt = new Date(Date.now() + (expiresIn > 0 ? expiresIn : DEFAULT_TTL_S) * 1000);
    await this.sessions.set({ sid: this.key(id), data: JSON.stringify(payload), expiresAt });
    if (payload.uid) await this.sessions.set({ sid: `${PREFIX}uid:${this.name}:${payload.uid}`, data: JSON.stringify({ id }), expiresAt });
    if (payload.grantId) {
      const gk = `${PREFIX}grant:${payload.grantId}`;
      const current = await this.sessions.get(gk);
      const keys: string[] = current ? (JSON.parse(current.data) as string[]) : [];
      keys.push(this.key(id));
      const later = current && current.expiresAt > expiresAt ? current.expiresAt : expiresAt;
      await this.sessions.set({ sid: gk, data: JSON.stringify(keys), expiresAt: later });
    }
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const s = await this.sessions.get(this.key(id));
    return s ? (JSON.parse(s.data) as AdapterPayload) : undefined;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    const s = await this.sessions.get(`${PREFIX}uid:${this.name}:${uid}`);
    return s ? this.find((JSON.parse(s.data) as { id: string }).id) : undefined;
  }

  findByUserCode(): Promise<AdapterPayload | undefined> {
    return Promise.resolve(undefined); // no device flow
  }

  async consume(id: string): Promise<void> {
    const s = await this.sessions.get(this.key(id));
    if (!s) return;
    const payload = JSON.parse(s.data) as AdapterPayload;
    payload.consumed = Math.floor(Date.now() / 1000);
    await this.sessions.set({ ...s, data: JSON.stringify(payload) });
  }

  async destroy(id: string): Promise<void> {
    await this.sessions.destroy(this.key(id));
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    const gk = `${PREFIX}grant:${grantId}`;
    const s = await this.sessions.get(gk);
    if (s) for (const k of JSON.parse(s.data) as string[]) await this.sessions.destroy(k);
    await this.sessions.destroy(gk);
  }
}
