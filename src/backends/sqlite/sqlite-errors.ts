import { AppError, BackendUnavailableError } from '../../common/errors';

/** Runs a SQLite call and translates driver errors into our own (adapters never leak SqliteError). */
export function sqlite<T>(what: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof AppError) throw e;
    throw new BackendUnavailableError('Document database', `SQLite ${what} failed: ${(e as Error).message}`);
  }
}
