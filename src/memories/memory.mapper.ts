import type { Author, MemoryDoc, MemoryRow, MemoryStats, VersionEntry } from '../backends/ports/memory.model';
import type { Principal } from '../common/auth/principal';
import type { MemoryDto, MemoryRowDto, StatsDto, WrittenMemoryDto } from './dto/memory-response.dto';
import type { AuthorDto, VersionDto } from './dto/memory-versions.dto';

/** Explicit mapping from the index model to the API's snake_case objects (CONTRACT §3). */
export function mapMemory(doc: MemoryDoc): MemoryDto {
  return {
    id: doc.id,
    namespace: doc.namespace,
    title: doc.title,
    type: doc.type,
    content: doc.content,
    tags: [...doc.tags],
    scope: doc.scope,
    agent: doc.agent,
    project: doc.project,
    created_at: doc.createdAt.toISOString(),
    updated_at: doc.updatedAt.toISOString(),
    version: doc.version,
    ...superseded(doc),
  };
}

/** superseded_by and valid_to, when a newer memory replaced this one (decision 0130). */
function superseded(d: Pick<MemoryDoc, 'supersededBy' | 'validTo'>): { superseded_by?: string; valid_to?: string } {
  return d.supersededBy && d.validTo ? { superseded_by: d.supersededBy, valid_to: d.validTo.toISOString() } : {};
}

/** Whether the caller may see stored content: the admin, or a token with memory:read (decision 0050). */
export function canRead(p: Principal | undefined): boolean {
  return p !== undefined && (p.kind === 'admin' || p.scopes.includes('memory:read'));
}

/** The fields of a memory a write may echo to a caller without memory:read: only those it sent itself. */
export const ECHOABLE_FIELDS = ['title', 'type', 'content', 'tags', 'scope', 'agent', 'project'] as const;

/**
 * The answer to a write (create, PATCH, restore, MCP update_memory), shaped by what the caller may
 * read (decision 0050): with memory:read (or as admin) the whole memory; without it the id, the
 * version and the timestamps, plus the fields the request itself set (`sent`, their stored,
 * normalised values) — never a stored field the caller did not send.
 */
export function mapWritten(doc: MemoryDoc, reader: boolean, sent: Iterable<string> = []): MemoryDto | WrittenMemoryDto {
  const full = mapMemory(doc);
  if (reader) return full;
  const out: WrittenMemoryDto = { id: full.id, created_at: full.created_at, updated_at: full.updated_at, version: full.version };
  const keep = new Set(sent);
  for (const k of ECHOABLE_FIELDS) if (keep.has(k)) (out as unknown as Record<string, unknown>)[k] = full[k];
  return out;
}

/** The fields a request body gave a value to (absent and null leave a memory's field as it is). */
export function sentFields(body: unknown): string[] {
  if (!body || typeof body !== 'object') return [];
  return ECHOABLE_FIELDS.filter((k) => (body as Record<string, unknown>)[k] != null);
}

export function mapRow(row: MemoryRow): MemoryRowDto {
  const out: MemoryRowDto = {
    id: row.id,
    namespace: row.namespace,
    title: row.title,
    type: row.type,
    tags: [...row.tags],
    scope: row.scope,
    agent: row.agent,
    project: row.project,
    snippet: row.snippet,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
    version: row.version,
    ...superseded(row),
  };
  if (row.score !== undefined) out.score = row.score;
  if (row.matched !== undefined) out.matched = [...row.matched];
  return out;
}

export function mapStats(s: MemoryStats): StatsDto {
  return { total: s.total, by_type: { ...s.byType }, by_scope: { ...s.byScope }, by_project: { ...s.byProject }, by_agent: { ...s.byAgent } };
}

export function mapAuthor(a: Author | null | undefined): AuthorDto | null {
  if (!a) return null;
  const out: AuthorDto = { kind: a.kind, id: a.id, name: a.name };
  if (a.claimed) {
    const c = a.claimed;
    out.imported = {
      claimed_author: c.author ? { kind: c.author.kind, id: c.author.id, name: c.author.name } : null,
      claimed_version: c.version,
      claimed_created_at: c.createdAt,
      claimed_updated_at: c.updatedAt,
    };
  }
  return out;
}

export function mapVersion(e: VersionEntry, current: number): VersionDto {
  return { version: e.version, updated_at: e.updatedAt.toISOString(), title: e.title, size: e.size, author: mapAuthor(e.author), current: e.version === current };
}
