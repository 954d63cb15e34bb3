import { diffLines } from 'diff';
import { ApiError, api, query } from '../api';
import { badge, clear, confirmDialog, errorBox, field, h, spinner, timeEl, toast } from '../dom';
import { renderMarkdownInto } from '../markdown';
import { MEMORY_SCOPES, MEMORY_TYPES, type Memory, type MemoryList, type MemoryRow, type MemoryVersion, type MemoryVersionList, type NamespaceList, type Tab } from '../types';

const PAGE_SIZE = 20;

interface Filters {
  q: string;
  type: string;
  scope: string;
  agent: string;
  project: string;
  tag: string;
  page: number;
  /** The namespace the browser works in ('' = default, where the admin works without a choice). */
  namespace: string;
}

const state: Filters = { q: '', type: '', scope: '', agent: '', project: '', tag: '', page: 1, namespace: '' };

/** Every request of the memory browser names the chosen namespace (X-Memory-Namespace). */
function inNamespace(headers: Record<string, string> = {}): Record<string, string> {
  return state.namespace ? { ...headers, 'X-Memory-Namespace': state.namespace } : headers;
}
const get = <T>(path: string) => api<T>('GET', path, undefined, { headers: inNamespace() });
const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body, { headers: inNamespace() });
const patch = <T>(path: string, body: unknown, headers?: Record<string, string>) => api<T>('PATCH', path, body, { headers: inNamespace(headers) });
const del = <T>(path: string) => api<T>('DELETE', path, undefined, { headers: inNamespace() });

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

function activeFilters(): number {
  return [state.type, state.scope, state.agent, state.project, state.tag].filter(Boolean).length;
}

function describe(err: unknown): string {
  return err instanceof ApiError ? err.describe() : String(err);
}

function tags(list: string[]): HTMLElement | null {
  return list.length
    ? h(
        'ul',
        { class: 'chips' },
        list.map((t) => h('li', { class: 'chip' }, `#${t}`)),
      )
    : null;
}

function meta(m: { type: string; scope: string; agent: string | null; project: string | null }): HTMLElement {
  return h(
    'div',
    { class: 'mem-meta' },
    badge(m.type, 'info'),
    badge(m.scope, 'muted'),
    m.project ? h('span', { class: 'meta-item' }, h('span', { class: 'muted' }, 'project '), m.project) : null,
    m.agent ? h('span', { class: 'meta-item' }, h('span', { class: 'muted' }, 'agent '), m.agent) : null,
  );
}

/** A memory as text for the history diff: the fields a person edits, then the content. */
function asText(m: Memory): string {
  const lines = [`title: ${m.title ?? ''}`, `type: ${m.type}`, `scope: ${m.scope}`, `tags: ${m.tags.join(', ')}`, `agent: ${m.agent ?? ''}`, `project: ${m.project ?? ''}`];
  return `${lines.join('\n')}\n\n${m.content}${m.content.endsWith('\n') ? '' : '\n'}`;
}

/** A line diff from `older` to `current` (the diff library), one element per line, marked added/removed. */
function diffView(older: Memory, current: Memory): HTMLElement {
  const out = h('pre', { class: 'diff', 'aria-label': `Changes from version ${older.version} to the current version ${current.version}` });
  for (const part of diffLines(asText(older), asText(current))) {
    const cls = part.added ? 'diff-line diff-add' : part.removed ? 'diff-line diff-del' : 'diff-line';
    const sign = part.added ? '+ ' : part.removed ? '- ' : '  ';
    for (const line of part.value.replace(/\n$/, '').split('\n')) out.appendChild(h('span', { class: cls }, sign + line));
  }
  return out;
}

function authorText(v: MemoryVersion): string {
  if (!v.author) return 'unknown author';
  return v.author.kind === 'admin' ? `admin (${v.author.id})` : `token ${v.author.name ? `“${v.author.name}” ` : ''}(${v.author.id})`;
}

/** The ranking's named signals (explain.signals) as the page says them. */
const SIGNAL_LABELS: Record<string, string> = {
  no_close_meaning: 'nothing stored is close in meaning',
  date_match: 'the time the question names',
  comparison_side: 'one side of the comparison',
  same_session: 'placed after a turn of its session',
  long_memory: 'a long memory: its words weigh less',
};

