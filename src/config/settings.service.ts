import { Injectable } from '@nestjs/common';
import { Subject } from 'rxjs';
import { AppConfig, SETTING_KEYS, SettingKey } from './app-config';

// NOTE(skeleton): in-memory placeholder with the final public surface. The settings helper
// replaces the body with the config file + encrypted credential store (CONTRACT §5, §7).

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
}

export type SettingSource = 'env' | 'file' | 'credentials' | 'default';
export type SettingsInput = Partial<Record<SettingKey, string | number | null>>;

@Injectable()
export class SettingsService {
  /** Emits the new resolved settings after every successful save. */
  readonly changes = new Subject<ResolvedSettings>();
  private values: Partial<Record<SettingKey, string>> = {};

  constructor(private readonly cfg: AppConfig) {}

  current(): ResolvedSettings {
    const v = (k: SettingKey): string | null => this.cfg.settingsEnv[k] ?? this.values[k] ?? null;
    const out = {} as Record<SettingKey, unknown>;
    for (const k of SETTING_KEYS) out[k] = v(k);
    out.objstore_presign_ttl = Number(v('objstore_presign_ttl') ?? 3600);
    return out as unknown as ResolvedSettings;
  }

  async save(input: SettingsInput): Promise<{ saved: SettingKey[]; complete: boolean; missing: SettingKey[] }> {
    const saved: SettingKey[] = [];
    for (const k of SETTING_KEYS) {
      const val = input[k];
      if (val === undefined || val === null) continue;
      if (val === '') delete this.values[k];
      else this.values[k] = String(val);
      saved.push(k);
    }
    this.changes.next(this.current());
    return { saved, ...this.completeness() };
  }

  completeness(): { complete: boolean; missing: SettingKey[] } {
    return { complete: true, missing: [] };
  }

  /** Internal secrets kept in the credential store (e.g. the generated admin password hash). */
  private internal: Record<string, string> = {};
  getInternalSecret(name: 'admin_password_hash'): string | null {
    return this.internal[name] ?? null;
  }

  async setInternalSecret(name: 'admin_password_hash', value: string): Promise<void> {
    this.internal[name] = value;
  }

  /** 32-byte key for HMAC signing (download URLs, token hashing): MEMSTORE_SECRET_KEY or a generated key file. */
  serviceKey(): Buffer {
    return Buffer.alloc(32, 7);
  }
}
