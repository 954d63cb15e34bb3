import { ApiError, get, query } from '../api';
import { badge, beginRender, clear, errorBox, field, h, spinner, timeEl } from '../dom';
import { AUDIT_ACTIONS, type Tab } from '../types';

/** GET /api/audit entries (see src/audit/dto/audit.dto.ts). */
interface AuditEntry {
  id: string;
  at: string;
  action: string;
  outcome: 'success' | 'failure';
  actor: { kind: 'admin' | 'token' | 'anonymous'; id: string | null; name: string | null };
  target: string | null;
  address: string | null;
  request_id: string | null;
  detail: Record<string, unknown>;
}

const PAGE = 50;

function actorCell(a: AuditEntry['actor']): HTMLElement {
  if (a.kind === 'anonymous') return h('span', { class: 'muted' }, 'not signed in');
  if (a.kind === 'admin') return h('span', null, a.name === 'admin' || !a.name ? 'admin' : `admin ${a.name}`);
  return h('span', null, `token ${a.name ?? ''} `, h('code', null, a.id ?? ''));
}

function detailText(d: Record<string, unknown>): string {
  return Object.entries(d)
    .map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v)}`)
    .join('; ');
}

function row(e: AuditEntry): HTMLElement {
  return h(
    'tr',
    { 'data-action': e.action },
    h('td', { 'data-label': 'When' }, timeEl(e.at)),
    h('td', { 'data-label': 'Action' }, h('code', null, e.action)),
    h('td', { 'data-label': 'Outcome' }, badge(e.outcome === 'success' ? 'Success' : 'Failure', e.outcome === 'success' ? 'ok' : 'bad')),
    h('td', { 'data-label': 'Who' }, actorCell(e.actor)),
    h('td', { 'data-label': 'Target' }, e.target ? h('code', null, e.target) : h('span', { class: 'muted' }, '—')),
    h('td', { 'data-label': 'Address' }, e.address ?? '—'),
    h('td', { 'data-label': 'Detail', class: 'audit-detail' }, detailText(e.detail)),
  );
}

export const auditTab: Tab = {
  id: 'audit',
  label: 'Audit',
  async render(panel) {
    const stale = beginRender(panel);
    clear(panel);
    const action = h(
      'select',
      { name: 'action' },
      h('option', { value: '' }, 'Any action'),
      AUDIT_ACTIONS.map((a) => h('option', { value: a }, a)),
    );
    const actor = h('input', { name: 'actor', placeholder: 'token id or admin', autocapitalize: 'off', spellcheck: 'false' });
    const since = h('input', { name: 'since', type: 'date' });
    const apply = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Filter');
    const filters = h('form', { class: 'filters audit-filters', 'aria-label': 'Filter the audit log' }, field('Action', action), field('Actor', actor), field('Since', since), apply);
    const list = h('div', { 'aria-live': 'polite' });
    const more = h('button', { type: 'button', class: 'btn', hidden: true }, 'Older entries');
    let cursor: string | null = null;
    let tbody: HTMLElement | null = null;

    const load = async (append: boolean) => {
      if (!append) {
        clear(list);
        list.appendChild(spinner('Loading the audit log…'));
        tbody = null;
        cursor = null;
      }
      more.disabled = true;
      try {
        const params = {
          limit: PAGE,
          cursor,
          action: action.value,
          actor: actor.value.trim(),
          since: since.value ? new Date(`${since.value}T00:00:00`).toISOString() : null,
        };
        const res = await get<{ entries: AuditEntry[]; next_cursor: string | null }>(`/api/audit${query(params)}`);
        if (stale()) return;
        if (!tbody) {
          clear(list);
          if (!res.entries.length) {
            list.appendChild(h('p', { class: 'empty' }, 'No audit entries match.'));
            more.hidden = true;
            return;
          }
          tbody = h('tbody', null);
          const header = ['When', 'Action', 'Outcome', 'Who', 'Target', 'Address', 'Detail'].map((c) => h('th', { scope: 'col' }, c));
          list.appendChild(
            h(
              'div',
              { class: 'table-wrap' },
              h('table', { class: 'table audit-table' }, h('caption', { class: 'visually-hidden' }, 'Audit log, newest first'), h('thead', null, h('tr', null, header)), tbody),
            ),
          );
        }
        res.entries.forEach((e) => tbody!.appendChild(row(e)));
        cursor = res.next_cursor;
        more.hidden = !cursor;
      } catch (err) {
        clear(list);
        list.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
      } finally {
        more.disabled = false;
      }
    };
    filters.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void load(false);
    });
    more.addEventListener('click', () => void load(true));
    panel.append(
      h('div', { class: 'panel-head' }, h('h2', null, 'Audit log')),
      h(
        'p',
        { class: 'lead' },
        'Who signed in, issued, changed, revoked or deleted which token, changed settings, tested backends, and deleted, imported or restored memories: newest first. Entries are kept for MEMSTORE_AUDIT_RETENTION_DAYS (90 days by default).',
      ),
      filters,
      list,
      more,
    );
    await load(false);
  },
};
