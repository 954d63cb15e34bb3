import { ApiError, get, post } from '../api';
import { badge, beginRender, clear, errorBox, h, spinner } from '../dom';
import type { BackendStatus, ConfigResponse, EmbeddingStatus, Stats, StatusResponse, Tab, TestResult } from '../types';

const BACKEND_TITLES = { docdb: 'Document database', objstore: 'Object store' } as const;

function backendCard(key: 'docdb' | 'objstore', s: BackendStatus | undefined): HTMLElement {
  const title = BACKEND_TITLES[key];
  if (!s) return h('article', { class: 'card' }, h('h3', null, title), errorBox('No status reported.'));
  return h(
    'article',
    { class: `card backend ${s.ok ? 'is-ok' : 'is-bad'}`, 'aria-label': `${title} status` },
    h('div', { class: 'card-head' }, h('h3', null, title), badge(s.ok ? 'Healthy' : 'Unavailable', s.ok ? 'ok' : 'bad')),
    h('p', { class: 'backend-name' }, h('span', { class: 'muted' }, 'Active backend: '), h('strong', null, s.backend)),
    s.detail ? h('p', { class: `detail ${s.ok ? 'muted' : 'error-text'}` }, s.detail) : null,
  );
}

/** Semantic search: the provider, and the embedding queue's progress (a bar while re-embedding). */
function embeddingsCard(e: EmbeddingStatus | undefined): HTMLElement | null {
  if (!e) return null;
  const keywordOnly = e.state === 'keyword-only';
  const label = keywordOnly ? 'Keyword-only' : e.state === 'ready' ? 'Ready' : e.state === 're-embedding' ? 'Re-embedding' : 'Embedding';
  const pct = e.progress === null ? null : Math.round(e.progress * 100);
  return h(
    'article',
    { class: `card ${keywordOnly ? 'is-bad' : 'is-ok'}`, 'aria-label': 'Semantic search status' },
    h('div', { class: 'card-head' }, h('h3', null, 'Semantic search'), badge(label, keywordOnly ? 'bad' : 'ok')),
    keywordOnly
      ? h('p', { class: 'detail error-text' }, `Search is keyword-only: ${e.reason ?? 'no embedding model'}.`)
      : h('p', null, h('span', { class: 'muted' }, 'Model: '), h('strong', null, `${e.provider} · ${e.model ?? '?'}`), h('span', { class: 'muted' }, ` (${e.dimensions ?? '?'} dimensions)`)),
    keywordOnly
      ? null
      : h(
          'p',
          null,
          h('span', { class: 'muted' }, 'Embedded: '),
          `${e.embedded ?? '?'} memories, ${e.pending ?? '?'} waiting`,
          e.failing ? h('span', { class: 'error-text' }, ` (${e.failing} retrying: ${e.last_error ?? 'error'})`) : null,
        ),
    !keywordOnly && pct !== null && pct < 100 ? h('progress', { max: '100', value: String(pct), 'aria-label': `Embedding progress ${pct}%` }, `${pct}%`) : null,
  );
}

function countList(title: string, counts: Record<string, number> | undefined): HTMLElement {
  const entries = Object.entries(counts ?? {}).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  return h(
    'div',
    { class: 'counts' },
    h('h4', null, title),
    entries.length === 0
      ? h('p', { class: 'muted' }, 'None yet')
      : h(
          'dl',
          null,
          entries.flatMap(([k, v]) => [h('dt', { class: v === 0 ? 'muted' : '' }, k), h('dd', { class: v === 0 ? 'muted' : '' }, String(v))]),
        ),
  );
}

function testResults(results: Record<string, TestResult>): HTMLElement {
  return h(
    'ul',
    { class: 'test-results' },
    (['docdb', 'objstore'] as const)
      .filter((k) => results[k])
      .map((k) => {
        const r = results[k];
        return h(
          'li',
          { class: r.ok ? 'is-ok' : 'is-bad' },
          badge(r.ok ? 'Passed' : 'Failed', r.ok ? 'ok' : 'bad'),
          h('strong', null, ` ${BACKEND_TITLES[k]}`),
          r.backend ? h('span', { class: 'muted' }, ` (${r.backend})`) : null,
          typeof r.latency_ms === 'number' ? h('span', { class: 'muted' }, ` · ${Math.round(r.latency_ms)} ms`) : null,
          r.error || r.detail ? h('div', { class: r.ok ? 'muted' : 'error-text' }, r.error ?? r.detail ?? '') : null,
        );
      }),
  );
}

