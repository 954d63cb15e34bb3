import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { RequestValidationError } from '../common/errors';
import { loadAppConfig } from './app-config';
import { CredentialStoreError } from './credential-store';
import { SettingsService } from './settings.service';

const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const URI = 'mongodb://memuser:s3cret-Pa55@db.example.com:27017/memstore?authSource=admin';

function dataDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-settings-'));
}

function service(dir: string, env: Record<string, string> = {}): SettingsService {
  return new SettingsService(loadAppConfig({ MEMSTORE_DATA_DIR: dir, ...env }));
}

function mode(file: string): number {
  return fs.statSync(file).mode & 0o777;
}

describe('SettingsService', () => {
  it('starts with defaults: embedded backends, complete, TTL 3600', () => {
    const s = service(dataDir());
    expect(s.current()).toMatchObject({ docdb_uri: null, objstore_bucket: null, objstore_presign_ttl: 3600, memory_collection: 'memories' });
    expect(s.completeness()).toEqual({ complete: true, missing: [] });
    expect(s.sources().docdb_uri).toBe('default');
  });

  it('saves partially: absent and null leave values alone, "" clears', async () => {
    const dir = dataDir();
    const s = service(dir);
    await s.save({ docdb_db: 'mem', objstore_bucket: 'notes', objstore_endpoint: 'https://s3.example.com' });
    const r = await s.save({ docdb_db: null, objstore_endpoint: '' });
    expect(r.saved).toEqual(['objstore_endpoint']);
    expect(s.current()).toMatchObject({ docdb_db: 'mem', objstore_bucket: 'notes', objstore_endpoint: null });
    expect(s.sources()).toMatchObject({ docdb_db: 'file', objstore_bucket: 'file', objstore_endpoint: 'default' });
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'))).toEqual({ docdb_db: 'mem', objstore_bucket: 'notes' });
  });

  it('keeps credentials in the credential store and reports them as such', async () => {
    const dir = dataDir();
    const s = service(dir);
    const r = await s.save({ docdb_uri: URI, objstore_secret_access_key: SECRET, objstore_bucket: 'bucket-1' });
    expect(r.saved.sort()).toEqual(['docdb_uri', 'objstore_bucket', 'objstore_secret_access_key']);
    expect(s.sources()).toMatchObject({ docdb_uri: 'credentials', objstore_secret_access_key: 'credentials', objstore_bucket: 'file' });
    const plainConfig = fs.readFileSync(path.join(dir, 'config.json'), 'utf8');
    expect(plainConfig).not.toContain('docdb_uri');
    expect(plainConfig).not.toContain(SECRET);
  });

  it('survives a restart on the same data directory (key file generated once, 0600)', async () => {
    const dir = dataDir();
    await service(dir).save({ docdb_uri: URI, docdb_db: 'mem' });
    const keyFile = path.join(dir, 'secret.key');
    expect(mode(keyFile)).toBe(0o600);
    const again = service(dir);
    expect(again.current()).toMatchObject({ docdb_uri: URI, docdb_db: 'mem' });
  });

  it('encrypts the credential store at rest and writes both files with mode 0600', async () => {
    const dir = dataDir();
    const s = service(dir, { MEMSTORE_SECRET_KEY: 'a-long-test-secret-key-of-enough-length' });
    await s.save({ docdb_uri: URI, objstore_access_key_id: 'AKIAIOSFODNN7EXAMPLE', objstore_secret_access_key: SECRET, docdb_db: 'x' });
    await s.setInternalSecret('admin_password_hash', '$2b$10$abcdefghijklmnopqrstuv');
    const enc = fs.readFileSync(path.join(dir, 'credentials.enc'));
    for (const needle of ['s3cret-Pa55', 'memuser', SECRET, 'AKIAIOSFODNN7EXAMPLE', 'admin_password_hash', '$2b$10$']) {
      expect(enc.includes(Buffer.from(needle))).toBe(false);
    }
    expect(mode(path.join(dir, 'credentials.enc'))).toBe(0o600);
    expect(mode(path.join(dir, 'config.json'))).toBe(0o600);
    expect(fs.existsSync(path.join(dir, 'secret.key'))).toBe(false); // MEMSTORE_SECRET_KEY given: no key file
    expect(service(dir, { MEMSTORE_SECRET_KEY: 'a-long-test-secret-key-of-enough-length' }).getInternalSecret('admin_password_hash')).toBe('$2b$10$abcdefghijklmnopqrstuv');
  });

  it('refuses to start with a clear error when the credential store was written with another key', async () => {
    const dir = dataDir();
    await service(dir, { MEMSTORE_SECRET_KEY: 'first-key-first-key-first-key' }).save({ docdb_uri: URI });
    expect(() => service(dir, { MEMSTORE_SECRET_KEY: 'other-key-other-key-other-key' })).toThrow(CredentialStoreError);
    expect(() => service(dir, { MEMSTORE_SECRET_KEY: 'other-key-other-key-other-key' })).toThrow(/credentials\.enc cannot be read: decryption failed/);
  });

  it('refuses to start with a clear error when the credential store is corrupted', async () => {
    const dir = dataDir();
    await service(dir).save({ docdb_uri: URI });
    const file = path.join(dir, 'credentials.enc');
    const env = JSON.parse(fs.readFileSync(file, 'utf8'));
    const data = Buffer.from(env.data, 'base64');
    data[0] ^= 0xff; // flip bits of the ciphertext: GCM authentication must fail
    fs.writeFileSync(file, JSON.stringify({ ...env, data: data.toString('base64') }));
    expect(() => service(dir)).toThrow(/cannot be read: decryption failed/);
    fs.writeFileSync(file, '{ not json');
    expect(() => service(dir)).toThrow(/cannot be read: it is not valid JSON/);
  });

  it('lets the environment win and says so in sources; saved values under an env override are reported', async () => {
    const dir = dataDir();
    const s = service(dir, { MEMSTORE_OBJSTORE_BUCKET: 'from-env', MEMSTORE_DOCDB_DB: '' });
    const r = await s.save({ objstore_bucket: 'from-file', docdb_db: 'filedb' });
    expect(r.overridden).toEqual(['objstore_bucket']);
    expect(s.current().objstore_bucket).toBe('from-env');
    expect(s.current().docdb_db).toBe('filedb'); // an empty variable counts as unset
    expect(s.sources()).toMatchObject({ objstore_bucket: 'env', docdb_db: 'file' });
  });

  it('rejects an invalid environment value at boot', () => {
    expect(() => service(dataDir(), { MEMSTORE_OBJSTORE_PRESIGN_TTL: 'soon' })).toThrow(/MEMSTORE_OBJSTORE_PRESIGN_TTL must be a whole number/);
    expect(() => service(dataDir(), { MEMSTORE_DOCDB_URI: 'postgres://x' })).toThrow(/MEMSTORE_DOCDB_URI must be a MongoDB/);
  });

  it('masks secrets, including the password inside a MongoDB URI', async () => {
    const s = service(dataDir());
    await s.save({ docdb_uri: URI, objstore_access_key_id: 'AKIAIOSFODNN7EXAMPLE', objstore_secret_access_key: SECRET, objstore_bucket: 'bkt' });
    const m = s.masked();
    expect(m.docdb_uri).toBe('mongodb://memuser:********@db.example.com:27017/memstore?authSource=admin');
    expect(m.objstore_access_key_id).toBe('AKIA********LE');
    expect(m.objstore_secret_access_key).toBe('********');
    expect(m.objstore_bucket).toBe('bkt');
    expect(JSON.stringify(m)).not.toContain('s3cret-Pa55');
    expect(JSON.stringify(m)).not.toContain(SECRET);
    expect(s.raw().objstore_secret_access_key).toBe(SECRET);
  });

  it('treats a masked secret posted back unchanged as "leave it alone"', async () => {
    const s = service(dataDir());
    await s.save({ docdb_uri: URI, objstore_secret_access_key: SECRET });
    const m = s.masked();
    const r = await s.save({ docdb_uri: m.docdb_uri, objstore_secret_access_key: m.objstore_secret_access_key });
    expect(r.saved).toEqual([]);
    expect(s.raw()).toMatchObject({ docdb_uri: URI, objstore_secret_access_key: SECRET });
  });

  it('accepts the presign TTL as a number or numeric string within 1..604800', async () => {
    const s = service(dataDir());
    await s.save({ objstore_presign_ttl: ' 600 ' });
    expect(s.current().objstore_presign_ttl).toBe(600);
    await s.save({ objstore_presign_ttl: 604800 });
    expect(s.current().objstore_presign_ttl).toBe(604800);
    await expect(s.save({ objstore_presign_ttl: 0 })).rejects.toThrow(RequestValidationError);
    await expect(s.save({ objstore_presign_ttl: '604801' })).rejects.toThrow(/from 1 to 604800/);
    await expect(s.save({ objstore_presign_ttl: '1.5' })).rejects.toThrow(/whole number/);
    await s.save({ objstore_presign_ttl: '' });
    expect(s.current().objstore_presign_ttl).toBe(3600);
    expect(s.sources().objstore_presign_ttl).toBe('default');
  });

  it('a rejected save changes nothing', async () => {
    const dir = dataDir();
    const s = service(dir);
    await s.save({ docdb_db: 'keep' });
    await expect(s.save({ docdb_db: 'new', docdb_uri: 'http://not-mongo' })).rejects.toThrow(/docdb_uri must be a MongoDB/);
    expect(s.current().docdb_db).toBe('keep');
    expect(service(dir).current().docdb_db).toBe('keep');
  });

  it('reports what the chosen S3 object store still needs', async () => {
    const s = service(dataDir());
    let r = await s.save({ objstore_bucket: 'bkt' });
    expect(r).toMatchObject({ complete: false, missing: ['objstore_access_key_id', 'objstore_secret_access_key'] });
    r = await s.save({ objstore_access_key_id: 'AKIAIOSFODNN7EXAMPLE' });
    expect(r).toMatchObject({ complete: false, missing: ['objstore_secret_access_key'] });
    r = await s.save({ objstore_secret_access_key: SECRET }); // no endpoint: AWS S3
    expect(r).toMatchObject({ complete: true, missing: [] });
    r = await s.save({ objstore_bucket: '' }); // back to the filesystem store: nothing needed
    expect(r.complete).toBe(true);
  });

  it('emits the resolved settings after every save', async () => {
    const s = service(dataDir());
    const seen: Array<string | null> = [];
    s.changes.subscribe((v) => seen.push(v.docdb_db));
    await s.save({ docdb_db: 'one' });
    await s.save({ docdb_db: '' });
    expect(seen).toEqual(['one', null]);
  });

  it('derives a stable service key, distinct per master secret', () => {
    const dir = dataDir();
    const a = service(dir).serviceKey();
    expect(a).toHaveLength(32);
    expect(service(dir).serviceKey().equals(a)).toBe(true);
    const withEnv = service(dataDir(), { MEMSTORE_SECRET_KEY: 'k1-k1-k1-k1-k1-k1' }).serviceKey();
    expect(service(dataDir(), { MEMSTORE_SECRET_KEY: 'k1-k1-k1-k1-k1-k1' }).serviceKey().equals(withEnv)).toBe(true);
    expect(service(dataDir(), { MEMSTORE_SECRET_KEY: 'k2-k2-k2-k2-k2-k2' }).serviceKey().equals(withEnv)).toBe(false);
  });

  it('rejects a hand-edited config file holding invalid JSON with a clear error', () => {
    const dir = dataDir();
    fs.writeFileSync(path.join(dir, 'config.json'), '{"docdb_db": ');
    expect(() => service(dir)).toThrow(/config\.json is not valid JSON/);
  });
});
