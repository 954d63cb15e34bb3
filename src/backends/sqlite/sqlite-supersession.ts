import type Database from 'better-sqlite3';
import type { MemoryFilter } from '../ports/memory.model';
import type { Params, Stmt } from './sqlite-memory-rows';

/**
 * Supersession in the embedded index (issue 45, decision 0130): two columns of the memories table
 * (`superseded_by`, `valid_to`; NULL for a memory nothing replaced) and a partial index of the
 * superseded ones. The filter is a NOT IN over that small index by memory id, which every covering
 * filter index and memory_tags carry, so filtered counts still read only indexes.
 */
export function createSupersessionSchema(db: Database.Database): void {
  const columns = new Set((db.prepare('PRAGMA table_info(memories)').all() as Array<{ name: string }>).map((c) => c.name));
  if (!columns.has('superseded_by')) db.exec('ALTER TABLE memories ADD COLUMN superseded_by TEXT');
  if (!columns.has('valid_to')) db.exec('ALTER TABLE memories ADD COLUMN valid_to INTEGER');
  db.exec('CREATE INDEX IF NOT EXISTS memories_superseded ON memories (valid_to, id) WHERE valid_to IS NOT NULL');
}

/** The conditions of the filter's `current` and `asOf` on alias `a` (memories, or memory_tags rows). */
export function supersessionSql(f: MemoryFilter, a: string, where: string[], params: Params): void {
  if (f.asOf !== undefined) {
    where.push(`${a}.created_at <= @f_as_of`);
    params.f_as_of = f.asOf.getTime();
  }
  if (f.current) {
    const by = f.asOf !== undefined ? ' AND valid_to <= @f_as_of' : '';
    where.push(`${a}.id NOT IN (SELECT id FROM memories INDEXED BY memories_superseded WHERE valid_to IS NOT NULL${by})`);
  }
}

/**
 * The filter without `current` when no memory is superseded (one probe of the partial index): a
 * store that never used `supersedes` plans and ranks exactly as before.
 */
export function withoutIdleSupersession(stmt: Stmt, f: MemoryFilter): MemoryFilter {
  if (!f.current || f.asOf !== undefined) return f;
  if (stmt('SELECT 1 FROM memories INDEXED BY memories_superseded WHERE valid_to IS NOT NULL LIMIT 1').get() !== undefined) return f;
  const { current: _c, ...rest } = f;
  return rest;
}
