import type { MemoryDoc, MemoryRow, MemoryStats } from '../backends/ports/memory.model';
import type { MemoryDto, MemoryRowDto, StatsDto } from './dto/memory-response.dto';

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
  };
  if (row.score !== undefined) out.score = row.score;
  if (row.matched !== undefined) out.matched = [...row.matched];
  return out;
}

export function mapStats(s: MemoryStats): StatsDto {
  return { total: s.total, by_type: { ...s.byType }, by_scope: { ...s.byScope }, by_project: { ...s.byProject }, by_agent: { ...s.byAgent } };
}
