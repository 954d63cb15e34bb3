import { AppError, BackendUnavailableError, ConflictError } from '../../common/errors';

/** Host list of a MongoDB URI without credentials or options, for messages ("db.example.com:27017"). */
export function redactMongoUri(uri: string): string {
  const m = /^mongodb(?:\+srv)?:\/\/(?:[^@/]*@)?([^/?]*)/i.exec(uri);
  return m?.[1] || 'the configured server';
}

const NETWORK_ERRORS = new Set([
  'MongoServerSelectionError',
  'MongooseServerSelectionError',
  'MongoNetworkError',
  'MongoNetworkTimeoutError',
  'MongoNotConnectedError',
  'MongoTopologyClosedError',
  'MongoPoolClearedError',
  'MongoServerClosedError',
]);

/** Turns a MongoDB driver or mongoose error into our own error (services never see a driver error). */
export function toAppError(e: unknown, where: string): Error {
  if (e instanceof AppError) return e;
  const err = e as { name?: string; code?: number; message?: string; codeName?: string };
  if (err?.code === 11000) return new ConflictError('A record with this id already exists');
  const message = (err?.message ?? String(e)).split('\n')[0].slice(0, 300);
  if (err?.name && NETWORK_ERRORS.has(err.name)) {
    return new BackendUnavailableError('Document database', `cannot reach MongoDB at ${where} (${message})`);
  }
  if (err?.code === 18 || err?.codeName === 'AuthenticationFailed') {
    return new BackendUnavailableError('Document database', `authentication to MongoDB at ${where} failed`);
  }
  if (err?.code === 13 || err?.codeName === 'Unauthorized') {
    return new BackendUnavailableError('Document database', `not authorized on MongoDB at ${where} (${message})`);
  }
  return new BackendUnavailableError('Document database', `MongoDB at ${where} failed: ${message}`);
}
