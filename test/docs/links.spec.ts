/**
 * Every relative link in the README, docs/ and bench/README.md leads somewhere: the file exists,
 * and a `#section` names a heading of that file (GitHub's anchor rule). External links are not
 * followed (everything here works offline).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

function markdownFiles(): string[] {
  const out = ['README.md', 'bench/README.md'];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose(text: string): string {
  return text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens; repeats get -1, -2. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = text.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
  for (const m of body.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = m[1]
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
      .replace(/ /g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return out;
}

function relativeLinks(text: string): string[] {
  const links: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    const target = m[1];
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    links.push(target);
  }
  return links;
}

describe('documentation links', () => {
  const files = markdownFiles();

  it('finds the documents', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'bench/README.md', path.join('docs', 'architecture.md'), path.join('docs', 'decisions', 'README.md')]));
  });

  // Issue 41: the README is a manual and the bench's README a how-to; details go to docs/.
  it.each([
    ['README.md', 200],
    ['bench/README.md', 150],
  ])('%s stays within %i lines', (file, most) => {
    expect(fs.readFileSync(path.join(ROOT, file), 'utf8').trimEnd().split('\n').length).toBeLessThanOrEqual(most);
  });

  it.each(files)('%s: every relative link resolves', (file) => {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    const broken: string[] = [];
    for (const link of relativeLinks(text)) {
      const [target, hash] = link.split('#', 2);
      const resolved = target === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), decodeURI(target));
      if (!resolved.startsWith(ROOT) || !fs.existsSync(resolved)) {
        broken.push(`${link} (no such file)`);
        continue;
      }
      if (hash !== undefined && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(hash)) broken.push(`${link} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });
});
