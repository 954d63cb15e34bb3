import { ALL_NAMESPACES, DEFAULT_NAMESPACE } from '../../namespaces/namespace';
import { namespaceSize } from './sqlite-list-planner';
import type { Stmt } from './sqlite-memory-rows';

/** The namespace token FTS_NS_TOKEN_SQL (sqlite-memory-schema.ts) computes, in JS: 'n', the name's UTF-8 bytes in hex, '0'. */
export function namespaceToken(ns: string): string {
  return `n${Buffer.from(ns, 'utf8').toString('hex')}0`;
}

/**
 * Where a search's full-text MATCH looks (decision 0152), for the namespace a search runs in
 * after searchFilter:
 * - the whole store (one namespace holds every memory, or an admin's `*`): the query as it is;
 * - a namespace with a token: `fts_ns : <token> AND (query)`, so FTS5 walks only the namespace's
 *   documents (a 1,000-memory namespace costs about what it costs alone). A query word that is
 *   another namespace's token finds nothing (no document has both); one that is its own token
 *   finds its own memories. Restricting the words to the text columns cost ~20 % more (bm25
 *   reads positions to check the column).
 * - 'default' beside other namespaces (no token): the words in the text columns only (so no
 *   token matches), store-wide; the namespace filter runs after, as before.
 */
export class FtsScope {
  private constructor(
    /** null: the whole store. */
    readonly namespace: string | null,
    private readonly token: string | null,
  ) {}

  static of(namespace: string): FtsScope {
    if (namespace === ALL_NAMESPACES) return new FtsScope(null, null);
    return new FtsScope(namespace, namespace === DEFAULT_NAMESPACE ? null : namespaceToken(namespace));
  }

  /** True when the MATCH itself keeps to the namespace. */
  get matchesNamespace(): boolean {
    return this.token !== null;
  }

  /** `expr` (an FTS5 expression over the query's words) as a MATCH of memories_fts. */
  fts(expr: string): string {
    return this.scoped(expr, '{title tag_text content}');
  }

  /** `expr` as a MATCH of memories_tt (titles and tags). */
  titleTags(expr: string): string {
    return this.scoped(expr, '{title tag_text}');
  }

  /** Memories in the scope (the running counts): the namespace's, or the store's. */
  count(stmt: Stmt): number {
    return namespaceSize(stmt, this.matchesNamespace ? (this.namespace as string) : ALL_NAMESPACES);
  }

  private scoped(expr: string, columns: string): string {
    if (this.namespace === null) return expr;
    return this.token === null ? `${columns} : (${expr})` : `fts_ns : "${this.token}" AND (${expr})`;
  }
}
