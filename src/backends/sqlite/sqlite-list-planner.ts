import { ALL_NAMESPACES } from '../../namespaces/namespace';
import { ListQuery, MemoryFilter, MemoryPage } from '../ports/memory.model';
import { DbRow, Params, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';
import { supersessionSql } from './sqlite-supersession';

/**
 * The list query planner: newest-first pages under any combination of filters, each walking the
 * index that serves it (a tag's rows in memory_tags, or a column's covering index) and counting
 * without reading the memories' rows where it can.
 */
export function listPage(stmt: Stmt, query: ListQuery): MemoryPage {
  // With a tag filter, walk that tag's rows in newest-first order: memory_tags carries each
  // memory's type/scope/agent/project too, with an index per column after the tag, so a tag plus
  // column filters is counted and paged in memory_tags alone (only the page's rows are joined).
  const tags = rarestFirst(stmt, [...new Set(query.filter.tags ?? [])]);
  const tagDriven = tags.length > 0;
  const { where, params } = filterSql({ ...query.filter, tags }, { tagDriven });
  const o = tagDriven ? 't0' : 'm';
  const countFrom = tagDriven ? `memory_tags t0${tagIndexFor(stmt, query.filter)}` : 'memories m';
  const total = hasFilter({ ...query.filter, namespace: ALL_NAMESPACES })
    ? (stmt(`SELECT count(*) AS n FROM ${countFrom}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`).get(params) as { n: number }).n
    : namespaceSize(stmt, query.filter.namespace);
  const pageWhere = [...where];
  const pageParams: Params = { ...params, limit: query.limit, offset: 0 };
  if (query.after) {
    pageWhere.push(`(${o}.created_at < @after_ts OR (${o}.created_at = @after_ts AND ${o}.id < @after_id))`);
    pageParams.after_ts = query.after.createdAt.getTime();
    pageParams.after_id = query.after.id;
  } else {
    pageParams.offset = query.offset;
  }
  const from = tagDriven ? 'memory_tags t0 JOIN memories m ON m.seq = t0.seq' : 'memories m';
  const sql = `SELECT ${ROW_COLUMNS} FROM ${from}${pageWhere.length ? ` WHERE ${pageWhere.join(' AND ')}` : ''}
    ORDER BY ${o}.created_at DESC, ${o}.id DESC LIMIT @limit OFFSET @offset`;
  const rows = (stmt(sql).all(pageParams) as DbRow[]).map(toRow);
  return { rows, total };
}

const TAG_COLUMNS = ['type', 'scope', 'agent', 'project'] as const;

/**
 * A tag with column filters is counted through one of the (tag, column) indexes of memory_tags;
 * without statistics SQLite picks one blindly. Take the column whose value is rarest among all
 * memories (the running counts of memory_counts: one small read), which is the best guess of the
 * fewest index entries to walk for this tag (e.g. tag + type=fact + scope=project: 7,800 entries
 * through the type index instead of 15,000 through the scope one, at 100,000 memories).
 */
function tagIndexFor(stmt: Stmt, f: MemoryFilter): string {
  const given = TAG_COLUMNS.filter((c) => f[c] !== undefined);
  if (given.length < 2) return '';
  const count = stmt("SELECT sum(n) FROM memory_counts WHERE dim = ? AND key = ? AND (namespace = ? OR ? = '*')").pluck();
  let best: { column: string; n: number } | null = null;
  for (const c of given) {
    const n = (count.get(c, f[c], f.namespace, f.namespace) as number | null) ?? 0;
    if (best === null || n < best.n) best = { column: c, n };
  }
  return best && f.namespace !== ALL_NAMESPACES ? ` INDEXED BY memory_tags_ns_${best.column}_f` : '';
}

/** Several tag filters: the tag with the fewest memories drives the query. */
export function rarestFirst(stmt: Stmt, tags: string[]): string[] {
  if (tags.length < 2) return tags;
  const count = stmt('SELECT count(*) FROM memory_tags WHERE tag = ?').pluck();
  return tags
    .map((t) => ({ t, n: count.get(t) as number }))
    .sort((a, b) => a.n - b.n)
    .map((x) => x.t);
}

/**
 * The filter a search runs with (decision 0100): a namespace that holds every memory of the store
 * (a store with one namespace, as every store before issue 43) is searched as the whole store, so
 * the windowed ranking and the unfiltered vector index work as before. Callers keep only rows of
 * the namespace in what they return (onlyNamespace), so a memory of another namespace written
 * between this check and the search is dropped, never shown.
 */
export function searchFilter(stmt: Stmt, f: MemoryFilter): MemoryFilter {
  if (f.namespace === ALL_NAMESPACES) return f;
  // The running counts keep no row at 0 (decision 0151): a row of another namespace means memories
  // there. Two seeks on the key, where summing every namespace's counts read them all (~0.3 ms at 100 namespaces).
  const has = stmt("SELECT 1 FROM memory_counts WHERE namespace = ? AND dim = 'type' LIMIT 1").pluck();
  const others = stmt('SELECT 1 FROM memory_counts WHERE namespace < ? OR namespace > ? LIMIT 1').pluck();
  return has.get(f.namespace) !== undefined && others.get(f.namespace, f.namespace) === undefined ? { ...f, namespace: ALL_NAMESPACES } : f;
}

/**
 * How many memories namespace `ns` holds (the store for ALL_NAMESPACES), from the running counts
 * of memory_counts: a list filtered by its namespace alone is counted in one small read instead of
 * a walk of the namespace's index (16 ms at 100,000 memories).
 */
export function namespaceSize(stmt: Stmt, ns: string): number {
  if (ns === ALL_NAMESPACES) return stmt("SELECT coalesce(sum(n), 0) FROM memory_counts WHERE dim = 'type'").pluck().get() as number;
  return stmt("SELECT coalesce(sum(n), 0) FROM memory_counts WHERE namespace = ? AND dim = 'type'").pluck().get(ns) as number;
}

/** The rows of namespace `ns` (all for ALL_NAMESPACES): the last guard of every search's answer. */
export function onlyNamespace<T extends { namespace: string }>(ns: string, rows: T[]): T[] {
  return ns === ALL_NAMESPACES ? rows : rows.filter((r) => r.namespace === ns);
}

export function hasFilter(f: MemoryFilter): boolean {
  return (
    f.namespace !== ALL_NAMESPACES ||
    f.type !== undefined ||
    f.scope !== undefined ||
    f.agent !== undefined ||
    f.project !== undefined ||
    f.since !== undefined ||
    f.current === true ||
    f.asOf !== undefined ||
    (f.tags?.length ?? 0) > 0
  );
}

export function filterSql(f: MemoryFilter, opts: { tagDriven?: boolean } = {}): { where: string[]; params: Params } {
  const where: string[] = [];
  const params: Params = {};
  // Tag-driven (list()): the first tag's rows (alias t0) carry the filter columns and drive the query.
  const a = opts.tagDriven ? 't0' : 'm';
  // The tenant first, always (issue 43): every list, count, keyword and vector candidate query goes through here.
  if (f.namespace !== ALL_NAMESPACES) {
    where.push(`${a}.namespace = @f_ns`);
    params.f_ns = f.namespace;
  }
  if (f.type !== undefined) {
    where.push(`${a}.type = @f_type`);
    params.f_type = f.type;
  }
  if (f.scope !== undefined) {
    where.push(`${a}.scope = @f_scope`);
    params.f_scope = f.scope;
  }
  if (f.agent !== undefined) {
    where.push(`${a}.agent = @f_agent`);
    params.f_agent = f.agent;
  }
  if (f.project !== undefined) {
    where.push(`${a}.project = @f_project`);
    params.f_project = f.project;
  }
  if (f.since !== undefined) {
    where.push(`${a}.created_at >= @f_since`);
    params.f_since = f.since.getTime();
  }
  supersessionSql(f, a, where, params);
  [...new Set(f.tags ?? [])].forEach((tag, i) => {
    if (i === 0 && opts.tagDriven) {
      where.push('t0.tag = @f_tag0');
    } else {
      where.push(`EXISTS (SELECT 1 FROM memory_tags tx WHERE tx.seq = ${a}.seq AND tx.tag = @f_tag${i})`);
    }
    params[`f_tag${i}`] = tag;
  });
  return { where, params };
}
