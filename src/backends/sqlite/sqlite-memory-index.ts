import type Database from 'better-sqlite3';
import { MemoryIndex } from '../ports/memory-index.port';

// NOTE(skeleton): placeholder; implemented by its owner.
// @ts-expect-error abstract members are not implemented yet
export class SqliteMemoryIndex extends MemoryIndex {
  constructor(private readonly db: Database.Database) {
    super();
  }
}
