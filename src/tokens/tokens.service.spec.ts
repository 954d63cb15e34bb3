import Database from 'better-sqlite3';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SqliteRateLimitRepository } from '../backends/sqlite/sqlite-rate-limit.repository';
import { SqliteTokenRepository } from '../backends/sqlite/sqlite-token.repository';
import { ForbiddenError, UnauthorizedError } from '../common/errors';
import { loadAppConfig } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { hashSecret, parseToken } from './token-secret';
import { TokenRateLimiter } from './token-rate-limiter';
import { LAST_USED_INTERVAL_MS, TOKEN_RECORD_TTL_MS, TokensService } from './tokens.service';

describe('TokensService (real SQLite repository)', () => {
  let dir: string;
  let db: Database.Database;
  let repo: SqliteTokenRepository;
  let settings: SettingsService;
  let service: TokensService;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-tokens-'));
    db = new Database(path.join(dir, 'memstore.db'));
    repo = new SqliteTokenRepository(db);
    const cfg = loadAppConfig({ MEMSTORE_DATA_DIR: dir, MEMSTORE_SECRET_KEY: 'unit-test-secret-key-0123456789abcdef' });
    settings = new SettingsService(cfg);
    service = new TokensService(repo, settings, cfg, new TokenRateLimiter(new SqliteRateLimitRepository(db), cfg));
  });
  afterEach(() => {
    jest.restoreAllMocks();
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores only the HMAC of the secret under the service key; the database file never holds the secret', async () => {
    const { record, plaintext } = await service.create({ name: 'x' });
    const { secret } = parseToken(plaintext)!;
    const stored = (await repo.findById(record.id))!;
    expect(stored.secretHash).toBe(hashSecret(settings.serviceKey(), secret));
    db.pragma('wal_checkpoint(TRUNCATE)');
    const bytes = fs.readFileSync(path.join(dir, 'memstore.db')).toString('latin1');
    expect(bytes).toContain(record.id);
    expect(bytes).not.toContain(secret);
  });

  it('writes last_used_at on first use, then at most once a minute', async () => {
    const { record, plaintext } = await service.create({});
    const t0 = Date.parse('2026-11-21T08:00:00.000Z');
    const clock = jest.spyOn(Date, 'now').mockReturnValue(t0);
    await service.authenticate(plaintext, '127.0.0.1');
    expect((await repo.findById(record.id))!.lastUsedAt).toEqual(new Date(t0));

    clock.mockReturnValue(t0 + LAST_USED_INTERVAL_MS - 1);
    await service.authenticate(plaintext, '127.0.0.1');
    expect((await repo.findById(record.id))!.lastUsedAt).toEqual(new Date(t0));

    clock.mockReturnValue(t0 + LAST_USED_INTERVAL_MS);
    await service.authenticate(plaintext, '127.0.0.1');
    expect((await repo.findById(record.id))!.lastUsedAt).toEqual(new Date(t0 + LAST_USED_INTERVAL_MS));
  });

  it('does one update per minute even under many concurrent requests', async () => {
    const { plaintext } = await service.create({});
    const update = jest.spyOn(repo, 'update');
    await Promise.all(Array.from({ length: 20 }, () => service.authenticate(plaintext, '127.0.0.1')));
    expect(update).toHaveBeenCalledTimes(1);
  });

  it('expiry is evaluated at request time', async () => {
    const now = Date.now();
    const { plaintext } = await service.create({ expires_at: Math.floor(now / 1000) + 60 });
    const clock = jest.spyOn(Date, 'now').mockReturnValue(now);
    await expect(service.authenticate(plaintext, '127.0.0.1')).resolves.toMatchObject({ kind: 'token' });
    clock.mockReturnValue(Math.floor(now / 1000) * 1000 + 60_000);
    await expect(service.authenticate(plaintext, '127.0.0.1')).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('checks the secret before the address (a wrong secret from anywhere is 401)', async () => {
    const { plaintext } = await service.create({ allowed_ips: ['10.0.0.0/8'] });
    await expect(service.authenticate(`${plaintext}x`, '192.0.2.1')).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(service.authenticate(plaintext, '192.0.2.1')).rejects.toBeInstanceOf(ForbiddenError);
    await expect(service.authenticate(plaintext, '::ffff:10.1.2.3')).resolves.toMatchObject({ kind: 'token' });
  });

  describe('the token check reuses a record it read for TOKEN_RECORD_TTL_MS', () => {
    it('reads the database once for many requests within that time', async () => {
      const { plaintext } = await service.create({ preset: 'full' });
      const read = jest.spyOn(repo, 'findById');
      for (let i = 0; i < 50; i++) await service.authenticate(plaintext, '127.0.0.1');
      expect(read).toHaveBeenCalledTimes(1);
    });

    it('applies a revocation, a deletion and a change of scopes or addresses made here to the very next request', async () => {
      const a = await service.create({ preset: 'full' });
      await service.authenticate(a.plaintext, '127.0.0.1');
      await service.update(a.record.id, { scopes: ['memory:read'] });
      await expect(service.authenticate(a.plaintext, '127.0.0.1')).resolves.toMatchObject({ scopes: ['memory:read'] });
      await service.update(a.record.id, { allowed_ips: ['10.0.0.0/8'] });
      await expect(service.authenticate(a.plaintext, '127.0.0.1')).rejects.toBeInstanceOf(ForbiddenError);
      await service.revoke(a.record.id);
      await expect(service.authenticate(a.plaintext, '10.0.0.1')).rejects.toThrow('API token has been revoked');

      const b = await service.create({});
      await service.authenticate(b.plaintext, '127.0.0.1');
      await service.delete(b.record.id);
      await expect(service.authenticate(b.plaintext, '127.0.0.1')).rejects.toThrow('Invalid API token');
    });

    it('sees a revocation made by another instance on the same database within TOKEN_RECORD_TTL_MS', async () => {
      const other = new TokensService(
        repo,
        settings,
        loadAppConfig({ MEMSTORE_DATA_DIR: dir, MEMSTORE_SECRET_KEY: 'unit-test-secret-key-0123456789abcdef' }),
        new TokenRateLimiter(new SqliteRateLimitRepository(db), loadAppConfig({ MEMSTORE_DATA_DIR: dir })),
      );
      const { record, plaintext } = await service.create({});
      const t0 = Date.now();
      const clock = jest.spyOn(Date, 'now').mockReturnValue(t0);
      await service.authenticate(plaintext, '127.0.0.1');
      await other.revoke(record.id);
      clock.mockReturnValue(t0 + TOKEN_RECORD_TTL_MS);
      await expect(service.authenticate(plaintext, '127.0.0.1')).rejects.toThrow('API token has been revoked');
    });

    it('does not keep a record read while a change was being written', async () => {
      const { record, plaintext } = await service.create({});
      const before = (await repo.findById(record.id))!;
      // The check's read answers the row as it was before the revocation, after the revocation is written.
      let answer!: (r: typeof before) => void;
      jest.spyOn(repo, 'findById').mockImplementationOnce(() => new Promise((resolve) => (answer = resolve)));
      const inFlight = service.authenticate(plaintext, '127.0.0.1');
      await service.revoke(record.id);
      answer(before);
      await expect(inFlight).resolves.toMatchObject({ kind: 'token' });
      await expect(service.authenticate(plaintext, '127.0.0.1')).rejects.toThrow('API token has been revoked');
    });
  });
});
