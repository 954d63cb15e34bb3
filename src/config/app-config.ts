import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseEnv } from 'node:util';
import { normalizeAllowList } from '../tokens/ip-allow-list';
import { DEFAULT_EMBEDDING_MAX_TOKENS } from '../embeddings/local-embedding.text';
import { Reranker, rerankerFromEnv } from '../embeddings/remote-reranker';

/** Keys an admin can save through POST /api/config (spec §2, CONTRACT §5). */
export const SETTING_KEYS = [
  'docdb_uri',
  'docdb_db',
  'memory_collection',
  'objstore_account_id',
  'objstore_access_key_id',
  'objstore_secret_access_key',
  'objstore_bucket',
  'objstore_endpoint',
  'objstore_public_base',
  'objstore_presign_ttl',
  'memory_history_keep',
  'embedding_provider',
  'embedding_url',
  'embedding_api_key',
  'embedding_model',
  'embedding_dimensions',
  'embedding_cosine_scale',
] as const;
export type SettingKey = (typeof SETTING_KEYS)[number];

/** Limits on memory fields (CONTRACT §3), configurable through the environment. */
export interface MemoryLimits {
  contentMaxBytes: number;
  titleMaxChars: number;
  nameMaxChars: number; // agent, project
  maxTags: number;
  tagMaxChars: number;
  bulkDeleteMax: number;
}

/**
 * Everything the process reads from its environment, validated once at boot.
 * Nothing else in the code base reads process.env.
 */
/**
 * Bounds of one import (POST /api/import and `memstore import`; issue 46, decision 0070). An
 * upload over a bound is refused before anything is written (items, unpacked bytes, ratio), or
 * stopped between two items (time, the client leaving).
 */
export interface ImportLimits {
  /** MEMSTORE_IMPORT_TMP_DIR: where uploads are kept while imported (emptied of a crashed run's files at start). Default <os tmpdir>/memstore-import. */
  tmpDir: string;
  /** MEMSTORE_IMPORT_MAX_ITEMS: files in an archive plus lines of JSONL one import looks at (default 1,000,000). */
  maxItems: number;
  /** MEMSTORE_IMPORT_MAX_UNPACKED_BYTES: the entries of a zip, unpacked, together (default 2 GiB). */
  maxUnpackedBytes: number;
  /** MEMSTORE_IMPORT_MAX_RATIO: unpacked/packed size of a zip entry larger than 1 MiB and the content limit + 64 KiB (default 100). */
  maxRatio: number;
  /** MEMSTORE_IMPORT_MAX_SECONDS: an HTTP import still running after this long is stopped (default 3600). */
  maxSeconds: number;
  /** MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN: imports one token (or the admin session) runs at once (default 1). */
  perToken: number;
  /** MEMSTORE_IMPORT_CONCURRENT: imports this instance runs at once (default 4). */
  concurrent: number;
}

