import { parse, stringify } from 'yaml';
import { Author, MEMORY_SCOPES, MEMORY_TYPES, MemoryDoc, MemoryScope, MemoryType, storedAuthor } from '../backends/ports/memory.model';
import { isMemoryId } from './memory-id';

/**
 * The stored markdown file (CONTRACT §3): YAML front matter with every field but content, then
 * the body exactly as given. The object store alone is enough to rebuild the index.
 */
export function toMarkdown(doc: Omit<MemoryDoc, 'namespace'>): string {
  const front = {
    id: doc.id,
    title: doc.title,
    type: doc.type,
    scope: doc.scope,
    tags: doc.tags,
    agent: doc.agent,
    project: doc.project,
    created_at: doc.createdAt.toISOString(),
    updated_at: doc.updatedAt.toISOString(),
    version: doc.version,
    ...(doc.supersededBy && doc.validTo ? { superseded_by: doc.supersededBy, valid_to: doc.validTo.toISOString() } : {}),
    ...(doc.author ? { author: { kind: doc.author.kind, id: doc.author.id, name: doc.author.name, ...(doc.author.claimed ? { claimed: doc.author.claimed } : {}) } } : {}),
  };
  // The yaml library quotes whatever needs it (---, ..., #, colons, quotes, newlines, unicode);
  // top-level keys start every line that is not indented, so no value line can read as a fence.
  return `---\n${stringify(front, { lineWidth: 0 })}---\n${doc.content}`;
}

export class MarkdownParseError extends Error {}

/** Front matter ends at the first line that is exactly `---` (not at a `---` inside a value). */
const FRONT = /^---\r?\n((?:[\s\S]*?\r?\n)?)---\r?\n/;

/** Parses a stored file back into a memory; throws MarkdownParseError saying what is wrong. */
/** The memory a file describes; its namespace is where it is read from (the object key, or the request), never the file. */
export function parseMarkdown(text: string): Omit<MemoryDoc, 'namespace'> {
  const m = FRONT.exec(text);
  if (!m) throw new MarkdownParseError('no YAML front matter');
  let data: unknown;
  try {
    data = parse(m[1] ?? '', { schema: 'core' });
  } catch (e) {
    throw new MarkdownParseError(`front matter is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new MarkdownParseError('front matter is not a mapping');
  const f = data as Record<string, unknown>;
  if (!isMemoryId(f.id)) throw new MarkdownParseError('id is not 24 lowercase hex characters');
  if (!MEMORY_TYPES.includes(f.type as MemoryType)) throw new MarkdownParseError(`unknown type ${JSON.stringify(f.type)}`);
  if (!MEMORY_SCOPES.includes(f.scope as MemoryScope)) throw new MarkdownParseError(`unknown scope ${JSON.stringify(f.scope)}`);
  const tags = f.tags ?? [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) throw new MarkdownParseError('tags is not a list of strings');
  const optional = (k: string): string | null => {
    const v = f[k];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') throw new MarkdownParseError(`${k} is not a string`);
    return v;
  };
  const date = (k: string): Date => {
    const v = f[k];
    const d = typeof v === 'string' ? new Date(v) : null;
    if (!d || Number.isNaN(d.getTime())) throw new MarkdownParseError(`${k} is not an ISO timestamp`);
    return d;
  };
  const version = f.version ?? 1;
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1) throw new MarkdownParseError('version is not a positive integer');
  const supersededBy = optional('superseded_by');
  if (supersededBy !== null && !isMemoryId(supersededBy)) throw new MarkdownParseError('superseded_by is not a memory id');
  return {
    id: f.id,
    version,
    ...(supersededBy !== null ? { supersededBy, validTo: date('valid_to') } : {}),
    author: authorOf(f.author),
    title: optional('title'),
    type: f.type as MemoryType,
    scope: f.scope as MemoryScope,
    tags: tags as string[],
    agent: optional('agent'),
    project: optional('project'),
    content: text.slice(m[0].length),
    createdAt: date('created_at'),
    updatedAt: date('updated_at'),
  };
}

function authorOf(v: unknown): Author | null {
  if (v === undefined || v === null) return null;
  const a = v as Record<string, unknown>;
  if (typeof a !== 'object' || (a.kind !== 'token' && a.kind !== 'admin') || typeof a.id !== 'string') throw new MarkdownParseError('author is not {kind, id, name}');
  return storedAuthor(a);
}
