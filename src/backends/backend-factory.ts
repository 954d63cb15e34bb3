import type { ResolvedSettings } from '../config/settings.service';
import type { DocumentDatabase } from './ports/document-database.port';
import type { ObjectStore } from './ports/object-store.port';

/**
 * The one place that knows which adapter serves which settings.
 * `docdbKey` / `objstoreKey` say which settings an adapter depends on: when the key of the new
 * settings differs from the active adapter's, the adapter is replaced.
 */
export abstract class BackendFactory {
  abstract docdbKey(settings: ResolvedSettings): string;
  abstract objstoreKey(settings: ResolvedSettings): string;
  abstract createDocumentDatabase(settings: ResolvedSettings): DocumentDatabase;
  abstract createObjectStore(settings: ResolvedSettings): ObjectStore;
  /**
   * The embedded document database of the data directory, opened only to count what it holds
   * while another one is active; null when there is none.
   */
  openInactiveEmbedded(): DocumentDatabase | null {
    return null;
  }
}
