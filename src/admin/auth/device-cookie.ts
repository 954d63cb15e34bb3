import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';

/**
 * The sign-in "device cookie" (OWASP, "Slow Down Online Guessing Attacks with Device Cookies";
 * decision 0052): a browser that signed in once as the admin gets `memstore.device`, an HMAC of the
 * username and a random nonce under the service key. Login throttling counts the failures of such a
 * browser under its own key, so failures from anyone else — all of whom may share one address behind
 * a proxy without MEMSTORE_TRUST_PROXY — can lock out only untrusted browsers, never the admin's.
 */
export const DEVICE_COOKIE = 'memstore.device';
export const DEVICE_COOKIE_MAX_AGE_MS = 180 * 86_400_000;

function mac(key: Buffer, username: string, nonce: string): string {
  return createHmac('sha256', key).update(`device\n${username}\n${nonce}`).digest('base64url');
}

/** A fresh cookie value for `username`. */
export function deviceCookieValue(key: Buffer, username: string): string {
  const nonce = randomBytes(12).toString('base64url');
  return `${nonce}.${mac(key, username, nonce)}`;
}

/** The nonce of the request's device cookie when it is genuine and was issued for `username`; else null. */
export function deviceNonce(req: Request, key: Buffer, username: string): string | null {
  const m = new RegExp(`(?:^|;\\s*)${DEVICE_COOKIE.replace('.', '\\.')}=([A-Za-z0-9_-]{16})\\.([A-Za-z0-9_-]{43})(?:;|$)`).exec(req.headers.cookie ?? '');
  if (!m) return null;
  const expected = Buffer.from(mac(key, username, m[1]));
  const given = Buffer.from(m[2]);
  return given.length === expected.length && timingSafeEqual(given, expected) ? m[1] : null;
}

/** The username a sign-in request tried (trimmed, lower-cased, bounded): a throttling key and an audit fact, never a password. */
export function triedUsername(req: Request): string {
  const u = (req.body as { username?: unknown } | undefined)?.username;
  return typeof u === 'string' ? u.trim().toLowerCase().slice(0, 200) : '';
}

/**
 * What login throttling counts a sign-in attempt under: the device cookie when the browser has a
 * genuine one for the username tried, else the client address together with that username.
 */
export function loginThrottleKey(req: Request, key: Buffer): string {
  const username = triedUsername(req);
  const nonce = deviceNonce(req, key, username);
  if (nonce) return `device:${nonce}`;
  // An IPv6 client counts by its /56, as express-rate-limit's own key does (one host owns many addresses).
  return `addr:${ipKeyGenerator(req.ip ?? req.socket?.remoteAddress ?? '')}|user:${encodeURIComponent(username)}`;
}