export class AppConfig {
  dataDir: string;
  host: string;
  port: number;
  publicUrl: string | null;
  /** MEMSTORE_OAUTH: OAuth 2.1 sign-in for connectors (claude.ai, ChatGPT) at /mcp/oauth; needs MEMSTORE_PUBLIC_URL. */
  oauth: boolean;
  trustProxy: boolean;
  /** MEMSTORE_SECRET_KEY; when null a key file beside the credential store is generated. */
  secretKey: string | null;
  adminUsername: string;
  adminPassword: string | null;
  adminPasswordHash: string | null;
  sessionTtlSeconds: number;
  /** Secure cookies: 'auto' = only when the request came over HTTPS. */
  cookieSecure: boolean | 'auto';
  bodyLimitBytes: number;
  /** MEMSTORE_IMPORT_MAX_BYTES: largest upload POST /api/import takes (streamed to a temp file, not the JSON limit). */
  importMaxBytes: number;
  /** Import bounds (issue 46, decision 0070): see ImportLimits. */
  importLimits: ImportLimits;
  loginMaxFailures: number;
  loginWindowSeconds: number;
  /** MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE: requests per window for tokens created without their own limit (0 = unlimited). */
  tokenRateLimitPerMinute: number;
  /** MEMSTORE_TOKEN_RATE_WINDOW_SECONDS: the rate-limit window (60; shorter only for tests). */
  tokenRateWindowSeconds: number;
  limits: MemoryLimits;
  /** Settings given as MEMSTORE_<KEY>; they win over the config file and the credential store. */
  settingsEnv: Partial<Record<SettingKey, string>>;
  /**
   * MEMSTORE_SEARCH_WORKERS: worker threads that run searches on the embedded SQLite index, each
   * with its own read connection (0 = search on the main thread). Default: 2 on two cores or
   * more, 0 on one.
   */
  searchWorkers: number;
  /**
   * Not an environment setting: this process serves searches, so the embedded index loads its
   * vectors (and trains their lists) when it opens, not during its first vector search. True for
   * the server whatever MEMSTORE_SEARCH_WORKERS says; false for the command line and for the pairs
   * a migration opens, which never search by meaning (at 100,000 memories the load costs ~1 s and
   * ~500 MB of memory).
   */
  loadVectorsAtStart: boolean;
  /**
   * Not an environment setting: the server (main.ts) prints the generated admin password's box
   * after it listens, as the last thing on the console, with the URL to open; elsewhere (tests)
   * it is printed when it is generated.
   */
  holdAdminBanner: boolean;
  /**
   * MEMSTORE_WRITE_GRACE_SECONDS (issue 9): a memory write still pending after this long was never
   * acknowledged; the sweep deletes its object (and the object store's stale temp files). Default 600.
   */
  writeGraceSeconds: number;
  /**
   * MEMSTORE_EMBEDDING_MODEL_DIR: the local embedding model (model.onnx, tokenizer.json,
   * model.json). Default: models/bge-small-en-v1.5-q in the installation (scripts/fetch-model.js).
   */
  embeddingModelDir: string;
  /** MEMSTORE_EMBEDDING_WORKER: this instance computes queued embeddings (default true). */
  embeddingWorker: boolean;
  /**
   * MEMSTORE_EMBEDDING_THREADS: threads of the local model (a worker and an ONNX session each, up
   * to ~150 MB of memory each). Default 2 on two cores or more, 1 on one; the queue uses more than
   * one only while no request has needed the model for 2 s.
   */
  embeddingThreads: number;
  /**
   * MEMSTORE_EMBEDDING_MAX_TOKENS: tokens of a text the local model reads (16–512, the rest is cut;
   * default DEFAULT_EMBEDDING_MAX_TOKENS, decision 0145). A change re-embeds every memory.
   */
  embeddingMaxTokens: number;
  /**
   * The second stage of semantic and hybrid search (MEMSTORE_RERANK_URL and friends,
   * src/embeddings/remote-reranker.ts): re-scores the best candidates; NoReranker when unset or off.
   */
  reranker: Reranker;
  /** MEMSTORE_DUPLICATE_HINTS: POST /api/memories answers `similar` (default true; false saves a short embedding per create). */
  duplicateHints: boolean;
  /** Quiet logs (tests). */
  logLevel: 'silent' | 'error' | 'info';
  /** MEMSTORE_LOG_FORMAT: `text` (Nest's coloured console) or `json` (one object per line, plus an access log). */
  logFormat: 'text' | 'json';
  /** MEMSTORE_METRICS_ALLOWED_IPS: addresses/CIDR ranges that may read /metrics without credentials (empty: none). */
  metricsAllowedIps: string[];
  /** MEMSTORE_AUDIT_RETENTION_DAYS: audit entries older than this are pruned (at start and hourly). */
  auditRetentionDays: number;
  /** MEMSTORE_NAMESPACE_MAX_MEMORIES: memories one namespace may hold (0: no quota, the default; decision 0156). */
  namespaceMaxMemories: number;
  /** MEMSTORE_NAMESPACE_MAX_BYTES: UTF-8 bytes of content one namespace may hold (0: no quota, the default). */
  namespaceMaxBytes: number;
}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  }
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new Error(`${name} must be true or false, got '${raw}'`);
}

function str(env: NodeJS.ProcessEnv, name: string): string | null {
  const raw = env[name];
  return raw === undefined || raw === '' ? null : raw;
}

/**
 * The environment with the `.env` file of the working directory beneath it: a variable of the real
 * environment wins over the same one in the file (as with docker compose and dotenv), and an empty
 * value in the real environment counts as set. Called once at boot by the server and the command
 * line, whose result is what loadAppConfig validates; a missing file is no error, an unreadable
 * one stops the start with its path. Parsed by Node's own `util.parseEnv` (the `--env-file` syntax).
 */