/** Search rows: the relevance score and a short why (explain: matched words, meaning, conversation context). */
function whyMatched(row: MemoryRow): HTMLElement | null {
  if (row.score === undefined) return null;
  const e = row.explain;
  const why: string[] = [];
  if (e) {
    if (e.matched_words.length) why.push(`words ${e.matched_words.join(', ')}`);
    if (e.matched_phrases.length) why.push(`phrase “${e.matched_phrases.join('”, “')}”`);
    if (e.cosine !== null && e.semantic > 0) why.push(`meaning ${e.semantic.toFixed(2)}`);
    if (e.cosine === null) why.push('not embedded yet');
    if (e.neighbour_boost > 0) why.push(`conversation context +${e.neighbour_boost.toFixed(2)}`);
    for (const [name, v] of Object.entries(e.signals)) why.push(`${SIGNAL_LABELS[name] ?? name.replace(/_/g, ' ')} ${v >= 0 ? '+' : ''}${v.toFixed(2)}`);
  } else if (row.matched?.length) why.push(row.matched.map((m) => (m === 'semantic' ? 'meaning' : 'keywords')).join(' and '));
  const title = e ? `Relevance 0..1; rows below ${e.floor} are not shown` : 'Relevance: higher is better';
  return h(
    'p',
    { class: 'mem-why' },
    h('span', { class: 'mem-score', title }, h('span', { class: 'muted' }, 'score '), String(Number(row.score.toPrecision(3)))),
    why.length ? h('span', { class: 'meta-item' }, h('span', { class: 'muted' }, e ? 'why ' : 'matched by '), why.join(' · ')) : null,
  );
}

function select(name: string, label: string, values: readonly string[], value: string): HTMLSelectElement {
  const el = h(
    'select',
    { name },
    h('option', { value: '' }, `Any ${label}`),
    values.map((v) => h('option', { value: v }, v)),
  );
  el.value = value;
  return el;
}

