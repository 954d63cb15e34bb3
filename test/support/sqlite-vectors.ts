import type { SqliteDocumentDatabase } from '../../src/backends/sqlite/sqlite-database';

/** Vectors an embedded database holds in memory (its copy for vector searches; 0 = left on disk). */
export function vectorsHeld(db: unknown): number {
  return ((db as SqliteDocumentDatabase).memories as unknown as { vectors: { share(): { count: number } | null } }).vectors.share()?.count ?? 0;
}