export function withDotEnv(env: NodeJS.ProcessEnv = process.env, file = path.resolve('.env')): NodeJS.ProcessEnv {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return env;
    throw new Error(`cannot read ${file}: ${(e as Error).message}`, { cause: e });
  }
  return { ...parseEnv(text), ...env };
}

/** Build the typed configuration from an environment (process.env in production, a literal in tests). */
export function loadAppConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const cfg = new AppConfig();
  cfg.dataDir = path.resolve(str(env, 'MEMSTORE_DATA_DIR') ?? './data');
  cfg.host = str(env, 'MEMSTORE_HOST') ?? '127.0.0.1';
  cfg.port = int(env, 'MEMSTORE_PORT', 8080, 0, 65535);
  const publicUrl = str(env, 'MEMSTORE_PUBLIC_URL');
  if (publicUrl !== null && !/^https?:\/\/[^\s/]+/i.test(publicUrl)) {
    throw new Error(`MEMSTORE_PUBLIC_URL must be an http(s) URL, got '${publicUrl}'`);
  }
  cfg.publicUrl = publicUrl ? publicUrl.replace(/\/+$/, '') : null;
  cfg.trustProxy = bool(env, 'MEMSTORE_TRUST_PROXY', false);
  cfg.oauth = bool(env, 'MEMSTORE_OAUTH', false);
  if (cfg.oauth && !cfg.publicUrl) throw new Error('MEMSTORE_OAUTH=true needs MEMSTORE_PUBLIC_URL (the issuer and resource URLs are built from it)');
  cfg.secretKey = str(env, 'MEMSTORE_SECRET_KEY');
  cfg.adminUsername = str(env, 'MEMSTORE_ADMIN_USERNAME') ?? 'admin';
  cfg.adminPassword = str(env, 'MEMSTORE_ADMIN_PASSWORD');
  cfg.adminPasswordHash = str(env, 'MEMSTORE_ADMIN_PASSWORD_HASH');
  cfg.sessionTtlSeconds = int(env, 'MEMSTORE_SESSION_TTL_SECONDS', 12 * 3600, 60, 30 * 24 * 3600);
  const secure = str(env, 'MEMSTORE_COOKIE_SECURE');
  cfg.cookieSecure = secure === null || secure === 'auto' ? 'auto' : bool(env, 'MEMSTORE_COOKIE_SECURE', false);
  cfg.bodyLimitBytes = int(env, 'MEMSTORE_BODY_LIMIT_BYTES', 2 * 1024 * 1024, 1024, 64 * 1024 * 1024);
  cfg.importMaxBytes = int(env, 'MEMSTORE_IMPORT_MAX_BYTES', 1024 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024);
  cfg.importLimits = {
    tmpDir: path.resolve(str(env, 'MEMSTORE_IMPORT_TMP_DIR') ?? path.join(os.tmpdir(), 'memstore-import')),
    maxItems: int(env, 'MEMSTORE_IMPORT_MAX_ITEMS', 1_000_000, 1, 100_000_000),
    maxUnpackedBytes: int(env, 'MEMSTORE_IMPORT_MAX_UNPACKED_BYTES', 2 * 1024 * 1024 * 1024, 1024, 256 * 1024 * 1024 * 1024),
    maxRatio: int(env, 'MEMSTORE_IMPORT_MAX_RATIO', 100, 1, 1_000_000),
    maxSeconds: int(env, 'MEMSTORE_IMPORT_MAX_SECONDS', 3600, 1, 7 * 24 * 3600),
    perToken: int(env, 'MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN', 1, 1, 64),
    concurrent: int(env, 'MEMSTORE_IMPORT_CONCURRENT', 4, 1, 256),
  };
  cfg.loginMaxFailures = int(env, 'MEMSTORE_LOGIN_MAX_FAILURES', 10, 1, 1000);
  cfg.loginWindowSeconds = int(env, 'MEMSTORE_LOGIN_WINDOW_SECONDS', 15 * 60, 1, 24 * 3600);
  cfg.tokenRateLimitPerMinute = int(env, 'MEMSTORE_TOKEN_RATE_LIMIT_PER_MINUTE', 600, 0, 1_000_000);
  cfg.tokenRateWindowSeconds = int(env, 'MEMSTORE_TOKEN_RATE_WINDOW_SECONDS', 60, 1, 3600);
  cfg.limits = {
    contentMaxBytes: int(env, 'MEMSTORE_MAX_CONTENT_BYTES', 1024 * 1024, 1, 16 * 1024 * 1024),
    titleMaxChars: int(env, 'MEMSTORE_MAX_TITLE_CHARS', 300, 1, 10000),
    nameMaxChars: 200,
    maxTags: int(env, 'MEMSTORE_MAX_TAGS', 50, 0, 1000),
    tagMaxChars: 64,
    bulkDeleteMax: 1000,
  };
  cfg.settingsEnv = {};
  for (const key of SETTING_KEYS) {
    const v = env[`MEMSTORE_${key.toUpperCase()}`];
    if (v !== undefined) cfg.settingsEnv[key] = v;
  }
  cfg.embeddingModelDir = path.resolve(str(env, 'MEMSTORE_EMBEDDING_MODEL_DIR') ?? defaultModelDir());
  cfg.embeddingWorker = bool(env, 'MEMSTORE_EMBEDDING_WORKER', true);
  cfg.embeddingThreads = int(env, 'MEMSTORE_EMBEDDING_THREADS', Math.min(2, os.availableParallelism()), 1, 8);
  cfg.embeddingMaxTokens = int(env, 'MEMSTORE_EMBEDDING_MAX_TOKENS', DEFAULT_EMBEDDING_MAX_TOKENS, 16, 512);
  cfg.duplicateHints = bool(env, 'MEMSTORE_DUPLICATE_HINTS', true);
  cfg.reranker = rerankerFromEnv(env);
  cfg.searchWorkers = int(env, 'MEMSTORE_SEARCH_WORKERS', defaultSearchWorkers(), 0, 16);
  cfg.loadVectorsAtStart = true;
  cfg.holdAdminBanner = false;
  cfg.writeGraceSeconds = int(env, 'MEMSTORE_WRITE_GRACE_SECONDS', 600, 0, 7 * 24 * 3600);
  const lvl = str(env, 'MEMSTORE_LOG_LEVEL') ?? 'info';
  if (lvl !== 'silent' && lvl !== 'error' && lvl !== 'info') throw new Error(`MEMSTORE_LOG_LEVEL must be silent, error or info`);
  cfg.logLevel = lvl;
  const format = str(env, 'MEMSTORE_LOG_FORMAT') ?? 'text';
  if (format !== 'text' && format !== 'json') throw new Error(`MEMSTORE_LOG_FORMAT must be text or json, got '${format}'`);
  cfg.logFormat = format;
  const metricsIps = (str(env, 'MEMSTORE_METRICS_ALLOWED_IPS') ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  try {
    cfg.metricsAllowedIps = normalizeAllowList(metricsIps);
  } catch {
    throw new Error(`MEMSTORE_METRICS_ALLOWED_IPS must be a comma-separated list of IP addresses or CIDR ranges, got '${metricsIps.join(',')}'`);
  }
  cfg.auditRetentionDays = int(env, 'MEMSTORE_AUDIT_RETENTION_DAYS', 90, 1, 36500);
  cfg.namespaceMaxMemories = int(env, 'MEMSTORE_NAMESPACE_MAX_MEMORIES', 0, 0, 1_000_000_000);
  cfg.namespaceMaxBytes = int(env, 'MEMSTORE_NAMESPACE_MAX_BYTES', 0, 0, 2 ** 50);
  return Object.assign(cfg, overrides);
}

/**
 * Two search workers on two cores or more, none on one. The main thread's share of a search is
 * the HTTP part, so with one worker a hybrid search (≈ 3.5 ms of worker time at 100,000
 * memories) left a core idle: two workers on 2 cores served 1.8× the hybrid searches at a lower
 * p99 (bench/README.md, "Search workers on 2 cores").
 */
export function defaultSearchWorkers(): number {
  return os.availableParallelism() < 2 ? 0 : 2;
}

/** The log format asked for, even when the rest of the environment is invalid (for the boot-failure message). */
export function requestedLogFormat(env: NodeJS.ProcessEnv = process.env): 'text' | 'json' {
  return env.MEMSTORE_LOG_FORMAT === 'json' ? 'json' : 'text';
}

/** models/bge-small-en-v1.5-q at the root of the installation (the directory holding package.json). */
export function defaultModelDir(): string {
  let dir = __dirname;
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json'))) break;
    dir = path.dirname(dir);
  }
  return path.join(dir, 'models', 'bge-small-en-v1.5-q');
}
