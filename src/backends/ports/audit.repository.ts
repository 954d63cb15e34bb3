/** Who did an audited action: the admin (by username), an API token (id and name), or nobody signed in. */
export interface AuditActor {
  kind: 'admin' | 'token' | 'anonymous';
  /** Admin username or token id; null when anonymous. */
  id: string | null;
  /** Token name (admin: the username); null when anonymous. */
  name: string | null;
}

export interface AuditEntry {
  /** Sortable id: newer entries have greater ids (see newAuditId). */
  id: string;
  at: Date;
  /** e.g. admin.login, token.create, settings.update, backend.test, memory.delete (see AUDIT_ACTIONS). */
  action: string;
  outcome: 'success' | 'failure';
  actor: AuditActor;
  /** What the action was on (token id, memory id), when there is one thing. */
  target: string | null;
  /** Client address as the service saw it (MEMSTORE_TRUST_PROXY applies). */
  address: string | null;
  requestId: string | null;
  /** Non-secret facts (field names, counts, HTTP status, error message); never a secret, a password or memory content. */
  detail: Record<string, unknown>;
}

export interface AuditQuery {
  /** Exact action name. */
  action?: string;
  /** Actor id: a token id, or the admin username. */
  actor?: string;
  /** Entries at or after this time. */
  since?: Date;
  /** Entries older than this id (the previous page's next cursor). */
  before?: string;
  limit: number;
}

/** The audit log in the document database: append-only, read newest first, pruned by age. */
export abstract class AuditRepository {
  abstract append(entry: AuditEntry): Promise<void>;
  /** Newest first; `hasMore` when older entries match too. */
  abstract list(query: AuditQuery): Promise<{ entries: AuditEntry[]; hasMore: boolean }>;
  /** Deletes entries older than `before`; returns how many. */
  abstract prune(before: Date): Promise<number>;
}

/** Time-ordered ids: 9 base-36 digits of milliseconds, then 12 random hex digits. */
export function newAuditId(at: Date, random: string): string {
  return `${at.getTime().toString(36).padStart(9, '0')}${random}`;
}
