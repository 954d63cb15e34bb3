import { Injectable } from '@nestjs/common';
import { createSecretKey, type KeyObject } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Subject } from 'rxjs';
import { RequestValidationError } from '../common/errors';
import { readFileIfExists, removeStaleTempFiles, writeFileAtomic } from './atomic-file';
import { AppConfig, SETTING_KEYS, SettingKey } from './app-config';
import { CredentialData, CredentialStore, MasterKey } from './credential-store';
import { checkSetting, CREDENTIAL_KEYS, MEMORY_COLLECTION_DEFAULT, maskSetting, parsePresignTtl, PRESIGN_TTL_DEFAULT, HISTORY_KEEP_DEFAULT, SECRET_KEYS } from './setting-rules';

export interface ResolvedSettings {
  docdb_uri: string | null;
  docdb_db: string | null;
  memory_collection: string | null;
  objstore_account_id: string | null;
  objstore_access_key_id: string | null;
  objstore_secret_access_key: string | null;
  objstore_bucket: string | null;
  objstore_endpoint: string | null;
  objstore_public_base: string | null;
  objstore_presign_ttl: number;
  /** Versions kept per memory (issue 9). */
  memory_history_keep: number;
  embedding_provider: 'local' | 'openai' | 'none' | null;
  embedding_url: string | null;
  embedding_api_key: string | null;
  embedding_model: string | null;
  embedding_dimensions: string | null;
  /** "zero,one": where the openai model's cosines sit for unrelated text and a clear match (parseCosineScale). */
  embedding_cosine_scale: string | null;
}

export type SettingSource = 'env' | 'file' | 'credentials' | 'default';
export type SettingsInput = Partial<Record<SettingKey, string | number | null>>;
export type SettingValues = Record<SettingKey, string | number | null>;
/**
 * Internal secrets of the credential store. admin_password_generated: '1' while the admin password
 * is the one generated at the first start (the page then asks to choose one).
 */
export type InternalSecretName = 'admin_password_hash' | 'admin_password_generated';

export interface Completeness {
  complete: boolean;
  missing: SettingKey[];
}

export interface SaveResult extends Completeness {
  /** Keys written to the config file or the credential store. */
  saved: SettingKey[];
  /** Saved keys that the environment still overrides (the saved value is not in effect). */
  overridden: SettingKey[];
}

/** Built-in defaults; null means "none" (the backend decides, e.g. the database named in the URI). */
const DEFAULTS: Partial<Record<SettingKey, string>> = {
  memory_collection: MEMORY_COLLECTION_DEFAULT,
  objstore_presign_ttl: String(PRESIGN_TTL_DEFAULT),
  memory_history_keep: String(HISTORY_KEEP_DEFAULT),
};

/**
 * The admin-editable settings (CONTRACT §5, §7).
 * - Non-secret keys live in `<dataDir>/config.json`; docdb_uri and the object store keys (and
 *   internal secrets such as the generated admin password hash) in `<dataDir>/credentials.enc`,
 *   AES-256-GCM encrypted. Both files are written atomically with mode 0600.
 * - The master secret is MEMSTORE_SECRET_KEY, or `<dataDir>/secret.key` generated on first start.
 *   HKDF derives the credential store key and, separately, the service key.
 * - Resolution order: environment (MEMSTORE_<KEY>, non-empty) > file/credential store > default.
 * - `changes` emits the resolved settings after every save; BackendsService re-resolves its
 *   adapters from it, so a save takes effect without a restart.
 */
@Injectable()
export class SettingsService {
  /** Emits the new resolved settings after every successful save. */
  readonly changes = new Subject<ResolvedSettings>();

  readonly configFile: string;
  readonly credentialFile: string;
  readonly keyFile: string;
  private readonly store: CredentialStore;
  private readonly svcKey: Buffer;
  private readonly env: Partial<Record<SettingKey, string>> = {};
  private file: Partial<Record<SettingKey, string>>;
  private creds: CredentialData;