export const memoriesTab: Tab = {
  id: 'memories',
  label: 'Memories',
  async render(panel) {
    clear(panel);
    const listView = h('div', { class: 'mem-list-view' });
    const detailView = h('div', { class: 'mem-detail-view', hidden: true });
    const results = h('div', { class: 'mem-results', 'aria-live': 'polite', 'aria-busy': 'false' });

    const q = h('input', { type: 'search', name: 'q', value: state.q, placeholder: 'Words, "a phrase", -exclude', autocomplete: 'off' });
    const type = select('type', 'type', MEMORY_TYPES, state.type);
    const scope = select('scope', 'scope', MEMORY_SCOPES, state.scope);
    const agent = h('input', { name: 'agent', value: state.agent, autocomplete: 'off', spellcheck: 'false' });
    const project = h('input', { name: 'project', value: state.project, autocomplete: 'off', spellcheck: 'false' });
    const tag = h('input', { name: 'tag', value: state.tag, autocomplete: 'off', spellcheck: 'false', placeholder: 'tag, another' });
    const summary = h('summary');
    const showActive = () => (summary.textContent = activeFilters() ? `Filters (${activeFilters()} active)` : 'Filters');
    showActive();
    // A floor lowered from an empty answer ("Show matches down to …"); a new search starts at the default again.
    let minScore: number | undefined;
    const form = h(
      'form',
      { class: 'card search-form', role: 'search', 'aria-label': 'Search memories' },
      h('div', { class: 'search-row' }, field('Search', q), h('button', { type: 'submit', class: 'btn btn-primary' }, 'Search')),
      h(
        'details',
        { class: 'filters', open: !window.matchMedia('(max-width: 720px)').matches || activeFilters() > 0 },
        summary,
        h('div', { class: 'filter-grid' }, field('Type', type), field('Scope', scope), field('Agent', agent), field('Project', project), field('Tags', tag, 'All must match; separate with commas.')),
      ),
    );
    const clearBtn = h('button', { type: 'button', class: 'btn btn-plain btn-small' }, 'Reset search and filters');
    clearBtn.addEventListener('click', () => {
      [q, agent, project, tag].forEach((i) => (i.value = ''));
      type.value = '';
      scope.value = '';
      form.requestSubmit();
    });
    form.appendChild(h('div', { class: 'form-actions' }, clearBtn));
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      minScore = undefined;
      Object.assign(state, { q: q.value.trim(), type: type.value, scope: scope.value, agent: agent.value.trim(), project: project.value.trim(), tag: tag.value.trim(), page: 1 });
      showActive();
      void load();
    });

    let seq = 0;
    const load = async () => {
      // Only the latest request may draw: a slow earlier answer must not replace a newer one.
      const mine = ++seq;
      results.setAttribute('aria-busy', 'true');
      clear(results);
      results.appendChild(spinner('Searching…'));
      try {
        const r = await get<MemoryList>(
          `/api/memories${query({
            q: state.q,
            type: state.type,
            scope: state.scope,
            agent: state.agent,
            project: state.project,
            tag: state.tag
              .split(',')
              .map((t) => t.trim())
              .filter(Boolean),
            limit: PAGE_SIZE,
            page: state.page,
            explain: state.q ? 'true' : undefined,
            min_score: state.q && minScore !== undefined ? String(minScore) : undefined,
          })}`,
        );
        if (mine !== seq) return;
        clear(results);
        renderResults(r);
      } catch (err) {
        if (mine !== seq) return;
        clear(results);
        results.appendChild(errorBox(describe(err)));
      } finally {
        if (mine === seq) results.setAttribute('aria-busy', 'false');
      }
    };

    const renderResults = (r: MemoryList) => {
      const summary =
        r.mode === 'search'
          ? r.total === 0
            ? 'No matches'
            : `${r.total} ${r.total === 1 ? 'match' : 'matches'}, best first`
          : r.total === 0
            ? 'No memories'
            : `${r.total} ${r.total === 1 ? 'memory' : 'memories'}, newest first`;
      const ranking = r.mode === 'search' && r.total > 0 && r.search_mode ? ` · ${r.search_mode} ranking${minScore !== undefined ? ` · floor lowered to ${minScore}` : ''}` : '';
      results.appendChild(h('p', { class: 'result-summary' }, summary + ranking));
      const below = r.mode === 'search' ? r.best_below_floor : null;
      if (!r.rows.length && below) {
        // Nothing cleared the floor, but something came close (decision 0171): say how close, and offer it.
        const lower = h('button', { type: 'button', class: 'btn btn-plain btn-small' }, `Show matches down to ${below}`);
        lower.addEventListener('click', () => {
          minScore = below;
          state.page = 1;
          void load();
        });
        results.appendChild(h('p', { class: 'empty' }, `Nothing cleared the relevance floor; the closest memory scored ${below}. `, lower));
        return;
      }
      if (!r.rows.length) {
        results.appendChild(
          h(
            'p',
            { class: 'empty' },
            state.q ? 'Nothing matches this search.' : activeFilters() ? 'Nothing matches these filters.' : 'No memories yet. Agents create them through the API; New memory writes one here.',
          ),
        );
        return;
      }
      results.appendChild(
        h(
          'ol',
          { class: 'mem-list' },
          r.rows.map((row) => rowItem(row)),
        ),
      );
      if (r.total_pages > 1) {
        const prev = h('button', { type: 'button', class: 'btn btn-plain', disabled: !r.has_prev }, '← Previous');
        const next = h('button', { type: 'button', class: 'btn btn-plain', disabled: !r.has_next }, 'Next →');
        prev.addEventListener('click', () => {
          state.page = Math.max(1, state.page - 1);
          void load();
        });
        next.addEventListener('click', () => {
          state.page += 1;
          void load();
        });
        results.appendChild(h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, h('span', null, `Page ${r.page ?? state.page} of ${r.total_pages}`), next));
      }
    };

    const rowItem = (row: MemoryRow): HTMLElement => {
      const open = h('button', { type: 'button', class: 'link-button mem-title' }, row.title || h('span', { class: 'muted' }, '(untitled)'));
      open.addEventListener('click', () => void openMemory(row.id));
      return h(
        'li',
        { class: 'mem-row', 'data-memory-id': row.id },
        h('div', { class: 'mem-row-head' }, open, h('span', { class: 'mem-date' }, timeEl(row.created_at))),
        meta(row),
        whyMatched(row),
        row.snippet ? h('p', { class: 'snippet' }, row.snippet) : null,
        tags(row.tags),
      );
    };

    const showList = () => {
      if (location.hash.startsWith('#memories/')) history.replaceState(null, '', '#memories');
      detailView.hidden = true;
      listView.hidden = false;
      clear(detailView);
    };

    const openMemory = async (id: string) => {
      // A link to the open memory (#memories/<id>) can be bookmarked or shared with another admin.
      history.replaceState(null, '', `#memories/${encodeURIComponent(id)}`);
      listView.hidden = true;
      detailView.hidden = false;
      clear(detailView);
      detailView.appendChild(spinner('Opening…'));
      const back = h('button', { type: 'button', class: 'btn btn-plain' }, '← Back to results');
      back.addEventListener('click', () => {
        showList();
        (listView.querySelector(`[data-memory-id="${CSS.escape(id)}"] .mem-title`) as HTMLElement | null)?.focus();
      });
      try {
        const { memory: m } = await get<{ memory: Memory }>(`/api/memories/${encodeURIComponent(id)}`);
        clear(detailView);
        const body = h('div', { class: 'markdown' });
        renderMarkdownInto(body, m.content);
        const source = h('pre', { class: 'source', hidden: true }, m.content);
        const toggle = h('button', { type: 'button', class: 'btn btn-plain btn-small', 'aria-pressed': 'false' }, 'Show markdown source');
        toggle.addEventListener('click', () => {
          const showSource = source.hidden;
          source.hidden = !showSource;
          body.hidden = showSource;
          toggle.setAttribute('aria-pressed', String(showSource));
          toggle.textContent = showSource ? 'Show rendered' : 'Show markdown source';
        });
        const download = h(
          'a',
          { class: 'btn btn-plain btn-small', href: `/api/memories/${encodeURIComponent(m.id)}/download${query({ namespace: state.namespace })}`, download: `${m.id}.md` },
          'Download .md',
        );
        const edit = h('button', { type: 'button', class: 'btn btn-small' }, 'Edit');
        edit.addEventListener('click', () => openEditor(m));
        const remove = h('button', { type: 'button', class: 'btn btn-danger btn-small' }, 'Delete');
        remove.addEventListener('click', async () => {
          if (!(await confirmDialog('Delete memory?', `“${m.title || m.id}” will be removed from the index and the object store. This cannot be undone.`, 'Delete'))) return;
          try {
            await del(`/api/memories/${encodeURIComponent(m.id)}`);
            toast('Memory deleted');
            showList();
            await load();
          } catch (err) {
            toast(describe(err), 'error');
          }
        });
        const title = h('h2', { tabindex: '-1', class: 'mem-detail-title' }, m.title || '(untitled)');
        detailView.append(
          h('div', { class: 'detail-toolbar' }, back, h('div', { class: 'actions' }, toggle, edit, download, remove)),
          h(
            'article',
            { class: 'card mem-detail', 'aria-labelledby': 'mem-detail-title' },
            title,
            meta(m),
            tags(m.tags),
            h(
              'dl',
              { class: 'mem-dates' },
              h('dt', null, 'Created'),
              h('dd', null, timeEl(m.created_at)),
              h('dt', null, 'Updated'),
              h('dd', null, timeEl(m.updated_at)),
              h('dt', null, 'Id'),
              h('dd', null, h('code', null, m.id)),
            ),
            body,
            source,
          ),
        );
        title.id = 'mem-detail-title';
        detailView.appendChild(historyCard(m));
        title.focus();
      } catch (err) {
        clear(detailView);
        detailView.append(h('div', { class: 'detail-toolbar' }, back), errorBox(describe(err)));
      }
    };

    /**
     * The editor: a new memory (m = null) or a change to `m`. Save goes through the agents' API
     * (POST, or PATCH with If-Match of the version opened here). On 412 the admin's text stays
     * in the form and the current version is shown beside it, to reload or to save over.
     */
    const openEditor = (m: Memory | null) => {
      listView.hidden = true;
      detailView.hidden = false;
      clear(detailView);
      let base = m?.version ?? 0;
      const title = h('input', { name: 'title', value: m?.title ?? '', maxlength: '300', autocomplete: 'off' });
      const content = h('textarea', { name: 'content', rows: '14', required: true, spellcheck: 'true' });
      content.value = m?.content ?? '';
      const type = h(
        'select',
        { name: 'type' },
        MEMORY_TYPES.map((v) => h('option', { value: v }, v)),
      );
      type.value = m?.type ?? 'note';
      const scope = h(
        'select',
        { name: 'scope' },
        MEMORY_SCOPES.map((v) => h('option', { value: v }, v)),
      );
      scope.value = m?.scope ?? 'global';
      const tagsIn = h('input', { name: 'tags', value: m?.tags.join(', ') ?? '', autocomplete: 'off', spellcheck: 'false' });
      const projectIn = h('input', { name: 'project', value: m?.project ?? '', maxlength: '200', autocomplete: 'off', spellcheck: 'false' });
      const preview = h('div', { class: 'markdown editor-preview', 'aria-live': 'off' });
      const showPreview = () => renderMarkdownInto(preview, content.value);
      content.addEventListener('input', showPreview);
      showPreview();
      const problem = h('div', { class: 'editor-problem' });
      const save = h('button', { type: 'submit', class: 'btn btn-primary' }, m ? 'Save changes' : 'Create memory');
      const cancel = h('button', { type: 'button', class: 'btn btn-plain' }, 'Cancel');
      const snapshot = () => [title.value, content.value, type.value, scope.value, tagsIn.value, projectIn.value].join('\u0000');
      let opened = '';
      cancel.addEventListener('click', async () => {
        // Leaving drops the typed text: ask first when there is some.
        if (snapshot() !== opened && !(await confirmDialog('Discard your changes?', 'What you typed in the editor will be lost.', 'Discard'))) return;
        if (m) void openMemory(m.id);
        else showList();
      });
      const heading = h('h2', { tabindex: '-1' }, m ? `Edit “${m.title || '(untitled)'}”` : 'New memory');
      const fill = (cur: Memory) => {
        title.value = cur.title ?? '';
        content.value = cur.content;
        type.value = cur.type;
        scope.value = cur.scope;
        tagsIn.value = cur.tags.join(', ');
        projectIn.value = cur.project ?? '';
        base = cur.version;
        showPreview();
        opened = snapshot();
      };
      const conflict = async () => {
        clear(problem);
        let cur: Memory;
        try {
          cur = (await get<{ memory: Memory }>(`/api/memories/${encodeURIComponent(m!.id)}`)).memory;
        } catch (err) {
          problem.appendChild(errorBox(`This memory changed since you opened it, and the current version cannot be read: ${describe(err)}`));
          return;
        }
        const body = h('div', { class: 'markdown' });
        renderMarkdownInto(body, cur.content);
        const reload = h('button', { type: 'button', class: 'btn' }, 'Load the current version (replaces your text)');
        reload.addEventListener('click', () => {
          fill(cur);
          clear(problem);
          content.focus();
        });
        const keep = h('button', { type: 'button', class: 'btn btn-plain' }, `Keep my text and save over version ${cur.version}`);
        keep.addEventListener('click', () => {
          base = cur.version;
          clear(problem);
          save.click();
        });
        problem.append(
          h(
            'div',
            { class: 'alert alert-error', role: 'alert' },
            `This memory changed since you opened it (you opened version ${base}; it is now version ${cur.version}). Your text is kept in the editor; nothing was saved.`,
          ),
          h(
            'section',
            { class: 'card editor-current', 'aria-label': `Current version ${cur.version}` },
            h('h3', null, `Current version ${cur.version}: ${cur.title || '(untitled)'}`),
            meta(cur),
            tags(cur.tags),
            body,
            h('div', { class: 'actions' }, reload, keep),
          ),
        );
      };
      const form = h(
        'form',
        { class: 'card mem-editor', 'aria-label': m ? 'Edit memory' : 'New memory' },
        field('Title', title),
        h('div', { class: 'editor-panes' }, field('Content (markdown)', content), h('div', { class: 'field' }, h('span', { class: 'label', id: 'editor-preview-label' }, 'Preview'), preview)),
        h('div', { class: 'filter-grid' }, field('Type', type), field('Scope', scope), field('Tags', tagsIn, 'Separate with commas.'), field('Project', projectIn)),
        problem,
        h('div', { class: 'form-actions actions' }, save, cancel),
      );
      preview.setAttribute('aria-labelledby', 'editor-preview-label');
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        clear(problem);
        const payload = {
          title: title.value.trim(),
          content: content.value,
          type: type.value,
          scope: scope.value,
          tags: tagsIn.value
            .split(',')
            .map((t) => t.trim())
            .filter(Boolean),
          project: projectIn.value.trim(),
        };
        save.disabled = true;
        try {
          const saved = m
            ? await patch<{ memory: Memory }>(`/api/memories/${encodeURIComponent(m.id)}`, payload, { 'If-Match': `"${base}"` })
            : await post<{ memory: Memory }>('/api/memories', { ...payload, title: payload.title || null, project: payload.project || null });
          toast(m ? 'Memory saved' : 'Memory created');
          void load();
          await openMemory(saved.memory.id);
        } catch (err) {
          if (m && err instanceof ApiError && err.status === 412) await conflict();
          else problem.appendChild(errorBox(describe(err)));
        } finally {
          save.disabled = false;
        }
      });
      opened = snapshot();
      detailView.append(h('div', { class: 'detail-toolbar' }, heading), form);
      heading.focus();
    };

    /** The kept versions, each with a diff against the current version and a Restore button. */
    const historyCard = (m: Memory): HTMLElement => {
      const card = h('section', { class: 'card mem-history', 'aria-labelledby': 'mem-history-title' }, h('h3', { id: 'mem-history-title' }, 'History'));
      const body = h('div', null, spinner('Loading history…'));
      card.appendChild(body);
      void (async () => {
        try {
          const list = await get<MemoryVersionList>(`/api/memories/${encodeURIComponent(m.id)}/versions?limit=100`);
          clear(body);
          body.appendChild(h('p', { class: 'muted' }, `${list.total} ${list.total === 1 ? 'version' : 'versions'} kept, newest first.`));
          body.appendChild(
            h(
              'ol',
              null,
              list.rows.map((v) => versionItem(m, v)),
            ),
          );
        } catch (err) {
          clear(body);
          body.appendChild(errorBox(describe(err)));
        }
      })();
      return card;
    };

    const versionItem = (m: Memory, v: MemoryVersion): HTMLElement => {
      const item = h(
        'li',
        { class: 'version-row', 'data-version': String(v.version) },
        h('strong', null, `v${v.version}`),
        v.current ? badge('current', 'ok') : null,
        timeEl(v.updated_at),
        h('span', { class: 'muted' }, authorText(v)),
        h('span', null, v.title || h('span', { class: 'muted' }, '(untitled)')),
        h('span', { class: 'muted' }, `${v.size} bytes`),
      );
      if (v.current) return item;
      const show = h('button', { type: 'button', class: 'btn btn-plain btn-small', 'aria-expanded': 'false' }, 'Show changes');
      const restore = h('button', { type: 'button', class: 'btn btn-small' }, 'Restore');
      let shown: HTMLElement | null = null;
      show.addEventListener('click', async () => {
        if (shown) {
          shown.remove();
          shown = null;
          show.setAttribute('aria-expanded', 'false');
          show.textContent = 'Show changes';
          return;
        }
        try {
          const past = await get<{ memory: Memory }>(`/api/memories/${encodeURIComponent(m.id)}/versions/${v.version}`);
          shown = diffView(past.memory, m);
          item.appendChild(shown);
          show.setAttribute('aria-expanded', 'true');
          show.textContent = 'Hide changes';
        } catch (err) {
          toast(describe(err), 'error');
        }
      });
      restore.addEventListener('click', async () => {
        if (!(await confirmDialog(`Restore version ${v.version}?`, `Version ${v.version} becomes the current content as a new version; the versions in between stay in the history.`, 'Restore')))
          return;
        try {
          await post(`/api/memories/${encodeURIComponent(m.id)}/versions/${v.version}/restore`);
          toast(`Version ${v.version} restored`);
          await openMemory(m.id);
        } catch (err) {
          toast(describe(err), 'error');
        }
      });
      item.appendChild(h('div', { class: 'actions' }, show, restore));
      return item;
    };

    // Namespaces (issue 43): the list with counts, and the one the browser works in.
    const nsSelect = h('select', { name: 'namespace' }, h('option', { value: '' }, 'default'));
    const nsList = h('div', { class: 'ns-list', 'aria-live': 'polite' });
    const chooseNamespace = (ns: string) => {
      state.namespace = ns;
      state.page = 1;
      nsSelect.value = ns;
      showList();
      for (const tr of nsList.querySelectorAll<HTMLElement>('tr[data-namespace]')) {
        if (tr.dataset.namespace === (ns || 'default')) tr.setAttribute('aria-current', 'true');
        else tr.removeAttribute('aria-current');
      }
      void load();
    };
    nsSelect.addEventListener('change', () => chooseNamespace(nsSelect.value));
    const loadNamespaces = async () => {
      clear(nsList);
      try {
        const r = await api<NamespaceList>('GET', '/api/namespaces?limit=200');
        const names = r.namespaces.map((n) => n.namespace);
        clear(nsSelect);
        nsSelect.appendChild(h('option', { value: '' }, 'default'));
        for (const n of names) if (n !== 'default') nsSelect.appendChild(h('option', { value: n }, n));
        if (state.namespace && !names.includes(state.namespace)) nsSelect.appendChild(h('option', { value: state.namespace }, state.namespace));
        nsSelect.value = state.namespace;
        const quota = [r.quota.max_memories !== null ? `${r.quota.max_memories} memories` : null, r.quota.max_bytes !== null ? formatBytes(r.quota.max_bytes) : null].filter(Boolean);
        const rows = r.namespaces.map((n) => {
          const browse = h('button', { type: 'button', class: 'link-button' }, n.namespace);
          browse.addEventListener('click', () => chooseNamespace(n.namespace === 'default' ? '' : n.namespace));
          return h(
            'tr',
            { 'data-namespace': n.namespace, 'aria-current': (state.namespace || 'default') === n.namespace ? 'true' : null },
            h('td', { 'data-label': 'Namespace' }, browse),
            h('td', { 'data-label': 'Memories' }, String(n.memories)),
            h('td', { 'data-label': 'Size' }, formatBytes(n.bytes)),
          );
        });
        nsList.append(
          r.namespaces.length === 0
            ? h('p', { class: 'empty' }, 'No namespace holds memories yet.')
            : h(
                'div',
                { class: 'table-wrap' },
                h(
                  'table',
                  { class: 'table ns-table' },
                  h('caption', { class: 'visually-hidden' }, 'Namespaces'),
                  h(
                    'thead',
                    null,
                    h(
                      'tr',
                      null,
                      ['Namespace', 'Memories', 'Size'].map((c) => h('th', { scope: 'col' }, c)),
                    ),
                  ),
                  h('tbody', null, rows),
                ),
              ),
        );
        if (r.has_next) nsList.appendChild(h('p', { class: 'help' }, 'More namespaces exist than are listed here (the first 200 by name).'));
        if (quota.length) nsList.appendChild(h('p', { class: 'help' }, `Quota per namespace: ${quota.join(', ')}.`));
      } catch (err) {
        nsList.appendChild(errorBox(describe(err)));
      }
    };
    const nsCard = h(
      'details',
      { class: 'card namespaces', open: true },
      h('summary', null, 'Namespaces'),
      h('div', { class: 'filter-grid' }, field('Namespace', nsSelect, 'The memory browser, editor and history work in this namespace.')),
      nsList,
    );

    const newBtn = h('button', { type: 'button', class: 'btn btn-primary' }, 'New memory');
    newBtn.addEventListener('click', () => openEditor(null));
    listView.append(h('div', { class: 'panel-head' }, h('h2', null, 'Memories'), newBtn), nsCard, form, results);
    panel.append(listView, detailView);
    const linked = /^#memories\/([0-9a-f]{24})$/.exec(location.hash);
    if (linked) void openMemory(linked[1]);
    await Promise.all([load(), loadNamespaces()]);
  },
};
