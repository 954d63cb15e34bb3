import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { Subscription } from 'rxjs';
import { ResolvedSettings, SettingsService } from '../config/settings.service';
import { BackendFactory } from './backend-factory';
import type { DocumentDatabase } from './ports/document-database.port';
import type { ObjectStore } from './ports/object-store.port';

/** How long a replaced adapter stays open so that requests in flight can finish on it. */
const DRAIN_MS = 5_000;

/**
 * Holds the active adapters and swaps them when the settings change (no restart).
 * The ports (MemoryIndex, ObjectStore, TokenRepository, SessionRepository) are bound to
 * delegates that always forward to the adapter active at call time (see backends.module.ts).
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
  private readonly listeners: Array<(prev: DocumentDatabase, next: DocumentDatabase) => Promise<void>> = [];

  constructor(
    private readonly settings: SettingsService,
    private readonly factory: BackendFactory,
  ) {}

  get docdb(): DocumentDatabase {
    return this.db;
  }

  get objstore(): ObjectStore {
    return this.store;
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

  private async apply(s: ResolvedSettings): Promise<void> {
    const dbKey = this.factory.docdbKey(s);
    if (dbKey !== this.dbKey) {
      const next = this.factory.createDocumentDatabase(s);
      await next.init();
      const prev = this.db;
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
