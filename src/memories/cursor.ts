import type { ListCursor } from '../backends/ports/memory.model';
import { isMemoryId } from './memory-id';

/**
 * The list cursor: an opaque string for a position in the newest-first order
 * (created_at desc, id desc). It names a position, not a row, so it stays valid while memories
 * are added or deleted: the next page is every row strictly after it.
 */
export function encodeCursor(c: ListCursor): string {
  return Buffer.from(`v1.${c.createdAt.getTime()}.${c.id}`, 'utf8').toString('base64url');
}

/** null when the string is not a cursor we issued. */
export function decodeCursor(raw: string): ListCursor | null {
  if (!/^[A-Za-z0-9_-]{1,100}$/.test(raw)) return null;
  const m = /^v1\.(\d{1,15})\.([0-9a-f]{24})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!m || !isMemoryId(m[2])) return null;
  const ms = Number(m[1]);
  if (!Number.isSafeInteger(ms) || Number.isNaN(new Date(ms).getTime())) return null;
  return { createdAt: new Date(ms), id: m[2] };
}
