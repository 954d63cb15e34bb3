import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import { randomBytes } from 'node:crypto';
import { AuditActor, AuditEntry, AuditQuery, AuditRepository, newAuditId } from '../backends/ports/audit.repository';
import { TokenRepository } from '../backends/ports/token.repository';
import { AppConfig } from '../config/app-config';
import { requestLogContext } from '../observability/json-logger';

/**
 * Audited actions. Admin actions: sign-in (success and failure), password change (page or command line), token create/update/revoke/delete,
 * settings change, backend test. Destructive memory actions: delete, bulk delete, import, restore.
 */
export const AUDIT_ACTIONS = [
  'admin.login',
  'admin.password_change',
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

/**
 * Writes the audit log to the active document database and prunes it (entries older than
 * MEMSTORE_AUDIT_RETENTION_DAYS, at start and hourly). Recording never fails the action: if the
 * database cannot take the entry, a warning is logged.
 *
 * One line from any service or controller: `await this.audit.record('memory.restore', { target: id })`
 * — or `@Audited('memory.import')` on a controller method (see audited.decorator.ts).
 */
@Injectable()
export class AuditService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Audit');
  private timer?: NodeJS.Timeout;

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
      await this.entries.append(entry);
    } catch (e) {
      this.logger.warn(`Audit entry '${action}' was not recorded: ${(e as Error).message}`);
    }
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
    const run = () => void this.prune().catch((e) => this.logger.warn(`Audit pruning failed: ${(e as Error).message}`));
    run();
    this.timer = setInterval(run, PRUNE_EVERY_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
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
