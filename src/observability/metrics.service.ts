import { ALL_NAMESPACES } from '../namespaces/namespace';
import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { BackendsService } from '../backends/backends.service';
import { MemoryIndex } from '../backends/ports/memory-index.port';

/** Search modes a `mode` label may take (anything else is counted as `keyword`, so a client cannot grow the label set). */
export const SEARCH_MODES = ['keyword', 'semantic', 'hybrid'] as const;

const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** A backend check that has not answered by then counts as down. */
const BACKEND_CHECK_TIMEOUT_MS = 2_000;
/** The object store check writes and deletes a probe object: at most this often. */
const OBJSTORE_CHECK_EVERY_MS = 30_000;

interface BackendCheck {
  up: number;
  seconds: number;
}

/**
 * The Prometheus registry of this process (GET /metrics), one per app instance. Metrics:
 * - memstore_http_requests_total / memstore_http_request_duration_seconds {method, route, status}:
 *   every request, by route template (`/api/memories/:memory_id`; `unmatched` for 404s without a
 *   route, `other` for static assets and docs), never by raw URL;
 * - memstore_search_duration_seconds {mode}: GET /api/memories with `q` (observeSearch for others);
 * - memstore_login_failures_total, memstore_throttled_requests_total {route};
 * - memstore_memories {backend}: memories in the active document database (read at scrape time);
 * - memstore_backend_up / memstore_backend_check_seconds {backend, kind}: a ping of the document
 *   database at scrape time, a probe of the object store at most every 30 s;
 * - process metrics (prom-client's collectDefaultMetrics, prefixed memstore_);
 * - gauges others register with gauge(), e.g. issue 14's embedding queue:
 *   `metrics.gauge('memstore_embedding_queue_depth', 'Memories waiting for an embedding', () => queue.size)`.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly searchDuration: Histogram<'mode'>;
  readonly loginFailures: Counter;
  readonly throttled: Counter<'route'>;
  private objstoreCheck?: { at: number; adapter: unknown; result: BackendCheck };

  constructor(
    private readonly backends: BackendsService,
    private readonly index: MemoryIndex,
  ) {
    const registers = [this.registry];
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this; // prom-client calls collect() with the metric as `this`
    collectDefaultMetrics({ register: this.registry, prefix: 'memstore_' });
    this.httpRequests = new Counter({ name: 'memstore_http_requests_total', help: 'HTTP requests by method, route template and status', labelNames: ['method', 'route', 'status'], registers });
    this.httpDuration = new Histogram({
      name: 'memstore_http_request_duration_seconds',
      help: 'HTTP request latency by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.searchDuration = new Histogram({
      name: 'memstore_search_duration_seconds',
      help: 'Search latency (GET /api/memories with q) by mode',
      labelNames: ['mode'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.loginFailures = new Counter({ name: 'memstore_login_failures_total', help: 'Failed admin sign-ins (wrong username or password)', registers });
    this.throttled = new Counter({ name: 'memstore_throttled_requests_total', help: 'Requests refused with 429 (login throttling, rate limits) by route template', labelNames: ['route'], registers });
    this.gauge(
      'memstore_memories',
      'Memories in the active document database',
      async (set) => {
        const kind = this.backends.docdb?.kind;
        const n = kind ? await this.index.count(ALL_NAMESPACES).catch(() => null) : null;
        if (kind && n !== null) set(n, { backend: kind });
      },
      ['backend'],
    );
    const up = new Gauge({ name: 'memstore_backend_up', help: '1 when the backend answered its check at scrape time', labelNames: ['backend', 'kind'], registers });
    new Gauge({
      name: 'memstore_backend_check_seconds',
      help: 'How long the backend check took (document database: ping; object store: probe, cached 30 s)',
      labelNames: ['backend', 'kind'],
      registers,
      collect: async function (this: Gauge<'backend' | 'kind'>) {
        this.reset();
        up.reset();
        const [db, store] = await Promise.all([self.checkDocdb(), self.checkObjstore()]);
        for (const [backend, kind, c] of [
          ['document_database', self.backends.docdb?.kind, db],
          ['object_store', self.backends.objstore?.kind, store],
        ] as const) {
          if (!kind || !c) continue;
          this.set({ backend, kind }, c.seconds);
          up.set({ backend, kind }, c.up);
        }
      },
    });
  }

  /**
   * Registers a gauge whose value is read at scrape time. `read` calls `set(value, labels?)`
   * (or returns a number for an unlabelled gauge). The hook for values other modules own.
   */
  gauge(name: string, help: string, read: (set: (value: number, labels?: Record<string, string>) => void) => unknown, labelNames: string[] = []): void {
    if (this.registry.getSingleMetric(name)) this.registry.removeSingleMetric(name);
    new Gauge({
      name,
      help,
      labelNames,
      registers: [this.registry],
      collect: async function (this: Gauge) {
        this.reset();
        const v = await read((value, labels) => (labels ? this.set(labels, value) : this.set(value)));
        if (typeof v === 'number') this.set(v);
      },
    });
  }

  /** Records one search's latency (used by the access log for GET /api/memories?q=…; callable by other search entry points). */
  observeSearch(mode: string | undefined, seconds: number): void {
    const m = (SEARCH_MODES as readonly string[]).includes(mode ?? '') ? mode! : 'keyword';
    this.searchDuration.observe({ mode: m }, seconds);
  }

  /** Prometheus text exposition of every metric. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private async checkDocdb(): Promise<BackendCheck | null> {
    const db = this.backends.docdb;
    return db ? timed(() => db.ping()) : null;
  }

  private async checkObjstore(): Promise<BackendCheck | null> {
    const store = this.backends.objstore;
    if (!store) return null;
    const c = this.objstoreCheck;
    if (c && c.adapter === store && Date.now() - c.at < OBJSTORE_CHECK_EVERY_MS) return c.result;
    const result = await timed(() => store.probe());
    this.objstoreCheck = { at: Date.now(), adapter: store, result };
    return result;
  }
}

async function timed(fn: () => Promise<void>): Promise<BackendCheck> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      fn(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), BACKEND_CHECK_TIMEOUT_MS);
      }),
    ]);
    return { up: 1, seconds: (performance.now() - start) / 1000 };
  } catch {
    return { up: 0, seconds: (performance.now() - start) / 1000 };
  } finally {
    clearTimeout(timer);
  }
}
