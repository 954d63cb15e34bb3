/** Response shapes from CONTRACT.md (§3–§6). */

export const MEMORY_TYPES = ['note', 'fact', 'decision', 'task', 'preference', 'reference', 'code', 'conversation'] as const;
export const MEMORY_SCOPES = ['global', 'project', 'agent', 'user'] as const;
export const TOKEN_SCOPES = ['memory:read', 'memory:write', 'memory:delete', 'metrics:read', 'tokens:manage'] as const;
/** Audit log actions: the server's own list. */
export { AUDIT_ACTIONS } from '../../src/audit/audit-actions';
import type { Explanation } from '../../src/memories/search/relevance';
export const TOKEN_PRESETS: Record<string, string[]> = {
  'read-only': ['memory:read'],
  'read-write': ['memory:read', 'memory:write'],
  full: ['memory:read', 'memory:write', 'memory:delete'],
};

export interface Me {
  ok: true;
  authenticated: boolean;
  kind?: 'admin' | 'token';
  username?: string;
  must_change_password?: boolean;
}

export interface BackendStatus {
  backend: string;
  ok: boolean;
  detail?: string | null;
}

export interface EmbeddingStatus {
  provider: string;
  model: string | null;
  dimensions: number | null;
  pending: number | null;
  embedded: number | null;
  failing: number | null;
  last_error: string | null;
  state: 'keyword-only' | 'ready' | 'embedding' | 're-embedding';
  progress: number | null;
  reason: string | null;
}

export interface StatusResponse {
  docdb: BackendStatus;
  objstore: BackendStatus;
  public_url: string | null;
  embeddings?: EmbeddingStatus;
}

export interface Stats {
  total: number;
  by_type: Record<string, number>;
  by_scope: Record<string, number>;
  by_project: Record<string, number>;
  by_agent?: Record<string, number>;
}

export interface TestResult {
  ok: boolean;
  backend?: string;
  latency_ms?: number;
  detail?: string;
  error?: string;
}

export interface SchemaField {
  key: string;
  label: string;
  type: string;
  secret: boolean;
  required: boolean;
  help?: string | null;
  options?: string[];
  placeholder?: string;
}

export interface SchemaSection {
  id: string;
  title: string;
  description?: string;
  fields: SchemaField[];
}

export interface ConfigResponse {
  config: Record<string, string | number | null>;
  sources: Record<string, 'env' | 'file' | 'credentials' | 'default' | string>;
  complete: boolean;
  missing: string[];
  status: string;
  /** The adapters in use: docdb 'sqlite' | 'mongodb', objstore 'filesystem' | 's3'. */
  active?: { docdb: string; objstore: string };
}

export interface TokenRecord {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  /** Namespaces the token works in (issue 43): names, prefixes `p/*`, or `*`. */
  namespaces: string[];
  status: 'active' | 'revoked' | 'expired';
  created_at: string;
  expires_at: number | null;
  allowed_ips: string[] | null;
  last_used_at: string | null;
  revoked_at: string | null;
  /** The manager token that minted it; null when the administrator did. */
  created_by: string | null;
  /** Requests per minute; 0 = unlimited. */
  rate_limit_per_minute: number;
  recent_requests_per_minute: number;
}

export interface MemoryRow {
  id: string;
  title: string | null;
  type: string;
  tags: string[];
  scope: string;
  agent: string | null;
  project: string | null;
  snippet: string;
  created_at: string;
  updated_at: string;
  score?: number;
  /** Hybrid and semantic searches: which rankings found the row. */
  matched?: Array<'keyword' | 'semantic'>;
  /** Hybrid and semantic searches with explain=true: the signals that placed the row. */
  explain?: SearchExplain;
}

/** A row's explain: the server's own shape. */
export type SearchExplain = Explanation;

/** GET /api/namespaces. */
export interface NamespaceList {
  namespaces: Array<{ namespace: string; memories: number; bytes: number }>;
  has_next: boolean;
  next_cursor: string | null;
  quota: { max_memories: number | null; max_bytes: number | null };
}

export interface MemoryList {
  rows: MemoryRow[];
  count: number;
  total: number;
  page: number | null;
  page_size: number;
  total_pages: number;
  has_prev: boolean;
  has_next: boolean;
  next_cursor: string | null;
  mode: 'list' | 'search';
  search_mode?: 'hybrid' | 'keyword' | 'semantic';
  /** Hybrid and semantic searches: the best score among the memories below the floor (null: none). */
  best_below_floor?: number | null;
}

export interface Memory {
  id: string;
  title: string | null;
  type: string;
  content: string;
  tags: string[];
  scope: string;
  agent: string | null;
  project: string | null;
  created_at: string;
  updated_at: string;
  version: number;
}

/** One kept version of a memory (GET /api/memories/{id}/versions). */
export interface MemoryVersion {
  version: number;
  updated_at: string;
  title: string | null;
  size: number;
  author: { kind: 'token' | 'admin'; id: string; name: string | null } | null;
  current: boolean;
}

export interface MemoryVersionList {
  rows: MemoryVersion[];
  total: number;
  current_version: number;
}

/** One tab of the page: renders into its panel each time it is shown (data is always fresh). */
export interface Tab {
  id: string;
  label: string;
  render(panel: HTMLElement): void | Promise<void>;
}
