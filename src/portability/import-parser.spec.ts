import { toMarkdown } from '../memories/memory-markdown';
import { derivedId, ImportInvalid, memoryFromJson, memoryFromMarkdown } from './import-parser';

const NOW = new Date('2026-01-01T00:00:00Z');
const MTIME = new Date('2025-05-06T07:08:09Z');

describe('import parser', () => {
  it('reads our own file back exactly (id, timestamps, every field)', () => {
    const doc = {
      id: '0123456789abcdef01234567',
      title: '---',
      type: 'fact' as const,
      scope: 'project' as const,
      tags: ['a: b', '"q"'],
      agent: null,
      project: 'p',
      content: '---\nnot: front matter\n---\n',
      createdAt: new Date('2024-01-01T00:00:00.001Z'),
      updatedAt: new Date('2024-01-02T00:00:00.002Z'),
      version: 1,
      author: null,
    };
    expect(memoryFromMarkdown('memories/x.md', toMarkdown(doc), MTIME, NOW)).toEqual({ doc, exact: true });
  });

  it('plain notes: title from the first heading, else the file name; #tags but not headings, numbers or code', () => {
    const a = memoryFromMarkdown('vault/Daily note.md', 'Text with #alpha and #beta/gamma, issue #12, `#code`\n```\n#fenced\n```\n', MTIME, NOW);
    expect(a.doc).toMatchObject({ title: 'Daily note', tags: ['alpha', 'beta/gamma'], type: 'note', scope: 'global', createdAt: MTIME, updatedAt: MTIME });
    expect(a.exact).toBe(false);
    const b = memoryFromMarkdown('x.md', 'intro\n## Real title ##\nbody #tag', null, NOW);
    expect(b.doc).toMatchObject({ title: 'Real title', tags: ['tag'], createdAt: NOW });
  });

  it('the same note always gets the same id; another note another', () => {
    const one = memoryFromMarkdown('n.md', 'same', MTIME, NOW).doc.id;
    expect(memoryFromMarkdown('n.md', 'same', MTIME, new Date()).doc.id).toBe(one);
    expect(memoryFromMarkdown('n.md', 'other', MTIME, NOW).doc.id).not.toBe(one);
    expect(one.slice(0, 8)).toBe(
      Math.floor(MTIME.getTime() / 1000)
        .toString(16)
        .padStart(8, '0'),
    ); // time-ordered
    expect(derivedId(null, 'x')).toMatch(/^[0-9a-f]{24}$/);
  });

  it('foreign front matter (Obsidian) is used where it fits and not kept in the content', () => {
    const c = memoryFromMarkdown('o.md', '---\ntags: [x, "#y"]\ncreated: 2023-03-03\naliases: [z]\n---\n# Heading\nbody', MTIME, NOW);
    expect(c.doc).toMatchObject({ title: 'Heading', tags: ['x', 'y'], content: '# Heading\nbody', createdAt: new Date('2023-03-03') });
  });

  it('broken front matter is a reason, not a crash', () => {
    expect(() => memoryFromMarkdown('b.md', '---\ntitle: "open\n---\nx', null, NOW)).toThrow(/not valid YAML/);
    expect(() => memoryFromMarkdown('b.md', '---\ntitle: x\nno end', null, NOW)).toThrow(/not closed/);
    expect(() => memoryFromMarkdown('b.md', '---\n- a list\n---\nx', null, NOW)).toThrow(/not a mapping/);
    expect(() => memoryFromMarkdown('b.md', '---\nid: 0123456789abcdef01234567\ntype: x\n---\n', null, NOW)).toThrow(ImportInvalid);
  });

  it('JSONL objects: our fields, defaults, and clear reasons', () => {
    expect(memoryFromJson({ content: 'c' }, NOW, 'f:1')).toMatchObject({ doc: { type: 'note', scope: 'global', tags: [], createdAt: NOW }, exact: false });
    const full = memoryFromJson({ namespace: 'default', id: '0123456789abcdef01234567', content: 'c', created_at: '2024-01-01T00:00:00Z', updated_at: '2024-01-01T00:00:00Z' }, NOW, 'f:1');
    expect(full).toMatchObject({ doc: { id: '0123456789abcdef01234567' }, exact: true });
    expect(() => memoryFromJson([], NOW, 'f')).toThrow(/not a JSON object/);
    expect(() => memoryFromJson({ content: 1 }, NOW, 'f')).toThrow(/content/);
    expect(() => memoryFromJson({ content: 'c', tags: 'x' }, NOW, 'f')).toThrow(/tags/);
    expect(() => memoryFromJson({ content: 'c', id: 'nope' }, NOW, 'f')).toThrow(/id/);
    expect(() => memoryFromJson({ content: 'c', created_at: 'yesterday' }, NOW, 'f')).toThrow(/created_at/);
  });
});
