import { randomBytes } from 'node:crypto';
import { DEFAULT_NAMESPACE, isNamespaceName } from '../namespaces/namespace';

/**
 * Memory ids (CONTRACT §2): 24 lowercase hex characters in the ObjectId layout, so they are
 * time-ordered (by second) and valid MongoDB ObjectIds: 4 bytes of Unix seconds, then 8 random
 * bytes drawn for each id. Not the ObjectId's per-process constant and counter (issue 46, decision
 * 0050): with those, one id of a caller's own gave away the ids of every memory made near it.
 */
export function newMemoryId(nowMs = Date.now()): string {
  const buf = Buffer.alloc(12);
  buf.writeUInt32BE(Math.floor(nowMs / 1000) >>> 0, 0);
  randomBytes(8).copy(buf, 4);
  return buf.toString('hex');
}

const ID = /^[0-9a-f]{24}$/;

export function isMemoryId(value: unknown): value is string {
  return typeof value === 'string' && ID.test(value);
}

/** Object store key of a memory's markdown file from before versioned objects (still read). */
export function memoryKey(id: string): string {
  return `memories/${id}.md`;
}

/**
 * Key of one version's immutable object (issue 9): unique per version and per writer, so a writer
 * that loses the compare-and-swap can never overwrite the winner's file.
 */
export function versionKey(ns: string, id: string, version: number): string {
  return `${namespaceKeyPrefix(ns)}memories/${id}.v${version}-${randomBytes(6).toString('hex')}.md`;
}

/**
 * Where a namespace's objects live (issue 43, decision 0100): `ns/<namespace>/` before the
 * memories/ layout (namespace names are safe key segments: namespaceNameProblem); 'default' keeps
 * the layout of before namespaces (its objects, old and new, stay where they were).
 */
export function namespaceKeyPrefix(ns: string): string {
  if (ns === DEFAULT_NAMESPACE) return '';
  if (!isNamespaceName(ns)) throw new Error(`Not a namespace name: ${JSON.stringify(ns)}`);
  return `${NAMESPACE_KEY_DIR}/${ns}/`;
}
export const NAMESPACE_KEY_DIR = 'ns';

/** The object of a memory as the index knows it (the old layout when it has no object key). */
export function objectKeyOf(doc: { id: string; objectKey?: string | null }): string {
  return doc.objectKey ?? memoryKey(doc.id);
}

export const MEMORY_KEY_PREFIX = 'memories/';
const KEY = /^memories\/([0-9a-f]{24})\.md$/;
const VERSION_KEY = /^memories\/([0-9a-f]{24})\.v([1-9][0-9]{0,9})-[0-9a-f]{12}\.md$/;
const NS_PREFIX = /^ns\/((?:[a-z0-9._-]+\/)*[a-z0-9._-]+)\/(memories\/.*)$/;

/**
 * What a memory key names: the id, (for a versioned object) the version, and the namespace (from
 * the `ns/<namespace>/` prefix; 'default' for a key without one); null for any other key.
 */
export function parseMemoryKey(key: string): { id: string; version: number | null; namespace: string } | null {
  let namespace = DEFAULT_NAMESPACE;
  let rest = key;
  const p = NS_PREFIX.exec(key);
  if (p) {
    if (!isNamespaceName(p[1])) return null;
    namespace = p[1];
    rest = p[2];
  }
  const v = VERSION_KEY.exec(rest);
  if (v) return { id: v[1], version: Number(v[2]), namespace };
  const m = KEY.exec(rest);
  return m && !p ? { id: m[1], version: null, namespace } : null;
}

/** The id in a memory key (either layout), or null for any other key. */
export function idFromKey(key: string): string | null {
  return parseMemoryKey(key)?.id ?? null;
}
