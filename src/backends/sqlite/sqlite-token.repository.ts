import type Database from 'better-sqlite3';
import { TokenRepository } from '../ports/token.repository';

// NOTE(skeleton): placeholder; implemented by its owner.
// @ts-expect-error abstract members are not implemented yet
export class SqliteTokenRepository extends TokenRepository {
  constructor(private readonly db: Database.Database) {
    super();
  }
}
