import { ApiError, del, get, patch, post } from '../api';
import { badge, clear, confirmDialog, copyButton, errorBox, field, formatEpoch, h, nextId, openDialog, spinner, timeEl, toast } from '../dom';
import { TOKEN_PRESETS, TOKEN_SCOPES, type Tab, type TokenRecord } from '../types';

const SCOPE_HELP: Record<string, string> = {
  'memory:read': 'list, search, fetch, download, stats',
  'memory:write': 'create and edit',
  'memory:delete': 'delete and bulk-delete',
  'metrics:read': 'Prometheus metrics',
  'tokens:manage': 'create and revoke tokens inside its own namespaces',
};

/** A namespace binding as typed: comma- or space-separated entries (names, `acme/*`, `*`). */
function parseNamespaces(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

const NAMESPACES_HELP = 'Comma-separated: names (acme/alice), prefixes (acme/*) or * for all.';

function statusBadge(t: TokenRecord): HTMLElement {
  return badge(t.status, t.status === 'active' ? 'ok' : t.status === 'revoked' ? 'bad' : 'warn');
}

function parseIps(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
}

function scopeBoxes(selected: string[], name: string): { el: HTMLElement; values(): string[] } {
  const boxes = TOKEN_SCOPES.map((s) => {
    const id = nextId('scope');
    const box = h('input', { type: 'checkbox', id, name, value: s, checked: selected.includes(s) });
    return { s, box, el: h('div', { class: 'check' }, box, h('label', { for: id }, h('code', null, s), h('span', { class: 'muted' }, ` ${SCOPE_HELP[s]}`))) };
  });
  return {
    el: h(
      'fieldset',
      { class: 'plain-fieldset' },
      h('legend', null, 'Scopes'),
      boxes.map((b) => b.el),
    ),
    values: () => boxes.filter((b) => b.box.checked).map((b) => b.s),
  };
}

function dateToEpoch(value: string): number | null {
  if (!value) return null;
  const t = new Date(`${value}T23:59:59`).getTime();
  return Number.isNaN(t) ? null : Math.floor(t / 1000);
}

function epochToDateInput(sec: number | null): string {
  if (!sec) return '';
  const d = new Date(sec * 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

function describe(err: unknown): string {
  return err instanceof ApiError ? err.describe() : String(err);
}

// ---- create -----------------------------------------------------------------------------

function createForm(onCreated: (token: TokenRecord, plaintext: string) => void): HTMLElement {
  const name = h('input', { name: 'name', maxlength: '200', placeholder: 'e.g. laptop agent', autocomplete: 'off' });
  const preset = h(
    'select',
    { name: 'preset' },
    h('option', { value: 'read-only' }, 'Read only (memory:read)'),
    h('option', { value: 'read-write', selected: true }, 'Read and write (memory:read, memory:write)'),
    h('option', { value: 'full' }, 'Full (read, write, delete)'),
    h('option', { value: 'custom' }, 'Custom scopes…'),
  );
  const scopes = scopeBoxes(TOKEN_PRESETS['read-write'], 'scopes');
  scopes.el.hidden = true;
  preset.addEventListener('change', () => {
    scopes.el.hidden = preset.value !== 'custom';
  });
  const expiry = h(
    'select',
    { name: 'expiry' },
    h('option', { value: '' }, 'Never'),
    ['7', '30', '90', '365'].map((d) => h('option', { value: d }, `In ${d} days`)),
    h('option', { value: 'date' }, 'On a date…'),
  );
  expiry.value = '90';
  const date = h('input', { type: 'date', name: 'expires_on' });
  const dateField = field('Expires on', date, 'The token stops working at the end of that day.');
  dateField.hidden = true;
  expiry.addEventListener('change', () => {
    dateField.hidden = expiry.value !== 'date';
  });
  const ips = h('textarea', { name: 'allowed_ips', rows: '2', placeholder: 'any address', spellcheck: 'false', autocapitalize: 'off' });
  const rate = h('input', { type: 'number', name: 'rate_limit_per_minute', min: '0', step: '1', inputmode: 'numeric', placeholder: 'service default' });
  const namespaces = h('input', { name: 'namespaces', value: 'default', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' });
  const msg = h('div', { 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Create token');
  const form = h(
    'form',
    { class: 'card token-create', 'aria-labelledby': 'token-create-title', novalidate: true },
    h('h3', { id: 'token-create-title' }, 'New token'),
    h(
      'div',
      { class: 'form-grid' },
      field('Name', name, 'So you can tell tokens apart.'),
      field('Access', preset),
      field('Namespaces', namespaces, NAMESPACES_HELP),
      field('Expiry', expiry),
      dateField,
      field('Rate limit (requests per minute)', rate, 'Empty: the service default (600). 0: unlimited, for bulk tools such as imports and benchmarks.'),
    ),
    scopes.el,
    field('Allowed IP addresses', ips, 'Optional. Addresses or CIDR ranges (e.g. 203.0.113.7, 10.0.0.0/8), separated by commas or new lines. Empty means any address.'),
    msg,
    h('div', { class: 'form-actions' }, submit),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(msg);
    const body: Record<string, unknown> = { name: name.value.trim() };
    if (preset.value === 'custom') {
      const s = scopes.values();
      if (!s.length) {
        msg.appendChild(errorBox('Choose at least one scope.'));
        return;
      }
      body.scopes = s;
    } else body.preset = preset.value;
    const ns = parseNamespaces(namespaces.value);
    if (!ns.length) {
      msg.appendChild(errorBox('Name at least one namespace (default: default).'));
      namespaces.focus();
      return;
    }
    body.namespaces = ns;
    if (expiry.value === 'date') {
      const at = dateToEpoch(date.value);
      if (!at) {
        msg.appendChild(errorBox('Choose the expiry date.'));
        date.focus();
        return;
      }
      body.expires_at = at;
    } else if (expiry.value) body.expires_in_days = Number(expiry.value);
    const ipList = parseIps(ips.value);
    if (ipList.length) body.allowed_ips = ipList;
    if (rate.value.trim() !== '') body.rate_limit_per_minute = Number(rate.value);
    submit.disabled = true;
    try {
      const r = await post<{ token: TokenRecord; plaintext: string }>('/api/tokens', body);
      form.reset();
      namespaces.value = 'default';
      expiry.value = '90';
      scopes.el.hidden = true;
      dateField.hidden = true;
      onCreated(r.token, r.plaintext);
    } catch (err) {
      msg.appendChild(errorBox(describe(err)));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function secretPanel(token: TokenRecord, plaintext: string, onDone: () => void): HTMLElement {
  const out = h('input', { id: 'new-token-secret', class: 'secret', readonly: true, value: plaintext, spellcheck: 'false', 'aria-describedby': 'new-token-warning' });
  out.addEventListener('focus', () => out.select());
  const done = h('button', { type: 'button', class: 'btn btn-plain' }, 'I have stored it');
  done.addEventListener('click', onDone);
  const panel = h(
    'div',
    { class: 'alert alert-secret', role: 'region', 'aria-labelledby': 'new-token-title' },
    h('h3', { id: 'new-token-title' }, `Token “${token.name || token.prefix}” created`),
    h(
      'p',
      { id: 'new-token-warning', class: 'warning' },
      h('strong', null, 'Copy this secret now: you will not see it again. '),
      'Only its hash is stored, so it cannot be shown later. If you lose it, create a new token.',
    ),
    h(
      'div',
      { class: 'secret-row' },
      h('label', { for: out.id, class: 'visually-hidden' }, 'Token secret'),
      out,
      copyButton(() => plaintext, 'Copy secret'),
    ),
    h('p', { class: 'muted' }, 'Send it as ', h('code', null, 'Authorization: Bearer <token>'), '. Scopes: ', token.scopes.join(', '), '. Namespaces: ', token.namespaces.join(', '), '.'),
    h('div', { class: 'form-actions' }, done),
  );
  return panel;
}

// ---- edit -------------------------------------------------------------------------------

async function editToken(t: TokenRecord): Promise<boolean> {
  const name = h('input', { value: t.name, maxlength: '200', autocomplete: 'off' });
  const scopes = scopeBoxes(t.scopes, 'edit-scopes');
  const expiry = h(
    'select',
    null,
    h('option', { value: 'keep' }, t.expires_at ? `Keep (${formatEpoch(t.expires_at)})` : 'Keep (never expires)'),
    h('option', { value: 'never' }, 'Never expires'),
    h('option', { value: 'date' }, 'On a date…'),
  );
  const date = h('input', { type: 'date', value: epochToDateInput(t.expires_at) });
  const dateField = field('Expires on', date);
  dateField.hidden = true;
  expiry.addEventListener('change', () => (dateField.hidden = expiry.value !== 'date'));
  const ips = h('textarea', { rows: '2', spellcheck: 'false', placeholder: 'any address' });
  ips.value = (t.allowed_ips ?? []).join('\n');
  const rate = h('input', { type: 'number', min: '0', step: '1', inputmode: 'numeric', value: String(t.rate_limit_per_minute) });
  const namespaces = h('input', { value: t.namespaces.join(', '), autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' });
  const msg = h('div', { 'aria-live': 'polite' });
  const result = await openDialog(
    `Edit token ${t.prefix}`,
    [
      field('Name', name),
      scopes.el,
      field('Namespaces', namespaces, NAMESPACES_HELP),
      field('Expiry', expiry),
      dateField,
      field('Allowed IP addresses', ips, 'Addresses or CIDR ranges; empty means any address.'),
      field('Rate limit (requests per minute)', rate, '0 means unlimited.'),
      msg,
    ],
    [
      { label: 'Cancel', value: 'cancel' },
      { label: 'Save', value: 'save', tone: 'primary' },
    ],
    async () => {
      clear(msg);
      const body: Record<string, unknown> = { name: name.value.trim(), allowed_ips: parseIps(ips.value) };
      if (rate.value.trim() !== '') body.rate_limit_per_minute = Number(rate.value);
      const s = scopes.values();
      if (!s.length) {
        msg.appendChild(errorBox('Choose at least one scope.'));
        return false;
      }
      body.scopes = s;
      const ns = parseNamespaces(namespaces.value);
      if (!ns.length) {
        msg.appendChild(errorBox('Name at least one namespace.'));
        return false;
      }
      body.namespaces = ns;
      if (expiry.value === 'never') body.clear_expiry = true;
      if (expiry.value === 'date') {
        const at = dateToEpoch(date.value);
        if (!at) {
          msg.appendChild(errorBox('Choose the expiry date.'));
          return false;
        }
        body.expires_at = at;
      }
      try {
        await patch(`/api/tokens/${encodeURIComponent(t.id)}`, body);
        return true;
      } catch (err) {
        msg.appendChild(errorBox(describe(err)));
        return false;
      }
    },
  );
  return result === 'save';
}

// ---- list -------------------------------------------------------------------------------

function tokenRow(t: TokenRecord, refresh: () => void): HTMLElement {
  const act = async (fn: () => Promise<unknown>, done: string) => {
    try {
      await fn();
      toast(done);
      refresh();
    } catch (err) {
      toast(describe(err), 'error');
    }
  };
  const label = t.name || t.prefix;
  // What it minted goes with it (decision 0163): only a manager token can have minted any.
  const minted = t.scopes.includes('tokens:manage') ? ', and so will every token it minted' : '';
  const edit = h('button', { type: 'button', class: 'btn btn-plain btn-small', 'aria-label': `Edit ${label}` }, 'Edit');
  edit.addEventListener('click', async () => {
    if (await editToken(t)) {
      toast(`Token ${label} saved`);
      refresh();
    }
  });
  const revoke =
    t.status === 'revoked'
      ? h('button', { type: 'button', class: 'btn btn-plain btn-small', 'aria-label': `Restore ${label}` }, 'Restore')
      : h('button', { type: 'button', class: 'btn btn-warn btn-small', 'aria-label': `Revoke ${label}` }, 'Revoke');
  revoke.addEventListener('click', async () => {
    if (t.status === 'revoked') return act(() => patch(`/api/tokens/${encodeURIComponent(t.id)}`, { unrevoke: true }), `Token ${label} restored`);
    if (await confirmDialog('Revoke token?', `“${label}” will stop working at once (the API answers 401)${minted}. You can restore it later.`, 'Revoke'))
      await act(() => post(`/api/tokens/${encodeURIComponent(t.id)}/revoke`), `Token ${label} revoked`);
  });
  const remove = h('button', { type: 'button', class: 'btn btn-danger btn-small', 'aria-label': `Delete ${label}` }, 'Delete');
  remove.addEventListener('click', async () => {
    if (await confirmDialog('Delete token?', `“${label}” will be deleted for good. Agents using it get 401${minted}. This cannot be undone.`, 'Delete'))
      await act(() => del(`/api/tokens/${encodeURIComponent(t.id)}`), `Token ${label} deleted`);
  });
  return h(
    'tr',
    { 'data-token-id': t.id, class: `token-${t.status}` },
    h('td', { 'data-label': 'Token' }, h('div', { class: 'token-name' }, t.name || h('span', { class: 'muted' }, '(no name)')), h('code', { class: 'muted small' }, t.prefix)),
    h('td', { 'data-label': 'Status' }, statusBadge(t)),
    h(
      'td',
      { 'data-label': 'Scopes' },
      h(
        'div',
        { class: 'chips' },
        t.scopes.map((s) => h('span', { class: 'chip' }, s)),
      ),
    ),
    h(
      'td',
      { 'data-label': 'Namespaces', class: 'token-namespaces' },
      (t.namespaces ?? []).map((n) => h('code', { class: 'ip' }, n)),
    ),
    h('td', { 'data-label': 'Expires' }, t.expires_at ? h('span', { title: new Date(t.expires_at * 1000).toISOString() }, formatEpoch(t.expires_at)) : h('span', { class: 'muted' }, 'Never')),
    h('td', { 'data-label': 'Allowed IPs' }, t.allowed_ips?.length ? t.allowed_ips.map((ip) => h('code', { class: 'ip' }, ip)) : h('span', { class: 'muted' }, 'Any')),
    h(
      'td',
      { 'data-label': 'Rate limit' },
      t.rate_limit_per_minute === 0 ? h('span', { class: 'muted' }, 'Unlimited') : h('span', null, `${t.rate_limit_per_minute}/min`),
      h('div', { class: 'muted small' }, `recent ${t.recent_requests_per_minute}/min`),
    ),
    h('td', { 'data-label': 'Last used' }, timeEl(t.last_used_at, 'Never')),
    h('td', { 'data-label': 'Created' }, timeEl(t.created_at), t.created_by ? h('div', { class: 'muted small' }, 'minted by ', h('code', null, t.created_by)) : null),
    h('td', { class: 'row-actions' }, edit, revoke, remove),
  );
}

export const tokensTab: Tab = {
  id: 'tokens',
  label: 'API tokens',
  async render(panel) {
    clear(panel);
    const secretSlot = h('div');
    const list = h('div', { class: 'token-list' });
    const load = async () => {
      clear(list);
      list.appendChild(spinner('Loading tokens…'));
      try {
        const { tokens } = await get<{ tokens: TokenRecord[] }>('/api/tokens');
        clear(list);
        if (!tokens.length) {
          list.appendChild(h('p', { class: 'empty' }, 'No tokens yet. Create one above and give it to your agent.'));
          return;
        }
        const header = ['Token', 'Status', 'Scopes', 'Namespaces', 'Expires', 'Allowed IPs', 'Rate limit', 'Last used', 'Created'].map((c) => h('th', { scope: 'col' }, c));
        const table = h(
          'table',
          { class: 'table tokens-table' },
          h('caption', { class: 'visually-hidden' }, 'API tokens'),
          h('thead', null, h('tr', null, header, h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')))),
          h(
            'tbody',
            null,
            tokens.map((t) => tokenRow(t, () => void load())),
          ),
        );
        list.appendChild(h('div', { class: 'table-wrap' }, table));
      } catch (err) {
        clear(list);
        list.appendChild(errorBox(describe(err)));
      }
    };
    const form = createForm((token, plaintext) => {
      clear(secretSlot);
      const p = secretPanel(token, plaintext, () => {
        clear(secretSlot);
        form.querySelector('input')?.focus();
      });
      secretSlot.appendChild(p);
      (p.querySelector('input') as HTMLInputElement).focus();
      void load();
    });
    panel.append(
      h('div', { class: 'panel-head' }, h('h2', null, 'API tokens')),
      h('p', { class: 'lead' }, 'Agents call the API with a Bearer token. Give each agent its own token with only the scopes it needs; revoke it the moment it leaks.'),
      secretSlot,
      form,
      h('h3', { class: 'section-title' }, 'Tokens'),
      list,
    );
    await load();
  },
};
