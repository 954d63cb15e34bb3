import { Injectable } from '@nestjs/common';
import { MemoryIndex } from '../backends/ports/memory-index.port';
import { AppError } from '../common/errors';
import { AppConfig } from '../config/app-config';

/** Which quota a write would exceed. */
export type QuotaName = 'memories' | 'bytes';

/**
 * 403 `namespace_quota_exceeded` (decision 0156): a create, update or import that would take a
 * namespace over MEMSTORE_NAMESPACE_MAX_MEMORIES or MEMSTORE_NAMESPACE_MAX_BYTES. The body names
 * the quota, the namespace, the limit, what is used and what the write asked for; repeating the
 * request does not help until memories are deleted or the quota is raised.
 */
export class QuotaExceededError extends AppError {
  readonly extra: Record<string, unknown>;
  constructor(
    readonly quota: QuotaName,
    readonly namespace: string,
    readonly limit: number,
    readonly used: number,
    readonly requested: number,
  ) {
    const what = quota === 'memories' ? `${limit} memories` : `${limit} bytes of content`;
    super(
      403,
      `Namespace "${namespace}" would exceed its quota of ${what} (${used} used, this write adds ${requested}; MEMSTORE_NAMESPACE_MAX_${quota.toUpperCase()}): delete memories or ask for a higher quota`,
    );
    this.extra = { code: 'namespace_quota_exceeded', quota: { name: quota, namespace, limit, used, requested } };
  }
}

/** The quotas every namespace has (null: none). */
export interface NamespaceLimits {
  maxMemories: number | null;
  maxBytes: number | null;
}

/**
 * Per-namespace quotas (issue 43, decision 0156), off unless configured. A check reads the
 * namespace's running usage (one row on SQLite; an aggregation over the namespace's own memories
 * on MongoDB), only when a quota is set and the write adds memories or bytes. `within` runs the
 * check and the index write one at a time per namespace in this process, so concurrent writes
 * (an import writes several at once) cannot together pass a quota; several instances sharing
 * MongoDB may still pass it by the writes they have in flight at the same moment.
 */
@Injectable()
export class NamespaceQuotas {
  constructor(
    private readonly index: MemoryIndex,
    private readonly cfg: AppConfig,
  ) {}

  /** The writes of a namespace waiting for their turn (only while a quota applies to them). */
  private readonly queues = new Map<string, Promise<void>>();

  get limits(): NamespaceLimits {
    return { maxMemories: this.cfg.namespaceMaxMemories || null, maxBytes: this.cfg.namespaceMaxBytes || null };
  }

  /** Which quotas a write adding `memories` memories and `bytes` bytes meets (none: nothing to check). */
  private applying(memories: number, bytes: number): { maxMemories: number | null; maxBytes: number | null } | null {
    const { maxMemories, maxBytes } = this.limits;
    const applies = { maxMemories: memories > 0 ? maxMemories : null, maxBytes: bytes > 0 ? maxBytes : null };
    return applies.maxMemories === null && applies.maxBytes === null ? null : applies;
  }

  /** Throws QuotaExceededError when adding `memories` memories and `bytes` bytes of content to `ns` goes over a quota. */
  async check(ns: string, memories: number, bytes: number): Promise<void> {
    const quotas = this.applying(memories, bytes);
    if (quotas === null) return;
    const { maxMemories, maxBytes } = quotas;
    const [used] = await this.index.namespaceUsage({ names: [ns], limit: 1 });
    const usedMemories = used?.memories ?? 0;
    const usedBytes = used?.bytes ?? 0;
    if (maxMemories !== null && usedMemories + memories > maxMemories) throw new QuotaExceededError('memories', ns, maxMemories, usedMemories, memories);
    if (maxBytes !== null && usedBytes + bytes > maxBytes) throw new QuotaExceededError('bytes', ns, maxBytes, usedBytes, bytes);
  }

  /** check, then `write`, one at a time per namespace in this process (directly when no quota applies). */
  within<T>(ns: string, memories: number, bytes: number, write: () => Promise<T>): Promise<T> {
    if (this.applying(memories, bytes) === null) return write();
    const run = (this.queues.get(ns) ?? Promise.resolve()).then(async () => {
      await this.check(ns, memories, bytes);
      return write();
    });
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(ns, tail);
    void tail.then(() => {
      if (this.queues.get(ns) === tail) this.queues.delete(ns);
    });
    return run;
  }
}