  constructor(private readonly cfg: AppConfig) {
    fs.mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
    this.configFile = path.join(cfg.dataDir, 'config.json');
    this.credentialFile = path.join(cfg.dataDir, 'credentials.enc');
    this.keyFile = path.join(cfg.dataDir, 'secret.key');

    for (const k of SETTING_KEYS) {
      const v = cfg.settingsEnv[k]?.trim();
      if (!v) continue; // an empty variable counts as unset
      const problem = checkSetting(k, v);
      if (problem) throw new Error(`MEMSTORE_${k.toUpperCase()} ${problem}`);
      this.env[k] = v;
    }

    const master = MasterKey.resolve(cfg.secretKey, this.keyFile);
    this.svcKey = master.derive('service-key');
    this.store = new CredentialStore(this.credentialFile, master.derive('credential-store'));
    this.creds = this.store.load();
    this.file = this.loadConfigFile();
  }

  /** The settings in effect (environment over files over defaults). */
  current(): ResolvedSettings {
    const out = {} as Record<SettingKey, unknown>;
    for (const k of SETTING_KEYS) out[k] = this.value(k);
    out.objstore_presign_ttl = parsePresignTtl(this.value('objstore_presign_ttl') ?? String(PRESIGN_TTL_DEFAULT));
    out.memory_history_keep = parsePresignTtl(this.value('memory_history_keep') ?? String(HISTORY_KEEP_DEFAULT));
    return out as unknown as ResolvedSettings;
  }

  /** Where each value in effect comes from. */
  sources(): Record<SettingKey, SettingSource> {
    const out = {} as Record<SettingKey, SettingSource>;
    for (const k of SETTING_KEYS) {
      if (this.env[k] !== undefined) out[k] = 'env';
      else if (this.stored(k) !== undefined) out[k] = CREDENTIAL_KEYS.includes(k) ? 'credentials' : 'file';
      else out[k] = 'default';
    }
    return out;
  }

  /** Values in effect with secrets masked (GET /api/config). */
  masked(): SettingValues {
    const cur = this.current();
    const out = {} as SettingValues;
    for (const k of SETTING_KEYS) {
      const v = cur[k];
      out[k] = typeof v === 'string' ? maskSetting(k, v) : v;
    }
    return out;
  }

  /** Values in effect, unmasked (GET /api/config/raw). */
  raw(): SettingValues {
    return { ...this.current() };
  }

  paths(): { config_file: { path: string; exists: boolean }; credential_store: { path: string; exists: boolean } } {
    return {
      config_file: { path: this.configFile, exists: fs.existsSync(this.configFile) },
      credential_store: { path: this.credentialFile, exists: fs.existsSync(this.credentialFile) },
    };
  }

  /**
   * Partial save: absent or null = unchanged, "" = cleared (back to the default), anything else
   * replaces the stored value after validation. A secret posted back exactly as GET /api/config
   * masked it is treated as unchanged, so a form can resubmit what it was given.
   */
  async save(input: SettingsInput): Promise<SaveResult> {
    const nextFile = { ...this.file };
    const nextCreds: CredentialData = { settings: { ...this.creds.settings }, internal: { ...this.creds.internal } };
    const saved: SettingKey[] = [];
    let fileChanged = false;
    let credsChanged = false;

    for (const k of SETTING_KEYS) {
      const rawVal = input[k];
      if (rawVal === undefined || rawVal === null) continue;
      let val = String(rawVal).trim();
      const current = this.stored(k) ?? null;
      if (SECRET_KEYS.includes(k) && current !== null && val !== '' && val !== current && val === maskSetting(k, current)) continue;
      if (val !== '') {
        const problem = checkSetting(k, val);
        if (problem) throw RequestValidationError.one(['body', k], `${k} ${problem}`, 'value_error', rawVal);
        if (k === 'objstore_presign_ttl' || k === 'memory_history_keep') val = String(parsePresignTtl(val));
      }
      const target: Record<string, string> = CREDENTIAL_KEYS.includes(k) ? nextCreds.settings : nextFile;
      if (val === '') delete target[k];
      else target[k] = val;
      if (CREDENTIAL_KEYS.includes(k)) credsChanged = true;
      else fileChanged = true;
      saved.push(k);
    }

    if (credsChanged) this.store.save(nextCreds);
    if (fileChanged) this.writeConfigFile(nextFile);
    this.creds = nextCreds;
    this.file = nextFile;
    if (saved.length > 0) this.changes.next(this.current());
    return { saved, overridden: saved.filter((k) => this.env[k] !== undefined), ...this.completeness() };
  }

