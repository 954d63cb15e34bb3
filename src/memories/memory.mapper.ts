import type { Author, MemoryDoc, MemoryRow, MemoryStats, VersionEntry } from '../backends/ports/memory.model';
import type { MemoryDto, MemoryRowDto, StatsDto } from './dto/memory-response.dto';
import type { AuthorDto, VersionDto } from './dto/memory-versions.dto';

/** Explicit mapping from the index model to the API's snake_case objects (CONTRACT §3). */
export function mapMemory(doc: MemoryDoc): MemoryDto {
  return {
    id: doc.id,
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
  };
}

export function mapRow(row: MemoryRow): MemoryRowDto {
  const out: MemoryRowDto = {
    id: row.id,
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
  };
  if (row.score !== undefined) out.score = row.score;
  if (row.matched !== undefined) out.matched = [...row.matched];
  return out;
}

export function mapStats(s: MemoryStats): StatsDto {
  return { total: s.total, by_type: { ...s.byType }, by_scope: { ...s.byScope }, by_project: { ...s.byProject }, by_agent: { ...s.byAgent } };
}

export function mapAuthor(a: Author | null | undefined): AuthorDto | null {
  return a ? { kind: a.kind, id: a.id, name: a.name } : null;
}

export function mapVersion(e: VersionEntry, current: number): VersionDto {
  return { version: e.version, updated_at: e.updatedAt.toISOString(), title: e.title, size: e.size, author: mapAuthor(e.author), current: e.version === current };
}
