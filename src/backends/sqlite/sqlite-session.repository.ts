import type Database from 'better-sqlite3';
import { SessionRepository } from '../ports/session.repository';

// NOTE(skeleton): placeholder; implemented by its owner.
// @ts-expect-error abstract members are not implemented yet
export class SqliteSessionRepository extends SessionRepository {
  constructor(private readonly db: Database.Database) {
    super();
  }
}
