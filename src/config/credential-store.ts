import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { readFileIfExists, removeStaleTempFiles, writeFileAtomic } from './atomic-file';

/** Contents of the credential store: admin-editable secrets and internal secrets. */
export interface CredentialData {
  /** Secret settings (docdb_uri, objstore_access_key_id, objstore_secret_access_key). */
  settings: Record<string, string>;
  /** Internal secrets, e.g. the generated admin password hash. */
  internal: Record<string, string>;
}

/** The credential store cannot be read: wrong key, corrupted or foreign file. Fails the boot. */
export class CredentialStoreError extends Error {}

const FORMAT = 'memstore-credentials';
const VERSION = 1;
const ALG = 'aes-256-gcm';

interface Envelope {
  format: string;
  v: number;
  alg: string;
  iv: string;
  tag: string;
  data: string;
}

/**
 * Derives the keys the service needs from one master secret with HKDF-SHA256, each with its own
 * `info` label, so the credential store key and the service key (token hashing, session secret,
 * signed URLs) are independent of each other and stable across restarts.
 */
export class MasterKey {
  private constructor(private readonly secret: Buffer) {}

  /** MEMSTORE_SECRET_KEY when given; otherwise the key file (32 random bytes, created 0600 on first start). */
  static resolve(secretKey: string | null, keyFile: string): MasterKey {
    if (secretKey) return new MasterKey(Buffer.from(secretKey, 'utf8'));
    return new MasterKey(loadOrCreateKeyFile(keyFile));
  }

  derive(label: 'credential-store' | 'service-key'): Buffer {
    return Buffer.from(hkdfSync('sha256', this.secret, Buffer.from('memstore/v1'), Buffer.from(label), 32));
  }
}

function loadOrCreateKeyFile(file: string): Buffer {
  const existing = readFileIfExists(file);
  if (existing) return parseKeyFile(existing, file);
  const key = randomBytes(32);
  try {
    // 'wx': when two processes start at once on a fresh data dir, the second one reads the first's key.
    fs.writeFileSync(file, key.toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
    fs.chmodSync(file, 0o600);
    return key;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    return parseKeyFile(fs.readFileSync(file), file);
  }
}

function parseKeyFile(raw: Buffer, file: string): Buffer {
  const key = Buffer.from(raw.toString('utf8').trim(), 'base64');
  if (key.length !== 32) throw new CredentialStoreError(`Key file ${file} is not a base64 32-byte key; restore it or set MEMSTORE_SECRET_KEY`);
  return key;
}

/**
 * The encrypted credential store (CONTRACT §7): one JSON envelope, AES-256-GCM with a random
 * 96-bit IV per write, written atomically with mode 0600. Nothing in it is readable without the key.
 */
export class CredentialStore {
  constructor(
    readonly file: string,
    private readonly key: Buffer,
  ) {
    if (key.length !== 32) throw new Error('credential store key must be 32 bytes');
  }

  exists(): boolean {
    return fs.existsSync(this.file);
  }

  load(): CredentialData {
    removeStaleTempFiles(this.file);
    const raw = readFileIfExists(this.file);
    if (raw === null) return { settings: {}, internal: {} };
    let env: Envelope;
    try {
      env = JSON.parse(raw.toString('utf8')) as Envelope;
    } catch {
      throw this.unreadable('it is not valid JSON (corrupted?)');
    }
    if (!env || env.format !== FORMAT || env.v !== VERSION || env.alg !== ALG) {
      throw this.unreadable('unknown format or version');
    }
    let plain: string;
    try {
      const decipher = createDecipheriv(ALG, this.key, Buffer.from(env.iv, 'base64'));
      decipher.setAAD(Buffer.from(`${FORMAT}/${VERSION}`));
      decipher.setAuthTag(Buffer.from(env.tag, 'base64'));
      plain = Buffer.concat([decipher.update(Buffer.from(env.data, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      throw this.unreadable('decryption failed: the key (MEMSTORE_SECRET_KEY or secret.key) is not the one it was written with, or the file is corrupted');
    }
    const data = JSON.parse(plain) as Partial<CredentialData>;
    return { settings: { ...(data.settings ?? {}) }, internal: { ...(data.internal ?? {}) } };
  }

  save(data: CredentialData): void {
    const iv = randomBytes(12);
    const cipher = createCipheriv(ALG, this.key, iv);
    cipher.setAAD(Buffer.from(`${FORMAT}/${VERSION}`));
    const enc = Buffer.concat([cipher.update(JSON.stringify(data), 'utf8'), cipher.final()]);
    const env: Envelope = {
      format: FORMAT,
      v: VERSION,
      alg: ALG,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: enc.toString('base64'),
    };
    writeFileAtomic(this.file, JSON.stringify(env) + '\n', 0o600);
  }

  private unreadable(why: string): CredentialStoreError {
    return new CredentialStoreError(`Credential store ${this.file} cannot be read: ${why}`);
  }
}
