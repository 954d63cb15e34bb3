import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed download URLs of the filesystem object store, served by the service itself at
 * `GET /api/files/<key>?expires=<epoch s>&sig=<hmac>`. The HMAC (SHA-256, keyed with the service
 * key) covers the key and the expiry, so neither can be changed without invalidating the link.
 */
export const FILES_ROUTE_PREFIX = '/api/files/';

/** The MAC covers the key, the expiry and (for a link a token made) the token id, so none can be changed. */
function mac(secret: Buffer, key: string, expires: number, tokenId?: string): string {
  return createHmac('sha256', secret)
    .update(`GET\n${key}\n${expires}${tokenId ? `\n${tokenId}` : ''}`)
    .digest('base64url');
}

/** Path part of a key for a URL: each segment percent-encoded. */
export function encodeKeyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

/** A link; with `tokenId` (a link a token asked for) it works only while that token does (issue 46). */
export function signFileUrl(secret: Buffer, baseUrl: string, key: string, expires: number, tokenId?: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  const tok = tokenId ? `&tok=${tokenId}` : '';
  return `${base}${FILES_ROUTE_PREFIX}${encodeKeyPath(key)}?expires=${expires}${tok}&sig=${mac(secret, key, expires, tokenId)}`;
}

export type SignatureCheck = 'ok' | 'invalid' | 'expired';

/** Checks a signature in constant time, then the expiry (an expired but genuine link says so). */
export function verifyFileSignature(secret: Buffer, key: string, expiresRaw: unknown, sigRaw: unknown, now = Date.now(), tokRaw?: unknown): SignatureCheck {
  if (typeof expiresRaw !== 'string' || typeof sigRaw !== 'string' || !/^\d{1,12}$/.test(expiresRaw)) return 'invalid';
  if (tokRaw !== undefined && (typeof tokRaw !== 'string' || !/^[0-9a-f]{16}$/.test(tokRaw))) return 'invalid';
  const expires = Number(expiresRaw);
  const expected = Buffer.from(mac(secret, key, expires, tokRaw));
  const given = Buffer.from(sigRaw);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return 'invalid';
  return expires * 1000 < now ? 'expired' : 'ok';
}
