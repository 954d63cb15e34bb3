import type { MemoryIndex, NamespaceUsage } from '../backends/ports/memory-index.port';
import { ALL_NAMESPACES } from './namespace';

/**
 * The namespaces a caller bound to `binding` may see, with their usage, sorted by name, after
 * `after`, at most `limit` (+1 to tell whether there is a next page): with `*` every namespace
 * that holds memories; otherwise those under each prefix entry (`acme/*`: `acme` and `acme/...`)
 * that hold memories, and every exact name of the binding even when it is empty (a tenant sees
 * the namespace it was given before writing to it). Each entry is one query on the running
 * usage; a binding is a short list.
 */
export async function visibleNamespaces(index: MemoryIndex, binding: readonly string[], after: string | undefined, limit: number): Promise<NamespaceUsage[]> {
  const want = limit + 1;
  if (binding.includes(ALL_NAMESPACES)) return index.namespaceUsage({ after, limit: want });
  const names = binding.filter((e) => !e.endsWith('/*'));
  const prefixes = binding.filter((e) => e.endsWith('/*')).map((e) => e.slice(0, -2));
  const found = new Map<string, NamespaceUsage>();
  const parts = await Promise.all([names.length > 0 ? index.namespaceUsage({ names, after, limit: want }) : [], ...prefixes.map((prefix) => index.namespaceUsage({ prefix, after, limit: want }))]);
  for (const rows of parts) for (const r of rows) found.set(r.namespace, r);
  for (const n of names) if ((after === undefined || n > after) && !found.has(n)) found.set(n, { namespace: n, memories: 0, bytes: 0 });
  return [...found.values()].sort((a, b) => (a.namespace < b.namespace ? -1 : a.namespace > b.namespace ? 1 : 0)).slice(0, want);
}
