import type Database from 'better-sqlite3';
import type { Scope } from '../../common/auth/principal';
import { DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import { TokenPatch, TokenRecord, TokenRepository } from '../ports/token.repository';
import { sqlite } from './sqlite-errors';

interface TokenRow {
  id: string;
  name: string;
  secret_hash: string;
  scopes: string;
  namespaces: string | null;
  created_at: number;
  expires_at: number | null;
  allowed_ips: string;
  last_used_at: number | null;
  revoked_at: number | null;
  rate_limit: number | null;
  created_by: string | null;
}

const COLUMN: Record<keyof TokenPatch, keyof TokenRow> = {
  name: 'name',
  scopes: 'scopes',
  namespaces: 'namespaces',
  expiresAt: 'expires_at',
  allowedIps: 'allowed_ips',
  revokedAt: 'revoked_at',
  lastUsedAt: 'last_used_at',
  rateLimitPerMinute: 'rate_limit',
};

const ms = (d: Date | null): number | null => (d ? d.getTime() : null);
const date = (n: number | null): Date | null => (n === null ? null : new Date(n));

function toRecord(r: TokenRow): TokenRecord {
  return {
    id: r.id,
    name: r.name,
    secretHash: r.secret_hash,
    scopes: JSON.parse(r.scopes) as Scope[],
    namespaces: r.namespaces ? (JSON.parse(r.namespaces) as string[]) : [DEFAULT_NAMESPACE],
    createdAt: new Date(r.created_at),
    expiresAt: date(r.expires_at),
    allowedIps: JSON.parse(r.allowed_ips) as string[],
    lastUsedAt: date(r.last_used_at),
    revokedAt: date(r.revoked_at),
    rateLimitPerMinute: r.rate_limit ?? null,
    createdBy: r.created_by ?? null,
  };
}

function toColumnValue(key: keyof TokenPatch, value: TokenPatch[keyof TokenPatch]): string | number | null {
  if (key === 'scopes' || key === 'allowedIps' || key === 'namespaces') return JSON.stringify(value ?? []);
  if (key === 'name') return value as string;
  if (key === 'rateLimitPerMinute') return (value as number | null | undefined) ?? null;
  return ms((value as Date | null | undefined) ?? null);
}

/** API tokens in the embedded SQLite database (one row per token, looked up by primary key). */
export class SqliteTokenRepository extends TokenRepository {
  private readonly insertStmt: Database.Statement;
  private readonly byIdStmt: Database.Statement;
  private readonly listStmt: Database.Statement;
  private readonly deleteStmt: Database.Statement;

  constructor(private readonly db: Database.Database) {
    super();
    sqlite('token table setup', () =>
      db.exec(`
        CREATE TABLE IF NOT EXISTS api_tokens (
          id           TEXT PRIMARY KEY,
          name         TEXT NOT NULL,
          secret_hash  TEXT NOT NULL,
          scopes       TEXT NOT NULL,
          created_at   INTEGER NOT NULL,
          expires_at   INTEGER,
          allowed_ips  TEXT NOT NULL,
          last_used_at INTEGER,
          revoked_at   INTEGER
        );
        CREATE INDEX IF NOT EXISTS api_tokens_created ON api_tokens (created_at DESC, id DESC);
      `),
    );
    // Added by issue 10 (per-token rate limits); databases made before get the column, NULL = the default.
    const columns = sqlite('token table columns', () => db.prepare('PRAGMA table_info(api_tokens)').all()) as Array<{ name: string }>;
    if (!columns.some((c) => c.name === 'rate_limit')) sqlite('token table migration', () => db.exec('ALTER TABLE api_tokens ADD COLUMN rate_limit INTEGER'));
    // Added by issue 43 (namespaces); tokens made before are bound to 'default' (the column's default, in place).
    if (!columns.some((c) => c.name === 'namespaces')) sqlite('token table migration', () => db.exec(`ALTER TABLE api_tokens ADD COLUMN namespaces TEXT NOT NULL DEFAULT '["${DEFAULT_NAMESPACE}"]'`));
    // Added with the revocation of what a manager token minted (decision 0163); NULL for tokens made before.
    if (!columns.some((c) => c.name === 'created_by')) sqlite('token table migration', () => db.exec('ALTER TABLE api_tokens ADD COLUMN created_by TEXT'));
    this.insertStmt = db.prepare(
      `INSERT INTO api_tokens (id, name, secret_hash, scopes, namespaces, created_at, expires_at, allowed_ips, last_used_at, revoked_at, rate_limit, created_by)
       VALUES (@id, @name, @secret_hash, @scopes, @namespaces, @created_at, @expires_at, @allowed_ips, @last_used_at, @revoked_at, @rate_limit, @created_by)`,
    );
    this.byIdStmt = db.prepare('SELECT * FROM api_tokens WHERE id = ?');
    this.listStmt = db.prepare('SELECT * FROM api_tokens ORDER BY created_at DESC, id DESC');
    this.deleteStmt = db.prepare('DELETE FROM api_tokens WHERE id = ?');
  }

  override async create(t: TokenRecord): Promise<void> {
    sqlite(
      'token insert',
      () =>
        this.insertStmt.run({
          id: t.id,
          name: t.name,
          secret_hash: t.secretHash,
          scopes: JSON.stringify(t.scopes),
          namespaces: JSON.stringify(t.namespaces),
          created_at: t.createdAt.getTime(),
          expires_at: ms(t.expiresAt),
          allowed_ips: JSON.stringify(t.allowedIps),
          last_used_at: ms(t.lastUsedAt),
          revoked_at: ms(t.revokedAt),
          rate_limit: t.rateLimitPerMinute,
          created_by: t.createdBy,
        }),
      `Token ${t.id} already exists`,
    );
  }

  override async findById(id: string): Promise<TokenRecord | null> {
    const row = sqlite('token lookup', () => this.byIdStmt.get(id)) as TokenRow | undefined;
    return row ? toRecord(row) : null;
  }

  override async list(): Promise<TokenRecord[]> {
    return (sqlite('token list', () => this.listStmt.all()) as TokenRow[]).map(toRecord);
  }

  override async update(id: string, patch: TokenPatch): Promise<TokenRecord | null> {
    const keys = (Object.keys(patch) as (keyof TokenPatch)[]).filter((k) => k in COLUMN && patch[k] !== undefined);
    return sqlite('token update', () => {
      if (keys.length > 0) {
        const sets = keys.map((k) => `${COLUMN[k]} = ?`).join(', ');
        this.db.prepare(`UPDATE api_tokens SET ${sets} WHERE id = ?`).run(...keys.map((k) => toColumnValue(k, patch[k])), id);
      }
      const row = this.byIdStmt.get(id) as TokenRow | undefined;
      return row ? toRecord(row) : null;
    });
  }

  override async delete(id: string): Promise<boolean> {
    return sqlite('token delete', () => this.deleteStmt.run(id).changes > 0);
  }
}
