import { AppError, BackendUnavailableError, ConflictError } from '../../common/errors';

/**
 * The one translation of SQLite driver errors into ours (adapters never leak a SqliteError): a
 * unique/primary-key violation is a 409 with `conflict` as its message when the caller names one;
 * any other driver failure (or a closed connection) a 503 naming the document database. Our own
 * errors, and errors that are not the driver's, pass through unchanged.
 */
export function translateSqliteError(e: unknown, ctx: { what?: string; conflict?: string } = {}): Error {
  if (e instanceof AppError) return e;
  const err = e as { code?: string; message?: string; name?: string } | null;
  if (ctx.conflict !== undefined && (err?.code === 'SQLITE_CONSTRAINT_UNIQUE' || err?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY')) {
    return new ConflictError(ctx.conflict);
  }
  if (err?.name === 'SqliteError' || /database connection is not open/i.test(err?.message ?? '')) {
    const message = err?.message ?? 'unknown';
    return new BackendUnavailableError('Document database', ctx.what ? `SQLite ${ctx.what} failed: ${message}` : `SQLite error: ${message}`);
  }
  return e as Error;
}

/** Runs a synchronous SQLite call, translating driver errors (see translateSqliteError). */
export function sqlite<T>(what: string, fn: () => T, conflict?: string): T {
  try {
    return fn();
  } catch (e) {
    throw translateSqliteError(e, { what, conflict });
  }
}
