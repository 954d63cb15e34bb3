import { ApiError, get, query } from '../api';
import { clear, copyButton, errorBox, field, h, spinner } from '../dom';
import { connectorGuides, mcpConfigs, mcpUrl } from '../mcp-configs';
import type { Tab } from '../types';

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
let tokenVar = 'MEMORY_API_TOKEN';

export const setupTab: Tab = {
  id: 'setup',
  label: 'Agent set-up',
  async render(panel) {
    clear(panel);
    const varInput = h('input', { name: 'token_env', value: tokenVar, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off', pattern: VAR_NAME.source });
    const promptBox = h('pre', { class: 'prompt', id: 'skill-prompt', tabindex: '0', 'aria-label': 'Skill prompt' });
    const promptWrap = h('div', { 'aria-live': 'polite' });
    let promptText = '';
    const copy = copyButton(() => promptText, 'Copy prompt', false);
    const baseLine = h('p', { class: 'muted' });
    const mcpWrap = h('div', { class: 'mcp-configs' });

    /** One block per MCP client, with the real URL and the chosen variable name. */
    const renderMcp = (base: string, name: string) => {
      clear(mcpWrap);
      const url = mcpUrl(base);
      mcpWrap.append(
        h(
          'p',
          null,
          'Endpoint: ',
          h('code', { id: 'mcp-url' }, url),
          ' ',
          copyButton(() => url, 'Copy URL'),
        ),
        ...mcpConfigs(base, name).map((c) => {
          const titleId = `mcp-title-${c.id}`;
          return h(
            'section',
            { class: 'mcp-config', 'aria-labelledby': titleId, 'data-client': c.id },
            h(
              'div',
              { class: 'mcp-config-head' },
              h('h4', { id: titleId }, c.client),
              copyButton(() => c.text, 'Copy'),
            ),
            h('p', { class: 'help' }, c.where),
            h('pre', { class: 'prompt', id: `mcp-config-${c.id}`, tabindex: '0', 'aria-label': `${c.client} configuration` }, c.text),
          );
        }),
      );
    };

    /** claude.ai and ChatGPT: OAuth sign-in at the OAuth MCP endpoint, when the service offers it (its resource metadata answers). */
    const connectorsWrap = h('div', { class: 'mcp-configs', 'aria-live': 'polite' });
    const renderConnectors = async () => {
      clear(connectorsWrap);
      let url: string | null = null;
      try {
        const res = await fetch('/.well-known/oauth-protected-resource/mcp/oauth', { headers: { Accept: 'application/json' } });
        if (res.ok) url = ((await res.json()) as { resource?: string }).resource ?? null;
      } catch {
        url = null;
      }
      if (!url) {
        connectorsWrap.append(
          h(
            'p',
            { class: 'help', id: 'connectors-off' },
            'claude.ai, the Claude desktop app and ChatGPT connect only by signing in (OAuth), which is off on this service. To offer it, start Memory Store with MEMSTORE_OAUTH=true and MEMSTORE_PUBLIC_URL set to its public https address (these apps reach it from the internet).',
          ),
        );
        return;
      }
      const oauthUrl = url;
      connectorsWrap.append(
        h(
          'p',
          null,
          'URL to paste: ',
          h('code', { id: 'connector-url' }, oauthUrl),
          ' ',
          copyButton(() => oauthUrl, 'Copy connector URL'),
        ),
        ...connectorGuides(oauthUrl).map((c) => {
          const titleId = `connector-title-${c.id}`;
          return h(
            'section',
            { class: 'mcp-config', 'aria-labelledby': titleId, 'data-client': c.id },
            h('h4', { id: titleId }, c.client),
            h('ol', { class: 'steps' }, ...c.steps.map((s) => h('li', null, s))),
          );
        }),
      );
    };

    /** The name whose prompt and configurations are shown or on their way (null: none, or an invalid name). */
    let requested: string | null = null;
    const load = async () => {
      const name = varInput.value.trim();
      requested = VAR_NAME.test(name) ? name : null;
      if (requested === null) {
        const message = 'Use a variable name made of letters, digits and underscores, not starting with a digit.';
        clear(promptWrap);
        promptWrap.appendChild(errorBox(message));
        clear(mcpWrap);
        mcpWrap.appendChild(errorBox(message));
        return;
      }
      tokenVar = name;
      clear(promptWrap);
      promptWrap.appendChild(spinner());
      try {
        const r = await get<{ prompt: string; base_url: string; token_env: string }>(`/api/skill-prompt${query({ format: 'json', token_env: name })}`);
        if (requested !== name) return; // an older name's answer, arriving late: the newer one renders
        promptText = r.prompt;
        promptBox.textContent = r.prompt;
        renderMcp(r.base_url, r.token_env);
        baseLine.textContent = `Base URL in the prompt: ${r.base_url}. The agent reads its token from $${r.token_env}.`;
        clear(promptWrap);
        promptWrap.append(baseLine, promptBox);
      } catch (err) {
        if (requested !== name) return;
        requested = null; // typing the name again retries
        clear(promptWrap);
        promptWrap.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
      }
    };
    let timer: ReturnType<typeof setTimeout> | undefined;
    varInput.addEventListener('input', () => {
      clearTimeout(timer);
      // The same name again (retyped, or filled with what it held): nothing to redraw, and a redraw
      // would replace the Copy buttons under the user's pointer.
      if (varInput.value.trim() === requested) return;
      timer = setTimeout(() => void load(), 300);
    });

    panel.append(
      h('div', { class: 'panel-head' }, h('h2', null, 'Agent set-up')),
      h(
        'ol',
        { class: 'steps' },
        h('li', null, 'Create a token in ', h('a', { href: '#tokens' }, 'API tokens'), ' and store it in the agent’s environment.'),
        h(
          'li',
          null,
          'Connect the agent over MCP with one of the configurations below (nothing to install for Claude Code, Cursor, VS Code or Codex), or give it the prompt (or the skill pack): it teaches the model every memory operation with working examples.',
        ),
      ),
      h(
        'div',
        { class: 'card' },
        h(
          'div',
          { class: 'setup-controls' },
          field('Token variable name', varInput, 'The environment variable holding the token on the agent’s machine: the configurations and the prompt below read it from there.'),
        ),
      ),
      h(
        'div',
        { class: 'card', id: 'mcp-setup' },
        h('h3', null, 'Connect over MCP'),
        h('p', { class: 'muted' }, 'The same token works at the MCP endpoint, where the agent sees only the tools its scopes allow. No configuration below contains the token itself.'),
        mcpWrap,
      ),
      h(
        'div',
        { class: 'card', id: 'connector-setup' },
        h('h3', null, 'Connect claude.ai, Claude desktop or ChatGPT'),
        h(
          'p',
          { class: 'muted' },
          'These apps add Memory Store as a connector with its URL and one sign-in: no token to copy. The URL is not the /mcp above (tools configured with a header keep using that one).',
        ),
        connectorsWrap,
      ),
      h(
        'div',
        { class: 'card' },
        h(
          'div',
          { class: 'mcp-config-head' },
          h('h3', null, 'Skill prompt'),
          h('div', { class: 'actions' }, copy, h('a', { class: 'btn btn-primary', href: '/api/skill-pack.zip', download: 'memory-store-skill.zip' }, 'Download skill pack (.zip)')),
        ),
        promptWrap,
      ),
      h(
        'div',
        { class: 'card' },
        h('h3', null, 'API reference'),
        h(
          'ul',
          { class: 'link-list' },
          h('li', null, h('a', { href: '/docs', target: '_blank', rel: 'noopener' }, 'Swagger UI'), h('span', { class: 'muted' }, ' (/docs): try every route in the browser')),
          h('li', null, h('a', { href: '/redoc', target: '_blank', rel: 'noopener' }, 'ReDoc'), h('span', { class: 'muted' }, ' (/redoc): readable reference')),
          h('li', null, h('a', { href: '/openapi.json', target: '_blank', rel: 'noopener' }, 'OpenAPI 3 document'), h('span', { class: 'muted' }, ' (/openapi.json): for client generators')),
          h('li', null, h('a', { href: '/api/guide', target: '_blank', rel: 'noopener' }, 'Usage guide'), h('span', { class: 'muted' }, ' (/api/guide)')),
        ),
      ),
    );
    await Promise.all([load(), renderConnectors()]);
  },
};
