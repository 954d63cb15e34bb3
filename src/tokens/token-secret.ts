import { createHmac, type KeyObject, randomBytes, timingSafeEqual } from 'node:crypto';

export const TOKEN_PREFIX = 'mem_tok_';
export const TOKEN_ID_RE = /^[0-9a-f]{16}$/;

/** A new token id (16 lowercase hex) and secret (256 random bits, base64url). */
export function newTokenId(): string {
  return randomBytes(8).toString('hex');
}

export function newTokenSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function plaintextToken(id: string, secret: string): string {
  return `${TOKEN_PREFIX}${id}_${secret}`;
}

/** `mem_tok_<id>_<secret>`: the id runs up to the next `_`, the rest (which may contain `_`) is the secret. */
export function parseToken(plaintext: string): { id: string; secret: string } | null {
  if (!plaintext.startsWith(TOKEN_PREFIX)) return null;
  const rest = plaintext.slice(TOKEN_PREFIX.length);
  const sep = rest.indexOf('_');
  if (sep < 0) return null;
  const id = rest.slice(0, sep);
  const secret = rest.slice(sep + 1);
  if (!TOKEN_ID_RE.test(id) || secret.length === 0 || secret.length > 512) return null;
  return { id, secret };
}

/**
 * Keyed hash of a secret: HMAC-SHA256 under the service key. A fast keyed hash is right for
 * 256-bit random secrets (no dictionary to attack), and keeps every request to one HMAC.
 */
export function hashSecret(key: Buffer | KeyObject, secret: string): string {
  return createHmac('sha256', key).update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}
