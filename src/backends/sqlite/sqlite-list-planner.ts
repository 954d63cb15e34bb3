import { ListQuery, MemoryFilter, MemoryPage } from '../ports/memory.model';
import { DbRow, Params, ROW_COLUMNS, Stmt, toRow } from './sqlite-memory-rows';

/**
 * The list query planner: newest-first pages under any combination of filters, each walking the
 * index that serves it (a tag's rows in memory_tags, or a column's covering index) and counting
 * without reading the memories' rows where it can.
 */
export function listPage(stmt: Stmt, query: ListQuery): MemoryPage {
  // With a tag filter, walk that tag's rows in newest-first order (memory_tags has the order).
  const tags = rarestFirst(stmt, [...new Set(query.filter.tags ?? [])]);
  const tagDriven = tags.length > 0;
  const { where, params } = filterSql({ ...query.filter, tags }, { tagDriven });
  const from = tagDriven ? 'memory_tags t0 JOIN memories m ON m.seq = t0.seq' : 'memories m';
  const o = tagDriven ? 't0' : 'm';
  const onlyTag = tagDriven && where.length === 1;
  const f = query.filter;
  const columnFilter = f.type !== undefined || f.scope !== undefined || f.agent !== undefined || f.project !== undefined;
  let countSql: string;
  if (onlyTag) countSql = 'SELECT count(*) AS n FROM memory_tags t0 WHERE t0.tag = @f_tag0';
  else if (tagDriven && columnFilter) {
    // Tags and a column filter: count through the column's covering index and check the tags
    // there (walking the tag's rows would read every one of those memories' rows).
    const plain = filterSql({ ...f, tags });
    countSql = `SELECT count(*) AS n FROM memories m WHERE ${plain.where.join(' AND ')}`;
  } else countSql = `SELECT count(*) AS n FROM ${from}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`;
  const total = (stmt(countSql).get(params) as { n: number }).n;
  const pageWhere = [...where];
  const pageParams: Params = { ...params, limit: query.limit, offset: 0 };
  if (query.after) {
    pageWhere.push(`(${o}.created_at < @after_ts OR (${o}.created_at = @after_ts AND ${o}.id < @after_id))`);
    pageParams.after_ts = query.after.createdAt.getTime();
    pageParams.after_id = query.after.id;
  } else {
    pageParams.offset = query.offset;
  }
  const sql = `SELECT ${ROW_COLUMNS} FROM ${from}${pageWhere.length ? ` WHERE ${pageWhere.join(' AND ')}` : ''}
    ORDER BY ${o}.created_at DESC, ${o}.id DESC LIMIT @limit OFFSET @offset`;
  const rows = (stmt(sql).all(pageParams) as DbRow[]).map(toRow);
  return { rows, total };
}

/** Several tag filters: the tag with the fewest memories drives the query. */
export function rarestFirst(stmt: Stmt, tags: string[]): string[] {
  if (tags.length < 2) return tags;
  const count = stmt('SELECT count(*) FROM memory_tags WHERE tag = ?').pluck();
  return tags.map((t) => ({ t, n: count.get(t) as number })).sort((a, b) => a.n - b.n).map((x) => x.t);
}

export function hasFilter(f: MemoryFilter): boolean {
  return f.type !== undefined || f.scope !== undefined || f.agent !== undefined || f.project !== undefined || f.since !== undefined || (f.tags?.length ?? 0) > 0;
}

export function filterSql(f: MemoryFilter, opts: { tagDriven?: boolean } = {}): { where: string[]; params: Params } {
  const where: string[] = [];
  const params: Params = {};
  if (f.type !== undefined) {
    where.push('m.type = @f_type');
    params.f_type = f.type;
  }
  if (f.scope !== undefined) {
    where.push('m.scope = @f_scope');
    params.f_scope = f.scope;
  }
  if (f.agent !== undefined) {
    where.push('m.agent = @f_agent');
    params.f_agent = f.agent;
  }
  if (f.project !== undefined) {
    where.push('m.project = @f_project');
    params.f_project = f.project;
  }
  if (f.since !== undefined) {
    where.push('m.created_at >= @f_since');
    params.f_since = f.since.getTime();
  }
  [...new Set(f.tags ?? [])].forEach((tag, i) => {
    if (i === 0 && opts.tagDriven) {
      // list(): the first tag's rows (alias t0) drive the query; see list().
      where.push('t0.tag = @f_tag0');
    } else {
      where.push(`EXISTS (SELECT 1 FROM memory_tags tx WHERE tx.seq = m.seq AND tx.tag = @f_tag${i})`);
    }
    params[`f_tag${i}`] = tag;
  });
  return { where, params };
}