  /**
   * Whether the chosen backends have every setting they need (CONTRACT §5):
   * - document database: embedded SQLite needs nothing; MongoDB (docdb_uri set) needs only the
   *   URI (database: docdb_db, else the one named in the URI, else "memstore"; collection
   *   defaults to "memories");
   * - object store: the filesystem needs nothing; S3 (objstore_bucket set) needs
   *   objstore_access_key_id and objstore_secret_access_key. The endpoint is optional: the explicit
   *   objstore_endpoint, else the R2 endpoint of objstore_account_id, else AWS S3 (us-east-1).
   */
  completeness(): Completeness {
    const s = this.current();
    const missing: SettingKey[] = [];
    if (s.objstore_bucket) {
      if (!s.objstore_access_key_id) missing.push('objstore_access_key_id');
      if (!s.objstore_secret_access_key) missing.push('objstore_secret_access_key');
    }
    return { complete: missing.length === 0, missing };
  }

  /** Internal secrets kept in the credential store (e.g. the generated admin password hash). */
  getInternalSecret(name: InternalSecretName): string | null {
    return this.creds.internal[name] ?? null;
  }

  async setInternalSecret(name: InternalSecretName, value: string): Promise<void> {
    await this.setInternalSecrets({ [name]: value });
  }

  /** Sets (or, with null, removes) several internal secrets in one write of the credential store. */
  async setInternalSecrets(values: Partial<Record<InternalSecretName, string | null>>): Promise<void> {
    const internal = { ...this.creds.internal };
    for (const [k, v] of Object.entries(values)) {
      if (v === null) delete internal[k];
      else if (v !== undefined) internal[k] = v;
    }
    const next: CredentialData = { settings: { ...this.creds.settings }, internal };
    this.store.save(next);
    this.creds = next;
  }

  /**
   * Re-reads the internal secrets from the credential store file, so a change written by another
   * process (`memstore admin set-password` while the service runs) is seen, and not overwritten
   * by this process's next save. Keeps what it had when the file cannot be read.
   */
  reloadInternalSecrets(): void {
    try {
      this.creds = { settings: this.creds.settings, internal: this.store.load().internal };
    } catch {
      /* unreadable now: keep the copy loaded at start */
    }
  }

  /**
   * 32-byte key for HMAC signing (download URLs, token hashing, session secret), derived with
   * HKDF from MEMSTORE_SECRET_KEY or the generated key file; stable across restarts and
   * independent of the credential store key.
   */
  serviceKey(): Buffer {
    return Buffer.from(this.svcKey);
  }

  private svcKeyObject?: KeyObject;

  /**
   * The service key as a KeyObject, made once: an HMAC under a Buffer key imports the key on every
   * call (~30-50 µs on our 2-core machine against ~5 µs with a KeyObject), and every API request
   * hashes its token's secret.
   */
  serviceKeyObject(): KeyObject {
    return (this.svcKeyObject ??= createSecretKey(Buffer.from(this.svcKey)));
  }

  private value(k: SettingKey): string | null {
    return this.env[k] ?? this.stored(k) ?? DEFAULTS[k] ?? null;
  }

  private stored(k: SettingKey): string | undefined {
    return CREDENTIAL_KEYS.includes(k) ? this.creds.settings[k] : this.file[k];
  }

  private loadConfigFile(): Partial<Record<SettingKey, string>> {
    removeStaleTempFiles(this.configFile);
    const raw = readFileIfExists(this.configFile);
    if (raw === null) return {};
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new Error(`Config file ${this.configFile} is not valid JSON; fix or remove it`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error(`Config file ${this.configFile} must hold a JSON object`);
    const out: Partial<Record<SettingKey, string>> = {};
    for (const k of SETTING_KEYS) {
      if (CREDENTIAL_KEYS.includes(k)) continue; // secrets never come from the plain file
      const v = (parsed as Record<string, unknown>)[k];
      if (v === undefined || v === null || v === '') continue;
      const str = typeof v === 'string' ? v : JSON.stringify(v);
      const problem = checkSetting(k, str);
      if (problem) throw new Error(`Config file ${this.configFile}: ${k} ${problem}`);
      out[k] = str;
    }
    return out;
  }

  private writeConfigFile(values: Partial<Record<SettingKey, string>>): void {
    const ordered: Record<string, string> = {};
    for (const k of SETTING_KEYS) if (values[k] !== undefined) ordered[k] = values[k];
    writeFileAtomic(this.configFile, JSON.stringify(ordered, null, 2) + '\n', 0o600);
  }
}
