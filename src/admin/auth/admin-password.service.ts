import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import * as bcrypt from 'bcrypt';
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { AppConfig } from '../../config/app-config';
import { SettingsService } from '../../config/settings.service';

export const BCRYPT_COST = 12;

/** Where the admin password hash came from (for logs and tests). */
export type AdminPasswordSource = 'env-hash' | 'env-password' | 'credential-store' | 'generated';

/** Where the one-time banner with a generated password is written (the console by default). */
export abstract class ConsoleOutput {
  abstract write(text: string): void;
}

@Injectable()
export class StdoutConsoleOutput extends ConsoleOutput {
  constructor(private readonly cfg: AppConfig) {
    super();
  }

  override write(text: string): void {
    // MEMSTORE_LOG_FORMAT=json: the banner is one JSON line too, so log collectors keep it whole.
    if (this.cfg.logFormat === 'json') process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'warn', context: 'Admin', message: text.trim() })}\n`);
    else process.stdout.write(text);
  }
}

/** Constant-time string equality (hashes both sides so lengths do not leak). */
function sameString(a: string, b: string): boolean {
  const x = createHash('sha256').update(a, 'utf8').digest();
  const y = createHash('sha256').update(b, 'utf8').digest();
  return timingSafeEqual(x, y);
}

export function generatedPasswordBanner(username: string, password: string): string {
  const lines = [
    'Memory Store: no admin password was configured, so one was generated.',
    '',
    `  username: ${username}`,
    `  password: ${password}`,
    '',
    'It is shown only this once; only its bcrypt hash is kept (credential store).',
    'Set MEMSTORE_ADMIN_PASSWORD or MEMSTORE_ADMIN_PASSWORD_HASH to choose your own.',
  ];
  const width = Math.max(...lines.map((l) => l.length));
  const bar = `+${'-'.repeat(width + 2)}+`;
  return ['', bar, ...lines.map((l) => `| ${l.padEnd(width)} |`), bar, ''].join('\n') + '\n';
}

/**
 * The admin account (CONTRACT §5). Password hash, in order: MEMSTORE_ADMIN_PASSWORD_HASH;
 * MEMSTORE_ADMIN_PASSWORD (bcrypt-hashed at boot, never kept in clear); the hash in the credential
 * store; else a generated password printed once, whose hash goes to the credential store.
 */
@Injectable()
export class AdminPasswordService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Admin');
  private hash: string | null = null;
  private ready?: Promise<void>;
  source?: AdminPasswordSource;

  constructor(
    private readonly cfg: AppConfig,
    private readonly settings: SettingsService,
    private readonly out: ConsoleOutput,
  ) {}

  onApplicationBootstrap(): Promise<void> {
    return this.init();
  }

  private init(): Promise<void> {
    this.ready ??= this.resolve();
    return this.ready;
  }

  private async resolve(): Promise<void> {
    if (this.cfg.adminPasswordHash) {
      if (!/^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/.test(this.cfg.adminPasswordHash)) {
        throw new Error('MEMSTORE_ADMIN_PASSWORD_HASH is not a bcrypt hash ($2b$12$...)');
      }
      this.hash = this.cfg.adminPasswordHash;
      this.source = 'env-hash';
      return;
    }
    if (this.cfg.adminPassword) {
      if (Buffer.byteLength(this.cfg.adminPassword, 'utf8') > 72) {
        this.logger.warn('MEMSTORE_ADMIN_PASSWORD is longer than 72 bytes; bcrypt only checks the first 72');
      }
      this.hash = await bcrypt.hash(this.cfg.adminPassword, BCRYPT_COST);
      this.source = 'env-password';
      return;
    }
    const stored = this.settings.getInternalSecret('admin_password_hash');
    if (stored) {
      this.hash = stored;
      this.source = 'credential-store';
      return;
    }
    const password = randomBytes(18).toString('base64url'); // 144 bits, 24 characters
    const hash = await bcrypt.hash(password, BCRYPT_COST);
    await this.settings.setInternalSecret('admin_password_hash', hash);
    this.hash = hash;
    this.source = 'generated';
    this.out.write(generatedPasswordBanner(this.cfg.adminUsername, password));
    this.logger.log('Generated the admin password (printed above, once)');
  }

  /**
   * True when both match. bcrypt runs whatever the username, and the username is compared in
   * constant time, so neither timing nor the answer tells whether the username was right.
   */
  async verify(username: string, password: string): Promise<boolean> {
    await this.init();
    const userOk = sameString(username, this.cfg.adminUsername);
    const passwordOk = await bcrypt.compare(password, this.hash!);
    return userOk && passwordOk;
  }
}
