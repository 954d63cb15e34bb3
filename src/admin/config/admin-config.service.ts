import { ALL_NAMESPACES } from '../../namespaces/namespace';
import { Injectable } from '@nestjs/common';
import { BackendsService } from '../../backends/backends.service';
import { MemoryIndex } from '../../backends/ports/memory-index.port';
import { resolveS3Endpoint } from '../../backends/s3/s3-object-store';
import { AppError, BackendUnavailableError, RequestValidationError } from '../../common/errors';
import { SETTINGS_SCHEMA } from '../../config/settings-schema';
import { SettingsInput, SettingsService } from '../../config/settings.service';
import { EmbeddingsService } from '../../embeddings/embeddings.service';
import type { DeriveEndpointDto } from './dto/derive-endpoint.dto';
import type { TestTarget } from './dto/test-backends.dto';

/** How long a connection test or status check may take before it counts as failed. */
const PROBE_TIMEOUT_MS = 10_000;
/** Status checks of the object store are cached this long (it is a write/read/delete round trip). */
const STATUS_CACHE_MS = 5_000;
/** GET /api/ready: a probe waits this long for a backend (orchestrators' probes time out in a few seconds). */
const READY_TIMEOUT_MS = 3_000;
/** GET /api/ready answers from one check for this long. */
const READY_CACHE_MS = 1_000;

export interface BackendTestResult {
  ok: boolean;
  backend: string;
  latency_ms: number;
  detail?: string;
  error?: string;
}

export interface BackendStatus {
  backend: string;
  ok: boolean;
  detail: string;
}

/** Settings, connection tests and status for the admin routes (CONTRACT §5). */
@Injectable()
export class AdminConfigService {
  private objstoreStatus?: { at: number; adapter: object; result: { ok: boolean; error?: string } };
  private readyCheck?: { at: number; result: Promise<{ ready: boolean; notReady: Array<'docdb' | 'objstore'> }> };

  constructor(
    private readonly settings: SettingsService,
    private readonly backends: BackendsService,
    private readonly index: MemoryIndex,
    private readonly embeddings: EmbeddingsService,
  ) {}

  schema() {
    return SETTINGS_SCHEMA;
  }

  async config() {
    await this.backends.settled();
    const { complete, missing } = this.settings.completeness();
    return {
      config: this.settings.masked(),
      sources: this.settings.sources(),
      complete,
      missing,
      status: this.statusLine(complete, missing),
      active: this.active(),
      // How many memories each document database holds (the embedded one too when another is active).
      memories: (await this.backends.memoryCounts()).map(({ backend, active, count }) => ({ backend, active, count })),
    };
  }

  raw() {
    return { config: this.settings.raw() };
  }

  paths() {
    return this.settings.paths();
  }

  async save(input: SettingsInput) {
    const result = await this.settings.save(input);
    await this.backends.settled(); // the switch (if any) is applied before we answer
    const active = this.active();
    const s = this.settings.current();
    const warnings: string[] = [];
    const wantDb = s.docdb_uri ? 'mongodb' : 'sqlite';
    const wantStore = s.objstore_bucket ? 's3' : 'filesystem';
    if (active.docdb !== wantDb) warnings.push(`The document database is still ${active.docdb}: switching to ${wantDb} failed (see the server log); the settings are saved.`);
    if (active.objstore !== wantStore) warnings.push(`The object store is still ${active.objstore}: switching to ${wantStore} failed (see the server log); the settings are saved.`);
    return { ...result, active, warnings };
  }

  /** Really round-trips a probe on the active backends (write, read, delete). */
  async test(target: TestTarget) {
    await this.backends.settled();
    const which = target === 'mongodb' ? 'docdb' : target === 's3' || target === 'r2' ? 'objstore' : target;
    const results: { docdb?: BackendTestResult; objstore?: BackendTestResult } = {};
    const jobs: Promise<void>[] = [];
    if (which === 'all' || which === 'docdb') {
      const db = this.backends.docdb;
      jobs.push(
        this.timed(
          db.kind,
          'Document database',
          () => db.probe(),
          () => `${db.describe()}: wrote, read and deleted a probe document`,
        ).then((r) => void (results.docdb = r)),
      );
    }
    if (which === 'all' || which === 'objstore') {
      const store = this.backends.objstore;
      jobs.push(
        this.timed(
          store.kind,
          'Object store',
          () => store.probe(),
          () => `${store.describe()}: wrote, read and deleted a probe object`,
        ).then((r) => void (results.objstore = r)),
      );
    }
    await Promise.all(jobs);
    return { results };
  }

  /** CONTRACT §5: an explicit endpoint wins; an account id gives the R2 endpoint; neither → 422. */
  deriveEndpoint(body: DeriveEndpointDto): { endpoint: string; source: 'explicit' | 'account_id' } {
    const endpoint = (body.endpoint ?? '').trim() || (body.objstore_endpoint ?? '').trim();
    const accountId = (body.account_id ?? '').trim() || (body.objstore_account_id ?? '').trim();
    const derived = resolveS3Endpoint({ endpoint, accountId });
    if (derived.source !== 'aws' && derived.endpoint !== null) return { endpoint: derived.endpoint, source: derived.source };
    throw RequestValidationError.one(['body'], 'Give account_id (or objstore_account_id) and/or endpoint (or objstore_endpoint)', 'missing', body ?? null);
  }

