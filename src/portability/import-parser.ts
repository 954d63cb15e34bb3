import { createHash } from 'node:crypto';
import { parse } from 'yaml';
import { MEMORY_SCOPES, MEMORY_TYPES, MemoryDoc, MemoryScope, MemoryType } from '../backends/ports/memory.model';
import { isMemoryId } from '../memories/memory-id';
import { MarkdownParseError, parseMarkdown } from '../memories/memory-markdown';

/**
 * Turns one imported file (or JSONL line) into a memory, or says why it cannot (issue 12, point 2).
 * Pure functions: no I/O, so they are unit-tested on their own.
 */
export interface Candidate {
  /** Without a namespace: an import writes into the request's (issue 43), whatever the file says. */
  doc: Omit<MemoryDoc, 'namespace'>;
  /**
   * Whether the id and timestamps came from the source. When false (plain notes), the id is
   * derived from the file name and content, so importing the same file twice finds it again, and
   * the timestamps are not compared.
   */
  exact: boolean;
}

export class ImportInvalid extends Error {}

const FRONT_START = /^---\r?\n/;
const FRONT_BLOCK = /^---\r?\n(?:([\s\S]*?)\r?\n)?---[ \t]*(?:\r?\n|$)/;
const HEADING = /^#{1,6}[ \t]+(.+?)[ \t#]*$/m;
// #tag at the start or after whitespace; letters, digits, _ - / (Obsidian's rules); not "# heading", not "#123".
const HASHTAG = /(?:^|[\s(])#([\p{L}\p{N}_\-/]*[\p{L}_\-/][\p{L}\p{N}_\-/]*)/gu;

/** A memory from a markdown file: our own file (front matter with an id), a note with foreign front matter, or plain markdown. */
export function memoryFromMarkdown(file: string, text: string, mtime: Date | null, now: Date): Candidate {
  if (!FRONT_START.test(text)) return plainNote(file, text, {}, mtime, now);
  const block = FRONT_BLOCK.exec(text);
  if (!block) throw new ImportInvalid('front matter is not closed (no second --- line)');
  let data: unknown;
  try {
    data = parse(block[1] ?? '', { schema: 'core' });
  } catch (e) {
    throw new ImportInvalid(`front matter is not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (data !== null && (typeof data !== 'object' || Array.isArray(data))) throw new ImportInvalid('front matter is not a mapping');
  const fm = (data ?? {}) as Record<string, unknown>;
  if ('id' in fm) {
    // One of ours: every field must be right (the same rules as reindex).
    try {
      return { doc: parseMarkdown(text), exact: true };
    } catch (e) {
      if (e instanceof MarkdownParseError) throw new ImportInvalid(e.message);
      throw e;
    }
  }
  return plainNote(file, text.slice(block[0].length), fm, mtime, now);
}

/** A memory from one JSONL line: the API's memory object (id and timestamps optional). */
export function memoryFromJson(value: unknown, now: Date, where: string): Candidate {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ImportInvalid('not a JSON object');
  const o = value as Record<string, unknown>;
  if (typeof o.content !== 'string') throw new ImportInvalid('content is missing or not a string');
  const str = (k: string): string | null => {
    const v = o[k];
    if (v === undefined || v === null) return null;
    if (typeof v !== 'string') throw new ImportInvalid(`${k} is not a string`);
    return v;
  };
  const type = (o.type ?? 'note') as MemoryType;
  if (!MEMORY_TYPES.includes(type)) throw new ImportInvalid(`unknown type ${JSON.stringify(o.type)}`);
  const scope = (o.scope ?? 'global') as MemoryScope;
  if (!MEMORY_SCOPES.includes(scope)) throw new ImportInvalid(`unknown scope ${JSON.stringify(o.scope)}`);
  const tags = o.tags ?? [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) throw new ImportInvalid('tags is not a list of strings');
  const created = date(o.created_at, 'created_at');
  const updated = date(o.updated_at, 'updated_at');
  if (o.id !== undefined && o.id !== null && !isMemoryId(o.id)) throw new ImportInvalid('id is not 24 lowercase hex characters');
  const exact = isMemoryId(o.id) && created !== null && updated !== null;
  const createdAt = created ?? now;
  const doc: Omit<MemoryDoc, 'namespace'> = {
    id: '',
    version: typeof o.version === 'number' && Number.isInteger(o.version) && o.version >= 1 ? o.version : 1,
    title: str('title'),
    type,
    scope,
    tags: tags as string[],
    agent: str('agent'),
    project: str('project'),
    content: o.content,
    createdAt,
    updatedAt: updated ?? createdAt,
  };
  doc.id = isMemoryId(o.id) ? o.id : derivedId(created, `${where}\n${o.content}`);
  return { doc, exact };
}

function plainNote(file: string, body: string, fm: Record<string, unknown>, mtime: Date | null, now: Date): Candidate {
  const base = file
    .split('/')
    .pop()!
    .replace(/\.(md|markdown)$/i, '');
  const heading = HEADING.exec(body)?.[1]?.trim();
  const title = typeof fm.title === 'string' && fm.title.trim() ? fm.title.trim() : heading || base || null;
  const tags: string[] = [];
  const addTag = (t: unknown) => {
    if (typeof t !== 'string' && typeof t !== 'number') return;
    const v = String(t).replace(/^#/, '').trim();
    if (v && !tags.includes(v)) tags.push(v);
  };
  const fmTags = fm.tags ?? fm.tag;
  if (Array.isArray(fmTags)) fmTags.forEach(addTag);
  else if (typeof fmTags === 'string') fmTags.split(/[,\s]+/).forEach(addTag);
  for (const m of body.replace(/```[\s\S]*?```/g, '').matchAll(HASHTAG)) addTag(m[1]);
  const created = date(fm.created_at ?? fm.created ?? fm.date, 'created') ?? mtime;
  const updated = date(fm.updated_at ?? fm.updated ?? fm.modified, 'updated') ?? mtime ?? created;
  const createdAt = created ?? now;
  return {
    doc: {
      id: derivedId(created, `${file}\n${body}`),
      version: 1,
      title,
      type: MEMORY_TYPES.includes(fm.type as MemoryType) ? (fm.type as MemoryType) : 'note',
      scope: MEMORY_SCOPES.includes(fm.scope as MemoryScope) ? (fm.scope as MemoryScope) : 'global',
      tags,
      agent: typeof fm.agent === 'string' ? fm.agent : null,
      project: typeof fm.project === 'string' ? fm.project : null,
      content: body,
      createdAt,
      updatedAt: updated && updated.getTime() >= createdAt.getTime() ? updated : createdAt,
    },
    exact: false,
  };
}

function date(v: unknown, k: string): Date | null {
  if (v === undefined || v === null || v === '') return null;
  const d = v instanceof Date ? v : typeof v === 'string' || typeof v === 'number' ? new Date(v) : null;
  if (!d || Number.isNaN(d.getTime())) throw new ImportInvalid(`${k} is not a date`);
  return d;
}

/**
 * A deterministic memory id (ObjectId layout): 4 bytes of the creation time in seconds when it
 * is known (else of the hash), then 8 bytes of SHA-256 of `seed`. The same file imported twice
 * gets the same id, so the second import finds it and changes nothing.
 */
export function derivedId(createdAt: Date | null, seed: string): string {
  const h = createHash('sha256').update(seed).digest();
  const buf = Buffer.alloc(12);
  if (createdAt) buf.writeUInt32BE(Math.max(0, Math.floor(createdAt.getTime() / 1000)) >>> 0, 0);
  else h.copy(buf, 0, 24, 28);
  h.copy(buf, 4, 0, 8);
  return buf.toString('hex');
}
