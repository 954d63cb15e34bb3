/**
 * The admin page's markdown renderer (web/src/markdown.ts), checked without a browser: memory
 * content is attacker-controlled, and this is the one HTML string the page assigns.
 */
import { renderMarkdown } from '../../web/src/markdown';

describe('admin page markdown renderer', () => {
  it('renders ordinary markdown', () => {
    const html = renderMarkdown('# Title\n\nSome **bold** and `code`.\n\n- a\n- b');
    expect(html).toContain('<h1>Title</h1>');
    expect(html).toContain('<strong>bold</strong>');
    expect(html).toContain('<code>code</code>');
    expect(html).toContain('<li>a</li>');
  });

  it.each([
    ['<script>alert(1)</script>', '&lt;script&gt;alert(1)&lt;/script&gt;'],
    ['<img src=x onerror=alert(1)>', '&lt;img src=x onerror=alert(1)&gt;'],
    ['<svg onload=alert(1)>', '&lt;svg onload=alert(1)&gt;'],
    ['<a href="javascript:alert(1)">x</a>', '&lt;a href=&quot;javascript:alert(1)&quot;&gt;x&lt;/a&gt;'],
  ])('escapes raw HTML %s', (input, escaped) => {
    const html = renderMarkdown(input);
    expect(html).toContain(escaped);
    expect(html).not.toMatch(/<(script|img|svg|iframe)\b/i);
  });

  it.each(['javascript:alert(1)', 'JaVaScRiPt:alert(1)', ' javascript:alert(1)', 'vbscript:msgbox(1)', 'data:text/html;base64,PHNjcmlwdD4=', 'file:///etc/passwd'])(
    'does not make a link of [x](%s)',
    (url) => {
      expect(renderMarkdown(`[x](${url})`)).not.toContain('<a ');
    },
  );

  it('opens links in a new tab without opener or referrer', () => {
    const html = renderMarkdown('[docs](https://example.org/a) and https://example.com');
    expect(html).toContain('<a href="https://example.org/a" target="_blank" rel="noopener noreferrer nofollow">docs</a>');
    expect(html).toContain('href="https://example.com" target="_blank" rel="noopener noreferrer nofollow"');
  });

  it('never loads an image: it becomes a link to it', () => {
    const html = renderMarkdown('![pixel "x"](http://203.0.113.9/p.png)');
    expect(html).not.toContain('<img');
    expect(html).toContain('<a href="http://203.0.113.9/p.png" target="_blank" rel="noopener noreferrer nofollow" class="md-image-link">[image: pixel &quot;x&quot;]</a>');
  });
});