export const statusTab: Tab = {
  id: 'status',
  label: 'Status',
  async render(panel) {
    const stale = beginRender(panel);
    clear(panel);
    panel.appendChild(spinner('Checking the backends…'));
    const [status, config, stats] = await Promise.allSettled([get<StatusResponse>('/api/status'), get<ConfigResponse>('/api/config'), get<{ stats: Stats }>('/api/stats')]);
    if (stale()) return;
    clear(panel);

    const results = h('div', { class: 'test-area', 'aria-live': 'polite' });
    const testBtn = h('button', { type: 'button', class: 'btn btn-primary' }, 'Test connections');
    testBtn.addEventListener('click', async () => {
      testBtn.disabled = true;
      testBtn.textContent = 'Testing…';
      clear(results);
      results.appendChild(spinner('Writing, reading and deleting a probe on each backend…'));
      try {
        const r = await post<{ results: Record<string, TestResult> }>('/api/test', { target: 'all' });
        clear(results);
        results.appendChild(testResults(r.results));
      } catch (err) {
        clear(results);
        results.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
      } finally {
        testBtn.disabled = false;
        testBtn.textContent = 'Test connections';
      }
    });
    const refresh = h('button', { type: 'button', class: 'btn btn-plain' }, 'Refresh');
    refresh.addEventListener('click', () => void statusTab.render(panel));

    panel.appendChild(h('div', { class: 'panel-head' }, h('h2', null, 'Status'), h('div', { class: 'actions' }, refresh, testBtn)));

    if (status.status === 'fulfilled') {
      const s = status.value;
      panel.appendChild(h('div', { class: 'grid-2' }, backendCard('docdb', s.docdb), backendCard('objstore', s.objstore)));
      const emb = embeddingsCard(s.embeddings);
      if (emb) panel.appendChild(emb);
      panel.appendChild(
        h(
          'p',
          { class: 'public-url' },
          h('span', { class: 'muted' }, 'Public URL: '),
          s.public_url ? h('code', null, s.public_url) : h('span', null, 'derived from each request (set MEMSTORE_PUBLIC_URL to fix it)'),
        ),
      );
    } else {
      panel.appendChild(errorBox(`Status unavailable: ${(status.reason as Error).message}`));
    }
    panel.appendChild(results);

    if (config.status === 'fulfilled') {
      const c = config.value;
      panel.appendChild(
        h(
          'div',
          { class: `alert ${c.complete ? 'alert-ok' : 'alert-warn'}` },
          h('strong', null, c.complete ? 'Configuration complete. ' : 'Configuration incomplete. '),
          c.status ?? '',
          !c.complete && c.missing?.length ? h('span', null, ' Missing: ', c.missing.map((m, i) => [i ? ', ' : '', h('code', null, m)]).flat()) : null,
        ),
      );
    }

    const countsCard = h('article', { class: 'card', 'aria-label': 'Memory counts' });
    if (stats.status === 'fulfilled') {
      const st = stats.value.stats;
      countsCard.append(
        h('div', { class: 'card-head' }, h('h3', null, 'Memories'), h('span', { class: 'big-number', 'aria-label': `${st.total} memories in total` }, String(st.total))),
        h(
          'div',
          { class: 'counts-grid' },
          countList('By type', st.by_type),
          countList('By scope', st.by_scope),
          countList('By project', st.by_project),
          st.by_agent ? countList('By agent', st.by_agent) : null,
        ),
      );
    } else {
      countsCard.append(h('h3', null, 'Memories'), errorBox(`Counts unavailable: ${(stats.reason as Error).message}`));
    }
    panel.appendChild(countsCard);
  },
};
