import type { MemoryDoc, MemoryFilter, SimilarHit } from '../backends/ports/memory.model';
import { RequestValidationError } from '../common/errors';
import { isMemoryId } from './memory-id';

/** At most this many memories one write may supersede (decision 0130). */
export const SUPERSEDES_MAX = 20;

/**
 * The memories a write supersedes (issue 45, decision 0130), checked before anything is written:
 * at most SUPERSEDES_MAX memory ids, not the writer itself, each one stored (looked up through
 * `get`, the same lookup a GET by id goes through). Duplicates count once. 422 naming the entry
 * otherwise. A writer that is itself superseded may not supersede others: links then never form a
 * cycle (a memory is only ever linked to one that nothing had replaced at the time).
 */
export async function checkSupersedes(ids: readonly unknown[] | null | undefined, writer: MemoryDoc | null, get: (id: string) => Promise<MemoryDoc | null>): Promise<string[]> {
  if (ids == null || ids.length === 0) return [];
  const at = (i: number | null, msg: string, input: unknown) => RequestValidationError.one(i === null ? ['body', 'supersedes'] : ['body', 'supersedes', i], msg, 'value_error', input);
  if (ids.length > SUPERSEDES_MAX) {
    throw RequestValidationError.one(['body', 'supersedes'], `List should have at most ${SUPERSEDES_MAX} items`, 'too_long', null, { max_length: SUPERSEDES_MAX });
  }
  if (writer?.supersededBy) throw at(null, `Memory ${writer.id} is itself superseded by ${writer.supersededBy}; supersede from the newer memory instead`, ids);
  const out: string[] = [];
  for (const [i, id] of ids.entries()) {
    if (!isMemoryId(id)) throw at(i, 'Input should be a memory id (24 lowercase hex characters)', id);
    if (writer && id === writer.id) throw at(i, 'A memory cannot supersede itself', id);
    if (out.includes(id)) continue;
    if (!(await get(id))) throw at(i, `Memory ${id} does not exist`, id);
    out.push(id);
  }
  return out;
}

/** The version of `old` that records its supersession by `by` at `at`; null when it is already superseded (the first link stands). */
export function supersededVersion(old: MemoryDoc, by: string, at: Date): MemoryDoc | null {
  if (old.supersededBy) return null;
  return { ...old, supersededBy: by, validTo: at };
}

/** A duplicate hint with whether it looks like an older statement of what the new memory says. */
export type SimilarHint = SimilarHit & { likely_update: boolean };

/**
 * Marks the duplicate hints that look like updates (decision 0130): a near-copy (cosine ≥ the hint
 * threshold: same subject) that is older than the new memory and says something else (its text
 * differs in its words or numbers, not only in case, spacing or punctuation). A same-text hit is a plain duplicate. `get` reads
 * the few hits (at most 3).
 */
export async function markLikelyUpdates(doc: MemoryDoc, hits: SimilarHit[], get: (id: string) => Promise<MemoryDoc | null>): Promise<SimilarHint[]> {
  // Words and numbers only: a copy that differs in case, spacing or punctuation is a duplicate, not an update.
  const norm = (d: Pick<MemoryDoc, 'title' | 'content'>) => (`${d.title ?? ''}\n${d.content}`.toLowerCase().match(/\p{L}+|\p{N}+/gu) ?? []).join(' ');
  const mine = norm(doc);
  const out: SimilarHint[] = [];
  for (const h of hits) {
    const other = await get(h.id);
    const likely = other !== null && other.createdAt.getTime() <= doc.createdAt.getTime() && norm(other) !== mine;
    out.push({ ...h, likely_update: likely });
  }
  return out;
}

/** The sentence a create answers beside hints that look like updates. */
export function updateHint(hints: SimilarHint[]): string | undefined {
  const ids = hints.filter((h) => h.likely_update).map((h) => h.id);
  if (ids.length === 0) return undefined;
  return `This looks like a newer statement of ${ids.join(', ')}. If it replaces ${ids.length === 1 ? 'it' : 'them'}, pass supersedes: [${ids.map((i) => `"${i}"`).join(', ')}] (PATCH this memory with supersedes) so searches answer only the newer one.`;
}

/** The supersession part of a list or search filter: superseded memories hidden unless asked for; `as_of` a moment. */
export function supersessionFilter(q: { include_superseded?: boolean; as_of?: string }): Pick<MemoryFilter, 'current' | 'asOf'> {
  const out: Pick<MemoryFilter, 'current' | 'asOf'> = {};
  if (q.include_superseded !== true) out.current = true;
  if (q.as_of !== undefined) {
    const t = new Date(q.as_of);
    if (Number.isNaN(t.getTime())) throw RequestValidationError.one(['query', 'as_of'], 'Input should be a valid datetime', 'datetime_parsing', q.as_of);
    out.asOf = t;
  }
  return out;
}