  /**
   * Backend health for /api/status. A signed-in admin sees each adapter's description (paths,
   * hosts); an API token holder only sees whether it is reachable.
   */
  async status(detailed: boolean) {
    await this.backends.settled();
    const db = this.backends.docdb;
    const store = this.backends.objstore;
    const [dbCheck, storeCheck, memories, embeddings] = await Promise.all([this.check('Document database', () => db.ping()), this.checkObjstore(), this.memoryStatus(), this.embeddings.status()]);
    const view = (kind: string, describe: () => string, c: { ok: boolean; error?: string }): BackendStatus => ({
      backend: kind,
      ok: c.ok,
      // A backend's error names hosts and ports: the admin's to read, a token sees only that it is down (issue 46).
      detail: c.ok ? (detailed ? describe() : 'reachable') : detailed ? (c.error ?? 'unavailable') : 'unavailable',
    });
    return {
      docdb: view(db.kind, () => db.describe(), dbCheck),
      objstore: view(store.kind, () => store.describe(), storeCheck),
      memories,
      embeddings,
    };
  }

  /**
   * For GET /api/ready (public): whether both backends answer, and which does not. Nothing else
   * (no host, path or error text). One check at a time, its answer shared for a second, so a
   * flood of probes costs the backends at most one ping a second (the object store's probe is
   * cached longer, see checkObjstore).
   */
  readiness(): Promise<{ ready: boolean; notReady: Array<'docdb' | 'objstore'> }> {
    const cached = this.readyCheck;
    if (cached && Date.now() - cached.at < READY_CACHE_MS) return cached.result;
    const result = (async () => {
      await this.backends.settled();
      const db = this.backends.docdb;
      const [dbCheck, storeCheck] = await Promise.all([this.check('Document database', () => db.ping(), READY_TIMEOUT_MS), this.checkObjstore(READY_TIMEOUT_MS)]);
      const notReady = [...(dbCheck.ok ? [] : (['docdb'] as const)), ...(storeCheck.ok ? [] : (['objstore'] as const))];
      return { ready: notReady.length === 0, notReady };
    })();
    this.readyCheck = { at: Date.now(), result };
    return result;
  }

  private active() {
    return { docdb: this.backends.docdb.kind, objstore: this.backends.objstore.kind };
  }

  private statusLine(complete: boolean, missing: string[]): string {
    const parts = [`Document database: ${this.backends.docdb.describe()}.`, `Object store: ${this.backends.objstore.describe()}.`];
    parts.push(complete ? 'Settings complete.' : `Settings incomplete: missing ${missing.join(', ')}.`);
    return parts.join(' ');
  }

  private async timed(backend: string, name: 'Document database' | 'Object store', fn: () => Promise<void>, detail: () => string): Promise<BackendTestResult> {
    const start = performance.now();
    const c = await this.check(name, fn);
    const latency_ms = Math.round((performance.now() - start) * 10) / 10;
    return c.ok ? { ok: true, backend, latency_ms, detail: detail() } : { ok: false, backend, latency_ms, error: c.error };
  }

  private async checkObjstore(timeoutMs = PROBE_TIMEOUT_MS): Promise<{ ok: boolean; error?: string }> {
    const store = this.backends.objstore;
    const cached = this.objstoreStatus;
    if (cached && cached.adapter === store && Date.now() - cached.at < STATUS_CACHE_MS) return cached.result;
    const result = await this.check('Object store', () => store.probe(), timeoutMs);
    this.objstoreStatus = { at: Date.now(), adapter: store, result };
    return result;
  }

  /** Runs a backend check with a time limit; never throws. */
  private async check(name: 'Document database' | 'Object store', fn: () => Promise<void>, timeoutMs = PROBE_TIMEOUT_MS): Promise<{ ok: boolean; error?: string }> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new BackendUnavailableError(name, `no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([Promise.resolve().then(fn), timeout]);
      return { ok: true };
    } catch (e) {
      if (e instanceof AppError) return { ok: false, error: e.message };
      return { ok: false, error: `${name} unavailable: ${(e as Error)?.message ?? String(e)}` };
    } finally {
      clearTimeout(timer);
    }
  }

  /** Memory count and search mode; null when the index cannot answer (down, or not implemented). */
  private async memoryStatus(): Promise<{ count: number | null; search_mode: string | null; by_backend: Array<{ backend: string; active: boolean; count: number | null }> }> {
    let count: number | null;
    let search_mode: string | null;
    try {
      count = await this.index.count(ALL_NAMESPACES);
    } catch {
      count = null;
    }
    try {
      search_mode = this.index.searchMode();
    } catch {
      search_mode = null;
    }
    // Memories are never moved silently: say what the inactive embedded database still holds.
    const by_backend = (await this.backends.memoryCounts()).map(({ backend, active, count: n }) => ({ backend, active, count: n }));
    return { count, search_mode, by_backend };
  }
}
