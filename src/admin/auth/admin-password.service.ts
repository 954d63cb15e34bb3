import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import * as bcrypt from 'bcrypt';
import { randomBytes, timingSafeEqual, createHash } from 'node:crypto';
import { SessionRepository } from '../../backends/ports/session.repository';
import { ConflictError, ForbiddenError, RequestValidationError } from '../../common/errors';
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

export function generatedPasswordBanner(username: string, password: string, url?: string): string {
  const lines = [
    'Memory Store: no admin password was configured, so one was generated.',
    '',
    `  username: ${username}`,
    `  password: ${password}`,
    '',
    'It is shown only this once; only its bcrypt hash is kept (credential store).',
    `Next: open ${url ? `${url}/` : 'the admin page'}, sign in and choose your own password`,
    '(or run: npx memstore admin set-password). Then create an API token there.',
  ];
  const width = Math.max(...lines.map((l) => l.length));
  const bar = `+${'-'.repeat(width + 2)}+`;
  return ['', bar, ...lines.map((l) => `| ${l.padEnd(width)} |`), bar, ''].join('\n') + '\n';
}

/** Shortest admin password we store (a generated one has 24 characters). */
export const ADMIN_PASSWORD_MIN_CHARS = 12;

/** Why a new admin password is refused, in words for a person; null when it is acceptable. */
export function adminPasswordProblem(password: string): string | null {
  if ([...password].length < ADMIN_PASSWORD_MIN_CHARS) return `The new password must have at least ${ADMIN_PASSWORD_MIN_CHARS} characters`;
  if (Buffer.byteLength(password, 'utf8') > 72) return 'The new password must be at most 72 bytes long (bcrypt ignores the rest)';
  if (password.trim() === '') return 'The new password cannot be only spaces';
  return null;
}

/** The environment variable that fixes the admin password (then it cannot be changed here), or null. */
export function adminPasswordEnv(cfg: AppConfig): string | null {
  if (cfg.adminPasswordHash) return 'MEMSTORE_ADMIN_PASSWORD_HASH';
  if (cfg.adminPassword) return 'MEMSTORE_ADMIN_PASSWORD';
  return null;
}

/**
 * Stores a new admin password (its bcrypt hash, in the credential store) and signs out every
 * admin session but `keepSid`. Used by POST /api/admin/password and `memstore admin set-password`.
 * Refused (409) while the environment sets the password, which would win at the next start.
 */
export async function storeAdminPassword(cfg: AppConfig, settings: SettingsService, sessions: SessionRepository, password: string, keepSid?: string): Promise<{ hash: string; signedOut: number }> {
  const env = adminPasswordEnv(cfg);
  if (env) throw new ConflictError(`The admin password is set by ${env}; change it there and restart the service`);
  const problem = adminPasswordProblem(password);
  if (problem) throw RequestValidationError.one(['body', 'new_password'], problem, 'value_error');
  const hash = await bcrypt.hash(password, BCRYPT_COST);
  await settings.setInternalSecrets({ admin_password_hash: hash, admin_password_generated: null });
  let signedOut = 0;
  for (const s of await sessions.all()) {
    if (s.sid === keepSid) continue;
    await sessions.destroy(s.sid);
    signedOut += 1;
  }
  return { hash, signedOut };
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
    await this.settings.setInternalSecrets({ admin_password_hash: hash, admin_password_generated: '1' });
    this.hash = hash;
    this.source = 'generated';
    if (this.cfg.holdAdminBanner) {
      this.heldPassword = password;
      return;
    }
    this.out.write(generatedPasswordBanner(this.cfg.adminUsername, password));
    this.logger.log('Generated the admin password (printed above, once)');
  }

  private heldPassword?: string;

  /** With holdAdminBanner: prints the generated password's box now (once), naming the URL to open. */
  printHeldBanner(url: string): void {
    if (!this.heldPassword) return;
    this.out.write(generatedPasswordBanner(this.cfg.adminUsername, this.heldPassword, url));
    this.heldPassword = undefined;
  }

  /**
   * True when both match. bcrypt runs whatever the username, and the username is compared in
   * constant time, so neither timing nor the answer tells whether the username was right.
   */
  async verify(username: string, password: string): Promise<boolean> {
    await this.init();
    this.refresh();
    const userOk = sameString(username, this.cfg.adminUsername);
    const passwordOk = await bcrypt.compare(password, this.hash!);
    return userOk && passwordOk;
  }

  /** True while the password is the one generated at the first start: sign-in then asks to choose one. */
  mustChange(): boolean {
    return adminPasswordEnv(this.cfg) === null && this.settings.getInternalSecret('admin_password_generated') === '1';
  }

  /**
   * The signed-in admin changes the password: the current one must be right (403 otherwise);
   * every other admin session is signed out. Returns how many were.
   */
  async change(current: string, next: string, sessions: SessionRepository, keepSid: string): Promise<number> {
    await this.init();
    const env = adminPasswordEnv(this.cfg);
    if (env) throw new ConflictError(`The admin password is set by ${env}; change it there and restart the service`);
    this.refresh();
    if (!(await bcrypt.compare(current, this.hash!))) throw new ForbiddenError('The current password is wrong');
    if (current === next) throw RequestValidationError.one(['body', 'new_password'], 'The new password must differ from the current one', 'value_error');
    const { hash, signedOut } = await storeAdminPassword(this.cfg, this.settings, sessions, next, keepSid);
    this.hash = hash;
    this.source = 'credential-store';
    this.logger.log(`The admin password was changed; ${signedOut} other session(s) signed out`);
    return signedOut;
  }

  /** A stored password may have been changed by another process (the command line): read it again. */
  private refresh(): void {
    if (this.source !== 'credential-store' && this.source !== 'generated') return;
    this.settings.reloadInternalSecrets();
    const stored = this.settings.getInternalSecret('admin_password_hash');
    if (stored) this.hash = stored;
  }
}
