import { ALL_NAMESPACES } from '../namespaces/namespace';
import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { AsyncLocalStorage } from 'node:async_hooks';
import { Subscription } from 'rxjs';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { BackendFactory } from './backend-factory';
import type { DocumentDatabase } from './ports/document-database.port';
import type { ObjectStore } from './ports/object-store.port';

/** How long a replaced adapter stays open so that requests in flight can finish on it. */
const DRAIN_MS = 5_000;

export interface ActiveAdapters {
  db: DocumentDatabase;
  store: ObjectStore;
}

/** How many memories a document database holds (null when it cannot say: down, or no file yet). */
export interface MemoryCount {
  backend: string;
  active: boolean;
  count: number | null;
  detail: string;
}

/**
 * Holds the active adapters and swaps them when the settings change (no restart).
 * The ports (MemoryIndex, ObjectStore, TokenRepository, SessionRepository, RateLimitRepository)
 * are bound to delegates (see backends.module.ts) that forward to the adapters pinned for the
 * current request (pin(): a request that started before a switch finishes on the old adapters),
 * else to the active ones. When the document database changes, tokens and live admin sessions
 * are carried over to the new one if it has none, so the admin stays signed in and tokens keep
 * working; login-throttling counters are not (they start afresh in the new database).
 */
@Injectable()
export class BackendsService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Backends');
  private db!: DocumentDatabase;
  private store!: ObjectStore;
  private dbKey = '';
  private storeKey = '';
  private sub?: Subscription;
  private switching: Promise<void> = Promise.resolve();
  private readonly retired = new Set<{ close(): Promise<void> }>();
  private readonly pinned = new AsyncLocalStorage<ActiveAdapters>();
  private readonly listeners: Array<(prev: DocumentDatabase, next: DocumentDatabase) => Promise<void>> = [];

  constructor(
    private readonly settings: SettingsService,
    private readonly factory: BackendFactory,
  ) {}

  /** The active document database (the one new requests use). */
  get docdb(): DocumentDatabase {
    return this.db;
  }

  /** The active object store (the one new requests use). */
  get objstore(): ObjectStore {
    return this.store;
  }

  /** The adapters of the current request: pinned at its start, else the active ones. */
  current(): ActiveAdapters | undefined {
    return this.pinned.getStore() ?? (this.db && this.store ? { db: this.db, store: this.store } : undefined);
  }

  /** Runs `fn` (a request) with the adapters active now; a switch meanwhile does not move it. */
  pin<T>(fn: () => T): T {
    if (!this.db || !this.store) return fn();
    return this.pinned.run({ db: this.db, store: this.store }, fn);
  }

  /** Called after a document database switch, before the old one is closed (e.g. to carry tokens over). */
  onDocdbSwitch(listener: (prev: DocumentDatabase, next: DocumentDatabase) => Promise<void>): void {
    this.listeners.push(listener);
  }

  async onModuleInit(): Promise<void> {
    const s = this.settings.current();
    this.db = this.factory.createDocumentDatabase(s);
    this.dbKey = this.factory.docdbKey(s);
    await this.db.init();
    this.store = this.factory.createObjectStore(s);
    this.storeKey = this.factory.objstoreKey(s);
    this.sub = this.settings.changes.subscribe((next) => {
      this.switching = this.switching.then(() => this.apply(next)).catch((e) => this.logger.error(`Backend switch failed: ${(e as Error).message}`));
    });
  }

  /** Resolves when every switch requested so far has been applied. */
  settled(): Promise<void> {
    return this.switching;
  }

  /**
   * Memories held by the active document database and, when that is not the embedded one, by
   * the embedded database left in the data directory (memories are never moved silently).
   */
  async memoryCounts(): Promise<MemoryCount[]> {
    await this.settled();
    const db = this.db;
    const out: MemoryCount[] = [{ backend: db.kind, active: true, count: await db.memories.count(ALL_NAMESPACES).catch(() => null), detail: db.describe() }];
    if (db.kind !== 'sqlite') {
      const embedded = this.factory.openInactiveEmbedded();
      if (embedded) {
        try {
          await embedded.init();
          out.push({ backend: embedded.kind, active: false, count: await embedded.memories.count(ALL_NAMESPACES).catch(() => null), detail: embedded.describe() });
        } catch {
          out.push({ backend: embedded.kind, active: false, count: null, detail: embedded.describe() });
        } finally {
          await embedded.close().catch(() => undefined);
        }
      }
    }
    return out;
  }

  private async apply(s: ResolvedSettings): Promise<void> {
    const dbKey = this.factory.docdbKey(s);
    if (dbKey !== this.dbKey) {
      const next = this.factory.createDocumentDatabase(s);
      await next.init();
      const prev = this.db;
      await this.carryOver(prev, next);
      for (const l of this.listeners) {
        await l(prev, next).catch((e) => this.logger.warn(`Carry-over after switch failed: ${(e as Error).message}`));
      }
      this.db = next;
      this.dbKey = dbKey;
      this.logger.log(`Document database is now ${next.describe()}`);
      this.retire(prev);
    }
    const storeKey = this.factory.objstoreKey(s);
    if (storeKey !== this.storeKey) {
      const prev = this.store;
      this.store = this.factory.createObjectStore(s);
      this.storeKey = storeKey;
      this.logger.log(`Object store is now ${this.store.describe()}`);
      this.retire(prev);
    }
  }

  /**
   * Copies the API tokens to the new document database when it has none, and the live admin
   * sessions it does not have yet, so that switching does not sign the admin out or break the
   * tokens in use. A database that already has tokens (shared by other instances, or used
   * before) keeps its own: copying into it could bring back a token deleted there.
   */
  private async carryOver(prev: DocumentDatabase, next: DocumentDatabase): Promise<void> {
    try {
      if ((await next.tokens.list()).length === 0) {
        const tokens = await prev.tokens.list();
        for (const t of tokens) await next.tokens.create(t).catch(() => undefined);
        if (tokens.length > 0) this.logger.log(`Carried ${tokens.length} API token(s) over to ${next.describe()}`);
      }
    } catch (e) {
      this.logger.warn(`Tokens were not carried over to ${next.describe()}: ${(e as Error).message}`);
    }
    try {
      // Live sessions the new database does not know yet (a session is only ever valid, never a revocation).
      let carried = 0;
      for (const session of await prev.sessions.all()) {
        if (await next.sessions.get(session.sid)) continue;
        await next.sessions.set(session);
        carried++;
      }
      if (carried > 0) this.logger.log(`Carried ${carried} admin session(s) over to ${next.describe()}`);
    } catch (e) {
      this.logger.warn(`Admin sessions were not carried over to ${next.describe()}: ${(e as Error).message}`);
    }
  }

  /** Close a replaced adapter once requests in flight on it have had time to finish. */
  private retire(adapter: { close(): Promise<void> }): void {
    this.retired.add(adapter);
    setTimeout(() => void this.closeRetired(adapter), DRAIN_MS).unref();
  }

  private async closeRetired(adapter: { close(): Promise<void> }): Promise<void> {
    if (!this.retired.delete(adapter)) return;
    await adapter.close().catch((e) => this.logger.warn(`Closing a replaced backend failed: ${(e as Error).message}`));
  }

  async onApplicationShutdown(): Promise<void> {
    this.sub?.unsubscribe();
    await this.switching;
    // Replaced adapters are closed now rather than after the drain period.
    await Promise.allSettled([...this.retired].map((a) => this.closeRetired(a)));
    await Promise.allSettled([this.db?.close(), this.store?.close()]);
  }
}
