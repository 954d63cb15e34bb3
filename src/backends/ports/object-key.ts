import { AppError } from '../../common/errors';

/** A key no object store adapter accepts (400: it is the caller's mistake, never a backend failure). */
export class InvalidObjectKeyError extends AppError {
  constructor(reason: string) {
    super(400, `Invalid object key: ${reason}`);
  }
}

/** Top-level directory an adapter may use for its own files (e.g. temp files); no key may start with it. */
export const RESERVED_KEY_DIR = '.tmp';
export const MAX_OBJECT_KEY_LENGTH = 1024;

/**
 * Shared key rules of every ObjectStore adapter: refuses any key that could escape a root or be
 * read two ways: empty, too long, absolute, backslashes, NUL or control characters, empty / "." /
 * ".." segments, or the reserved directory. Returns the reason, or null when the key is safe.
 */
export function objectKeyProblem(key: unknown): string | null {
  if (typeof key !== 'string' || key.length === 0) return 'the key is empty';
  if (key.length > MAX_OBJECT_KEY_LENGTH) return `the key is longer than ${MAX_OBJECT_KEY_LENGTH} characters`;
  if (key.includes('\\')) return 'the key contains a backslash';
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(key)) return 'the key contains a control character';
  if (key.startsWith('/')) return 'the key is an absolute path';
  if (/^[A-Za-z]:/.test(key)) return 'the key starts with a drive letter';
  const segments = key.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return 'the key has an empty, "." or ".." segment';
  if (segments[0] === RESERVED_KEY_DIR) return 'the key uses a reserved directory';
  return null;
}

/** Throws InvalidObjectKeyError unless the key is safe. */
export function assertObjectKey(key: unknown): asserts key is string {
  const problem = objectKeyProblem(key);
  if (problem) throw new InvalidObjectKeyError(problem);
}
