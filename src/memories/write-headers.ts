import type { Request, Response } from 'express';
import type { Author } from '../backends/ports/memory.model';
import type { Principal } from '../common/auth/principal';
import { RequestValidationError } from '../common/errors';

/** The ETag of a memory version (strong: a version is one exact state). */
export function etagOf(version: number): string {
  return `"${version}"`;
}

export function setEtag(res: Response, version: number): void {
  res.setHeader('ETag', etagOf(version));
}

/**
 * The version an If-Match header asks for: undefined when absent or "*" (any current version).
 * Accepts `"3"` and a bare `3` (the first tag of a list counts); anything else is a 422. A weak
 * tag (`W/"3"`) is well formed but never matches (RFC 9110 §13.1.1: If-Match compares strongly):
 * it asks for version 0, which no memory has, so the answer is 412 with current_version.
 */
export function ifMatchVersion(req: Request): number | undefined {
  const raw = req.headers['if-match'];
  if (raw === undefined) return undefined;
  const value = (Array.isArray(raw) ? raw.join(',') : raw).trim();
  const first = value.split(',')[0].trim();
  if (first === '*') return undefined;
  const m = /^(?:W\/)?"?([1-9][0-9]{0,14})"?$/.exec(first);
  if (!m) {
    throw RequestValidationError.one(['header', 'If-Match'], 'If-Match should be the ETag of a version, e.g. "3" (or *)', 'value_error', value);
  }
  return first.startsWith('W/') ? 0 : Number(m[1]);
}

/** Provenance of a write: the calling token (id and name) or the signed-in admin. */
export function authorOf(req: Request): Author | null {
  return req.principal ? principalAuthor(req.principal) : null;
}

/** The author a principal writes as (REST and MCP alike). */
export function principalAuthor(p: Principal): Author {
  return p.kind === 'token' ? { kind: 'token', id: p.tokenId, name: p.name ?? null } : { kind: 'admin', id: p.username, name: null };
}
