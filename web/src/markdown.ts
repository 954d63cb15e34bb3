import MarkdownIt from 'markdown-it';

/**
 * Markdown for memory content, safe by construction:
 * - `html: false`: raw HTML in a memory (`<script>`, `<img onerror>`) is escaped to text;
 * - markdown-it's validateLink refuses javascript:, vbscript:, file: and data: links (we also
 *   allow only http(s), mailto and relative links);
 * - links open in a new tab without referrer or opener;
 * - images are not loaded (a memory must not make the browser fetch from another host, e.g. a
 *   tracking pixel): they render as a link to the image instead.
 */
const md = new MarkdownIt({ html: false, linkify: true, typographer: false, breaks: false });

const SAFE_LINK = /^(https?:|mailto:|#|\/(?!\/)|\.{0,2}\/)/i;
const defaultValidate = md.validateLink.bind(md);
md.validateLink = (url: string) => defaultValidate(url) && (SAFE_LINK.test(url.trim()) || !/^[a-z][a-z0-9+.-]*:/i.test(url.trim()));

md.renderer.rules.link_open = (tokens, idx, options, _env, self) => {
  const token = tokens[idx];
  token.attrSet('target', '_blank');
  token.attrSet('rel', 'noopener noreferrer nofollow');
  return self.renderToken(tokens, idx, options);
};

md.renderer.rules.image = (tokens, idx) => {
  const token = tokens[idx];
  const src = token.attrGet('src') ?? '';
  const alt = token.content || 'image';
  const esc = md.utils.escapeHtml;
  return `<a href="${esc(src)}" target="_blank" rel="noopener noreferrer nofollow" class="md-image-link">[image: ${esc(alt)}]</a>`;
};

/** Renders memory markdown to an HTML string that contains no raw HTML from the memory. */
export function renderMarkdown(source: string): string {
  return md.render(source);
}

/** Renders into a container (the one place an HTML string is assigned). */
export function renderMarkdownInto(el: HTMLElement, source: string): void {
  el.innerHTML = renderMarkdown(source);
}
