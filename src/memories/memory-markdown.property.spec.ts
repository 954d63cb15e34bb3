import fc from 'fast-check';
import type { MemoryDoc } from '../backends/ports/memory.model';
import { MEMORY_SCOPES, MEMORY_TYPES } from '../backends/ports/memory.model';
import { parseMarkdown, toMarkdown } from './memory-markdown';

/**
 * Front matter round-trips whatever the API accepts (issue 9 point 4): titles, tags, agents and
 * projects made of YAML's troublemakers (fences, document ends, quotes, colons, comments,
 * newlines, indicators) and any well-formed unicode. Lone surrogates never get here: input
 * normalisation replaces them before a memory is built.
 */
const NASTY = [
  '---',
  '...',
  '--- ',
  ' ---',
  '"',
  "'",
  ':',
  ': ',
  '#',
  ' #',
  '\n',
  '\r\n',
  '\t',
  '-',
  '? ',
  '!',
  '&',
  '*',
  '|',
  '>',
  '%',
  '@',
  '`',
  '{',
  '}',
  '[',
  ']',
  ',',
  'null',
  'true',
  '~',
  '0x1F',
  '1e3',
  '2024-01-01',
  '\u2028',
  '\u0085',
  '\ufeff',
  '\u00a0',
  'é',
  '😀',
  '中文',
];

const piece = fc.oneof(fc.constantFrom(...NASTY), fc.string({ unit: 'grapheme', maxLength: 6 }), fc.string({ unit: 'binary', maxLength: 4 }));
/** Well-formed strings (no lone surrogates), trimmed and non-empty like the API stores them. */
const text = fc
  .array(piece, { minLength: 1, maxLength: 8 })
  .map((parts) =>
    parts
      .join('')
      .replace(/[\uD800-\uDFFF]/g, (c, i: number, s: string) => (isPaired(s, i) ? c : '\uFFFD'))
      .trim(),
  )
  .filter((s) => s.length > 0);

function isPaired(s: string, i: number): boolean {
  const c = s.charCodeAt(i);
  if (c <= 0xdbff) return i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff;
  return i > 0 && s.charCodeAt(i - 1) >= 0xd800 && s.charCodeAt(i - 1) <= 0xdbff;
}

const memory = fc.record({
  title: fc.option(text, { nil: null }),
  tags: fc.uniqueArray(text, { maxLength: 5 }),
  agent: fc.option(text, { nil: null }),
  project: fc.option(text, { nil: null }),
  content: fc.oneof(text, fc.constantFrom('---\n---\n', '...', '---', '\n---\ntitle: x\n---\n')),
  type: fc.constantFrom(...MEMORY_TYPES),
  scope: fc.constantFrom(...MEMORY_SCOPES),
  version: fc.integer({ min: 1, max: 1_000_000 }),
  authorName: fc.option(text, { nil: null }),
});

describe('memory markdown front matter (property)', () => {
  it('reads back exactly what was written, for thousands of hostile values', () => {
    fc.assert(
      fc.property(memory, (m) => {
        const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6));
        const doc: Omit<MemoryDoc, 'namespace'> = {
          id: '6740a1b2c3d4e5f601234567',
          title: m.title,
          type: m.type,
          scope: m.scope,
          tags: m.tags,
          agent: m.agent,
          project: m.project,
          content: m.content,
          createdAt: at,
          updatedAt: at,
          version: m.version,
          author: m.authorName === null ? null : { kind: 'token', id: '0123456789abcdef', name: m.authorName },
        };
        const back = parseMarkdown(toMarkdown(doc));
        expect(back).toEqual({ ...doc, objectKey: undefined });
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps a title ending in --- (the value that used to end the front matter early)', () => {
    const at = new Date();
    const doc: Omit<MemoryDoc, 'namespace'> = {
      id: '6740a1b2c3d4e5f601234567',
      title: 'Release notes ---',
      type: 'note',
      scope: 'global',
      tags: ['x ---', '...'],
      agent: 'a: b',
      project: '# p',
      content: 'body\n---\nmore',
      createdAt: at,
      updatedAt: at,
      version: 1,
    };
    expect(parseMarkdown(toMarkdown(doc))).toMatchObject({ title: 'Release notes ---', tags: ['x ---', '...'], agent: 'a: b', project: '# p', content: 'body\n---\nmore' });
  });
});
