import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed download URLs of the filesystem object store, served by the service itself at
 * `GET /api/files/<key>?expires=<epoch s>&sig=<hmac>`. The HMAC (SHA-256, keyed with the service
 * key) covers the key and the expiry, so neither can be changed without invalidating the link.
 */
export const FILES_ROUTE_PREFIX = '/api/files/';

function mac(secret: Buffer, key: string, expires: number): string {
  return createHmac('sha256', secret).update(`GET\n${key}\n${expires}`).digest('base64url');
}

/** Path part of a key for a URL: each segment percent-encoded. */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

export function signFileUrl(secret: Buffer, baseUrl: string, key: string, expires: number): string {
  const base = baseUrl.replace(/\/+$/, '');
  return `${base}${FILES_ROUTE_PREFIX}${encodeKeyPath(key)}?expires=${expires}&sig=${mac(secret, key, expires)}`;
}

export type SignatureCheck = 'ok' | 'invalid' | 'expired';

/** Checks a signature in constant time, then the expiry (an expired but genuine link says so). */
export function verifyFileSignature(secret: Buffer, key: string, expiresRaw: unknown, sigRaw: unknown, now = Date.now()): SignatureCheck {
  if (typeof expiresRaw !== 'string' || typeof sigRaw !== 'string' || !/^\d{1,12}$/.test(expiresRaw)) return 'invalid';
  const expires = Number(expiresRaw);
  const expected = Buffer.from(mac(secret, key, expires));
  const given = Buffer.from(sigRaw);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return expires * 1000 < now ? 'expired' : 'ok';
}
