import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AuditActor, AuditEntry, AuditQuery, AuditRepository, newAuditId } from '../backends/ports/audit.repository';
import { TokenRepository } from '../backends/ports/token.repository';
import { BackendUnavailableError } from '../common/errors';
import { AppConfig } from '../config/app-config';
import { requestLogContext } from '../observability/json-logger';

/**
 * Audited actions. Admin actions: sign-in (success and failure, with the username tried), sign-out,
 * password change (page or command line), token create/update/revoke/delete, settings change,
 * backend test, migration. Memory actions: delete, bulk delete, import (also failed or aborted),
 * restore, export (a bulk read). Refused API tokens (`token.refused`, aggregated: see recordRefusal).
 */
export const AUDIT_ACTIONS = [
  'admin.login',
  'admin.logout',
  'admin.password_change',
  'token.refused',
  'memory.export',
  'backend.migrate',
  'token.create',
  'token.update',
  'token.revoke',
  'token.delete',
  'settings.update',
  'backend.test',
  'memory.delete',
  'memory.bulk_delete',
  'memory.import',
  'memory.restore',
  'namespace.purge',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditRecordOptions {
  outcome?: 'success' | 'failure';
  /** The one thing the action was on (token id, memory id). */
  target?: string | null;
  /** Non-secret facts: field names, counts, ids, an error message. Never a secret, a password or memory content. */
  detail?: Record<string, unknown>;
  /** The request (default: the one being served, if any; outside a request the actor is `anonymous`). */
  req?: Request;
  /** Overrides who did it (e.g. a command-line tool). */
  actor?: AuditActor;
}

const PRUNE_EVERY_MS = 3_600_000;
/** How often spooled entries are offered to the document database again. */
const SPOOL_REPLAY_EVERY_MS = 30_000;
/** Refused-token entries: at most one per client address per window, and at most REFUSALS_PER_WINDOW in all. */
const REFUSAL_WINDOW_MS = 60_000;
const REFUSALS_PER_WINDOW = 60;
const REFUSAL_ADDRESSES_KEPT = 10_000;

/**
 * Writes the audit log to the active document database and prunes it (entries older than
 * MEMSTORE_AUDIT_RETENTION_DAYS, at start and hourly). An entry that cannot be written fails the
 * action's answer with a 503 naming the document database (decision 0051): `record` throws.
 *
 * One line from any service or controller: `await this.audit.record('memory.restore', { target: id })`
 * — or `@Audited('memory.import')` on a controller method (see audited.decorator.ts).
 */
/** The local file where audit entries wait while the document database refuses them (in the data directory). */
export const AUDIT_SPOOL_FILE = 'audit-spool.jsonl';

@Injectable()
export class AuditService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Audit');
  private timer?: NodeJS.Timeout;
  /** Refused-token aggregation (recordRefusal): per address, and for the whole window. */
  private readonly refusals = new Map<string, { since: number; unrecorded: number }>();
  private refusalWindow = { since: 0, recorded: 0, unrecorded: 0 };

  constructor(
    private readonly entries: AuditRepository,
    private readonly tokens: TokenRepository,
    private readonly cfg: AppConfig,
  ) {}

  async record(action: AuditAction, opts: AuditRecordOptions = {}): Promise<void> {
    const req = opts.req ?? requestLogContext.getStore()?.request;
    const at = new Date();
    try {
      const entry: AuditEntry = {
        id: newAuditId(at, randomBytes(6).toString('hex')),
        at,
        action,
        outcome: opts.outcome ?? 'success',
        actor: opts.actor ?? (await this.actorOf(req)),
        target: opts.target ?? null,
        address: req ? (req.ip ?? req.socket?.remoteAddress ?? null) : null,
        requestId: req?.id ?? null,
        detail: opts.detail ?? {},
      };
      try {
        await this.entries.append(entry);
      } catch (e) {
        // The document database refused it: queued durably on local disk instead (replayed once the
        // database takes entries again), so an admin can still sign in and repair the backends during
        // an outage. Only when that fails too is the action refused (decision 0051).
        await this.spool(entry, e as Error);
        return;
      }
      if (this.spooled) await this.replaySpool();
    } catch (e) {
      const reason = (e as Error).message;
      this.logger.error(`Audit entry '${action}' was not recorded: ${reason}`);
      throw new BackendUnavailableError('Document database', `the audit entry of this action (${action}) could not be written, so the action is not confirmed (${reason})`);
    }
  }

  /** Entries waiting in the local spool file (set when one is written or found at start). */
  private spooled = false;

  private get spoolFile(): string {
    return path.join(this.cfg.dataDir, AUDIT_SPOOL_FILE);
  }

  /** Appends the entry to the spool file and syncs it to disk; throws (with the database's reason) when it cannot. */
  private async spool(entry: AuditEntry, cause: Error): Promise<void> {
    try {
      const fh = await fs.promises.open(this.spoolFile, 'a', 0o600);
      try {
        await fh.appendFile(`${JSON.stringify(entry)}\n`);
        await fh.datasync();
      } finally {
        await fh.close();
      }
    } catch (spoolError) {
      throw new Error(`${cause.message}; the local audit spool failed too: ${(spoolError as Error).message}`, { cause: spoolError });
    }
    this.spooled = true;
    this.logger.warn(`Audit entry '${entry.action}' queued in ${AUDIT_SPOOL_FILE} (the document database refused it: ${cause.message})`);
  }

  /**
   * Moves spooled entries into the document database, oldest first; the file goes once all are in
   * (an entry appended twice after a crash here keeps its id: the log shows it twice at worst, never loses it).
   */
  async replaySpool(): Promise<void> {
    if (this.replaying) return;
    this.replaying = true;
    try {
      const moving = `${this.spoolFile}.replaying`;
      if (!fs.existsSync(moving)) {
        if (!fs.existsSync(this.spoolFile)) {
          this.spooled = false;
          return;
        }
        await fs.promises.rename(this.spoolFile, moving);
      }
      const lines = (await fs.promises.readFile(moving, 'utf8')).split('\n').filter((l) => l.trim() !== '');
      for (const line of lines) {
        const raw = JSON.parse(line) as AuditEntry & { at: string };
        await this.entries.append({ ...raw, at: new Date(raw.at) });
      }
      await fs.promises.rm(moving, { force: true });
      this.spooled = fs.existsSync(this.spoolFile);
      this.logger.log(`Audit spool: ${lines.length} queued entr${lines.length === 1 ? 'y' : 'ies'} recorded`);
    } catch (e) {
      this.logger.warn(`Audit spool not replayed yet: ${(e as Error).message}`);
    } finally {
      this.replaying = false;
    }
  }
  private replaying = false;

  /**
   * A refused API token (401/403 at the guard): recorded as `token.refused` with the token id tried
   * (never the secret) and the reason, but bounded so that a flood of bad tokens cannot flood the log:
   * at most one entry per client address per minute and REFUSALS_PER_WINDOW entries a minute in all;
   * each entry says how many refusals went unrecorded before it (`unrecorded_before`). Best effort:
   * never delays or changes the 401/403 itself.
   */
  recordRefusal(req: Request, status: number, reason: string, tokenId: string | null): void {
    const now = Date.now();
    const address = req.ip ?? req.socket?.remoteAddress ?? '';
    const w = this.refusalWindow;
    if (now - w.since >= REFUSAL_WINDOW_MS) this.refusalWindow = { since: now, recorded: 0, unrecorded: w.unrecorded };
    const win = this.refusalWindow;
    const mine = this.refusals.get(address);
    if ((mine && now - mine.since < REFUSAL_WINDOW_MS) || win.recorded >= REFUSALS_PER_WINDOW) {
      if (mine && now - mine.since < REFUSAL_WINDOW_MS) mine.unrecorded++;
      else win.unrecorded++;
      return;
    }
    if (this.refusals.size >= REFUSAL_ADDRESSES_KEPT) {
      for (const [k, v] of this.refusals) if (now - v.since >= REFUSAL_WINDOW_MS) this.refusals.delete(k);
      if (this.refusals.size >= REFUSAL_ADDRESSES_KEPT) this.refusals.clear();
    }
    const unrecorded = (mine?.unrecorded ?? 0) + win.unrecorded;
    win.unrecorded = 0;
    win.recorded++;
    this.refusals.set(address, { since: now, unrecorded: 0 });
    this.record('token.refused', {
      req,
      outcome: 'failure',
      actor: { kind: 'anonymous', id: null, name: null },
      target: tokenId,
      detail: { status, error: reason, unrecorded_before: unrecorded },
    }).catch(() => undefined);
  }

  list(query: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean }> {
    return this.entries.list(query);
  }

  /** Deletes entries older than the retention period from the active document database. */
  async prune(now = Date.now()): Promise<number> {
    const cutoff = new Date(now - this.cfg.auditRetentionDays * 86_400_000);
    const n = await this.entries.prune(cutoff);
    if (n > 0) this.logger.log(`Pruned ${n} audit entr${n === 1 ? 'y' : 'ies'} older than ${this.cfg.auditRetentionDays} days`);
    return n;
  }

  onApplicationBootstrap(): void {
    this.spooled = fs.existsSync(this.spoolFile) || fs.existsSync(`${this.spoolFile}.replaying`);
    const run = () => {
      void this.prune().catch((e) => this.logger.warn(`Audit pruning failed: ${(e as Error).message}`));
      if (this.spooled) void this.replaySpool();
    };
    run();
    this.timer = setInterval(run, PRUNE_EVERY_MS);
    this.timer.unref();
    this.spoolTimer = setInterval(() => this.spooled && void this.replaySpool(), SPOOL_REPLAY_EVERY_MS);
    this.spoolTimer.unref();
  }
  private spoolTimer?: NodeJS.Timeout;

  onApplicationShutdown(): void {
    clearInterval(this.timer);
    clearInterval(this.spoolTimer);
  }

  private async actorOf(req: Request | undefined): Promise<AuditActor> {
    const p = req?.principal;
    if (p?.kind === 'token') {
      const token = await this.tokens.findById(p.tokenId).catch(() => null);
      return { kind: 'token', id: p.tokenId, name: token?.name ?? null };
    }
    // The admin: signed in before this request, or by it (a successful sign-in).
    const username = p?.kind === 'admin' ? p.username : req?.session?.admin?.username;
    if (username) return { kind: 'admin', id: username, name: username };
    return { kind: 'anonymous', id: null, name: null };
  }
}
