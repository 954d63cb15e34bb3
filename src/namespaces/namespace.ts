import { AppError, ForbiddenError } from '../common/errors';

/**
 * Namespaces (issue 43): every memory belongs to exactly one; a token is bound to a set of them.
 * This module is the one definition of the names, the bindings and how a request picks its
 * namespace; storage adapters filter by the name it returns, never by anything a client sends.
 */

/** Where data and tokens written before namespaces live (moved there in place on upgrade). */
export const DEFAULT_NAMESPACE = 'default';
/** The request header that chooses the namespace (also `namespace` in query/body, or an MCP argument). */
export const NAMESPACE_HEADER = 'x-memory-namespace';
export const NAMESPACE_MAX_LENGTH = 128;
/** A binding entry that covers every namespace (only an admin may grant it). */
export const ALL_NAMESPACES = '*';

const SEGMENT = /^[a-z0-9._-]+$/;

/** The name rules as one regular expression for OpenAPI (no lookaround: a segment is never "." or ".."). */
const SEGMENT_SOURCE = '(?:[a-z0-9_-][a-z0-9._-]*|\\.[a-z0-9_-][a-z0-9._-]*|\\.\\.[a-z0-9._-]+)';
export const NAMESPACE_PATTERN = `^${SEGMENT_SOURCE}(?:/${SEGMENT_SOURCE})*$`;

/** 400 in the contract's envelope: a namespace name or binding that is not well-formed, or an ambiguous request. */
export class NamespaceRequestError extends AppError {
  constructor(message: string) {
    super(400, message);
  }
}

/**
 * Why `name` is not a namespace name, or null when it is: one or more `/`-separated segments of
 * lowercase letters, digits, `.`, `_`, `-`; at most 128 characters; no empty, "." or ".." segment
 * (names become object-key prefixes).
 */
export function namespaceNameProblem(name: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'a namespace name must be a non-empty string';
  if (name.length > NAMESPACE_MAX_LENGTH) return `a namespace name has at most ${NAMESPACE_MAX_LENGTH} characters`;
  for (const seg of name.split('/')) {
    if (seg === '' || seg === '.' || seg === '..') return `namespace "${name}" has an empty, "." or ".." segment`;
    if (!SEGMENT.test(seg)) return `namespace "${name}" may use only lowercase letters, digits, ".", "_", "-" and "/" between segments`;
  }
  return null;
}

export function isNamespaceName(name: unknown): name is string {
  return namespaceNameProblem(name) === null;
}

/** Why `entry` is not a binding entry (`*`, an exact name, or a prefix `name/*`), or null. */
export function bindingEntryProblem(entry: unknown): string | null {
  if (entry === ALL_NAMESPACES) return null;
  if (typeof entry === 'string' && entry.endsWith('/*')) return namespaceNameProblem(entry.slice(0, -2));
  return namespaceNameProblem(entry);
}

/** Whether one binding entry covers namespace `ns`: `*` all; `acme/*` covers `acme` and every name under it; a name itself. */
function entryCovers(entry: string, ns: string): boolean {
  if (entry === ALL_NAMESPACES) return true;
  if (entry.endsWith('/*')) {
    const prefix = entry.slice(0, -2);
    return ns === prefix || ns.startsWith(`${prefix}/`);
  }
  return entry === ns;
}

/** Whether a token bound to `binding` may work in namespace `ns`. */
export function bindingAllows(binding: readonly string[], ns: string): boolean {
  return binding.some((e) => entryCovers(e, ns));
}

/**
 * Whether every entry of `inner` lies inside `outer` (a tenant may mint tokens only within its own
 * binding, never wider): `*` only inside `*`; `p/*` inside `*` or a prefix entry covering `p`; a
 * name inside whatever covers it.
 */
export function bindingWithin(outer: readonly string[], inner: readonly string[]): boolean {
  return inner.every((e) => {
    if (e === ALL_NAMESPACES) return outer.includes(ALL_NAMESPACES);
    if (e.endsWith('/*')) {
      const prefix = e.slice(0, -2);
      return outer.some((o) => o === ALL_NAMESPACES || (o.endsWith('/*') && entryCovers(o, prefix)));
    }
    return bindingAllows(outer, e);
  });
}

/**
 * The namespace a request works in. `requested` is what the client chose (header, query/body field
 * or MCP argument; undefined when none). Without a choice: a binding of one exact name works in
 * it; a binding covering everything (`*`, and every admin) works in `default`, so the spec's routes
 * behave as before; any other binding is ambiguous (400 saying how to choose). A chosen name
 * outside the binding is a 403 that names it.
 */
export function resolveNamespace(binding: readonly string[], requested: string | undefined): string {
  if (requested !== undefined) {
    const problem = namespaceNameProblem(requested);
    if (problem) throw new NamespaceRequestError(`Invalid namespace: ${problem}`);
    if (!bindingAllows(binding, requested)) throw new ForbiddenError(`Namespace "${requested}" is outside this token's namespaces`);
    return requested;
  }
  if (binding.includes(ALL_NAMESPACES)) return DEFAULT_NAMESPACE;
  if (binding.length === 1 && !binding[0].endsWith('/*')) return binding[0];
  throw new NamespaceRequestError(`This token is bound to several namespaces (${binding.join(', ')}): choose one with the ${NAMESPACE_HEADER} header (or a "namespace" field)`);
}
