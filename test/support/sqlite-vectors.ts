import type { SqliteDocumentDatabase } from '../../src/backends/sqlite/sqlite-database';

/** Vectors an embedded database holds in its vector index (0 = left on disk). */
export function vectorsHeld(db: unknown): number {
  return ((db as SqliteDocumentDatabase).memories as unknown as { vectors: { index: { size: number } } }).vectors.index.size;
}
