import { ApiError, get, post } from '../api';
import { badge, beginRender, clear, errorBox, h, nextId, spinner, toast } from '../dom';
import { migrationOffer } from './portability';
import type { ConfigResponse, SchemaField, SchemaSection, Tab } from '../types';

const SOURCE_LABEL: Record<string, string> = {
  env: 'environment',
  file: 'config file',
  credentials: 'credential store',
  default: 'default',
};

interface FieldState {
  def: SchemaField;
  input: HTMLInputElement | HTMLSelectElement;
  initial: string;
  fromEnv: boolean;
  /** For secrets: a "clear" checkbox (the masked value is never put into the input). */
  clearBox?: HTMLInputElement;
  /** Shows (or, with null, removes) a message in words under the field. */
  error(msg: string | null): void;
}

/** Settings of MongoDB or S3 alone (the history length and the signed-link lifetime apply to every backend). */
const BACKEND_ONLY = new Set([
  'docdb_uri',
  'docdb_db',
  'memory_collection',
  'objstore_bucket',
  'objstore_endpoint',
  'objstore_account_id',
  'objstore_access_key_id',
  'objstore_secret_access_key',
  'objstore_public_base',
]);

/** The sections whose backend is optional, with the adapter that means "in use" and what to call it. */
const OPTIONAL_BACKENDS: Record<string, { kind: string; name: string; instead: string }> = {
  docdb: { kind: 'mongodb', name: 'MongoDB', instead: 'the embedded SQLite database is in use' },
  objstore: { kind: 's3', name: 'an S3-compatible store', instead: 'the filesystem store is in use' },
};

function inputFor(def: SchemaField, value: string, fromEnv: boolean, hasValue: boolean): HTMLInputElement | HTMLSelectElement {
  const common = { id: `cfg-${def.key}`, name: def.key, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'off' };
  if (Array.isArray(def.options) && def.options.length) {
    const sel = h(
      'select',
      common,
      h('option', { value: '' }, '(not set)'),
      def.options.map((o) => h('option', { value: o }, o)),
    );
    sel.value = value;
    sel.disabled = fromEnv;
    return sel;
  }
  const type = def.secret ? 'password' : /int|number/i.test(def.type) ? 'number' : /url/i.test(def.type) ? 'url' : 'text';
  const input = h('input', { ...common, type });
  if (type === 'number') input.inputMode = 'numeric';
  if (def.secret) {
    input.autocomplete = 'new-password';
    input.placeholder = hasValue ? 'Saved (hidden). Type to replace.' : 'Not set';
    input.value = '';
  } else {
    input.value = value;
    if (def.placeholder) input.placeholder = def.placeholder;
  }
  if (fromEnv) {
    input.readOnly = true;
    if (def.secret) input.placeholder = 'Set in the environment (hidden)';
  }
  return input;
}

/** Puts each 422 detail of a save under the field it names; returns the fields marked. */
function fieldErrors(err: ApiError, states: Map<string, FieldState>): FieldState[] {
  const detail = err.body?.detail;
  if (err.status !== 422 || !Array.isArray(detail)) return [];
  const marked: FieldState[] = [];
  for (const d of detail as Array<{ loc?: unknown[]; msg?: string }>) {
    const key = (d.loc ?? []).find((p) => typeof p === 'string' && states.has(p)) as string | undefined;
    const st = key ? states.get(key) : undefined;
    if (!st) return [];
    const words = (d.msg ?? 'This value is not accepted').split(st.def.key).join(st.def.label);
    st.error(words.charAt(0).toUpperCase() + words.slice(1));
    if (!marked.includes(st)) marked.push(st);
  }
  return marked;
}

function str(v: unknown): string {
  return v === null || v === undefined ? '' : String(v);
}

export const configTab: Tab = {
  id: 'config',
  label: 'Configuration',
  async render(panel) {
    const stale = beginRender(panel);
    clear(panel);
    panel.appendChild(spinner('Loading the configuration…'));
    const [{ schema }, cfg] = await Promise.all([get<{ schema: { sections: SchemaSection[] } }>('/api/schema'), get<ConfigResponse>('/api/config')]);
    const paths = await get<{ config_file: { path: string; exists: boolean }; credential_store: { path: string; exists: boolean } }>('/api/config/path').catch(() => null);
    if (stale()) return;
    clear(panel);

    const states = new Map<string, FieldState>();
    const missing = new Set(cfg.missing ?? []);
    const form = h('form', { class: 'config-form', novalidate: true });
    const summary = h('div', { 'aria-live': 'polite' });
    const endpointOut = h('output', { class: 'derived', for: 'cfg-objstore_account_id cfg-objstore_endpoint' });

    const renderSummary = (complete: boolean, miss: string[], status?: string) => {
      clear(summary);
      summary.appendChild(
        h(
          'div',
          { class: `alert ${complete ? 'alert-ok' : 'alert-warn'}` },
          badge(complete ? 'complete' : 'incomplete', complete ? 'ok' : 'warn'),
          ' ',
          status ?? (complete ? 'The chosen backends have every setting they need.' : 'Some settings the chosen backends need are missing.'),
          miss.length ? h('span', null, ' Missing: ', miss.map((m, i) => [i ? ', ' : '', h('code', null, m)]).flat(), '.') : null,
        ),
      );
    };
    renderSummary(cfg.complete, cfg.missing ?? [], cfg.status);

    for (const section of schema.sections) {
      const fs = h('fieldset', { class: 'card config-section' }, h('legend', null, section.title));
      if (section.description) fs.appendChild(h('p', { class: 'muted' }, section.description));
      // A backend not in use: its fields behind a disclosure (open when one of them holds a value
      // or is missing), and none of them "required" until it is chosen.
      const optional = OPTIONAL_BACKENDS[section.id];
      const inUse = !optional || !cfg.active || cfg.active[section.id as 'docdb' | 'objstore'] === optional.kind;
      let backendFields: HTMLElement = fs;
      if (!inUse) {
        const anySet = section.fields.some((f) => BACKEND_ONLY.has(f.key) && ((cfg.sources?.[f.key] ?? 'default') !== 'default' || missing.has(f.key)));
        backendFields = h('details', { class: 'backend-fields', open: anySet || undefined }, h('summary', null, `Use ${optional.name} (${optional.instead})`));
        fs.appendChild(backendFields);
      }
      for (const def of section.fields) {
        const target = BACKEND_ONLY.has(def.key) ? backendFields : fs;
        const raw = cfg.config?.[def.key];
        const source = cfg.sources?.[def.key] ?? 'default';
        const fromEnv = source === 'env';
        const hasValue = raw !== null && raw !== undefined && raw !== '';
        const input = inputFor(def, str(raw), fromEnv, hasValue);
        const helpId = nextId('help');
        const errId = nextId('err');
        const errLine = h('p', { class: 'field-error', id: errId, role: 'alert', hidden: true });
        const state: FieldState = {
          def,
          input,
          initial: def.secret ? '' : str(raw),
          fromEnv,
          error(msg) {
            errLine.textContent = msg ?? '';
            errLine.hidden = !msg;
            if (msg) input.setAttribute('aria-invalid', 'true');
            else if (!missing.has(def.key)) input.removeAttribute('aria-invalid');
            input.setAttribute('aria-describedby', msg ? `${errId} ${helpId}` : helpId);
          },
        };
        states.set(def.key, state);

        input.setAttribute('aria-describedby', helpId);
        if (missing.has(def.key)) input.setAttribute('aria-invalid', 'true');
        const labelRow = h(
          'div',
          { class: 'label-row' },
          h('label', { for: input.id }, def.label),
          def.required && (inUse || !BACKEND_ONLY.has(def.key)) ? h('span', { class: 'req', title: 'Required for this backend' }, 'required') : null,
          missing.has(def.key) ? badge('missing', 'warn') : null,
          badge(fromEnv ? `from environment: MEMSTORE_${def.key.toUpperCase()}` : (SOURCE_LABEL[source] ?? source), fromEnv ? 'info' : 'muted'),
        );
        const help = h('p', { class: 'help', id: helpId }, def.help ?? '', fromEnv ? ' Set in the environment, so it is read-only here.' : '');
        const wrap = h('div', { class: 'field' }, labelRow, input, errLine);
        if (def.secret && hasValue && !fromEnv) {
          const box = h('input', { type: 'checkbox', id: `cfg-${def.key}-clear` });
          state.clearBox = box;
          box.addEventListener('change', () => {
            (input as HTMLInputElement).disabled = box.checked;
          });
          wrap.appendChild(h('div', { class: 'check' }, box, h('label', { for: box.id }, `Clear the saved ${def.label.toLowerCase()}`)));
        }
        wrap.appendChild(help);
        if (def.key === 'objstore_endpoint') wrap.appendChild(endpointOut);
        target.appendChild(wrap);
      }
      form.appendChild(fs);
    }

    // The endpoint actually used, derived live from the account id / explicit endpoint.
    let deriveTimer: ReturnType<typeof setTimeout> | undefined;
    let deriveSeq = 0;
    const derive = (delay = 250) => {
      clearTimeout(deriveTimer);
      deriveTimer = setTimeout(async () => {
        const account = states.get('objstore_account_id')?.input.value.trim() ?? '';
        const endpoint = states.get('objstore_endpoint')?.input.value.trim() ?? '';
        const seq = ++deriveSeq;
        if (!account && !endpoint) {
          endpointOut.textContent = 'Endpoint in use: AWS S3 (no endpoint or R2 account id set).';
          return;
        }
        try {
          const r = await post<{ endpoint: string; source: string }>('/api/derive-endpoint', { account_id: account || undefined, endpoint: endpoint || undefined });
          if (seq !== deriveSeq) return;
          endpointOut.textContent = `Endpoint in use: ${r.endpoint} (${r.source === 'account_id' ? 'derived from the R2 account id' : 'explicit endpoint'})`;
        } catch (err) {
          if (seq !== deriveSeq) return;
          endpointOut.textContent = `Endpoint: ${err instanceof ApiError ? err.describe() : 'cannot be derived'}`;
        }
      }, delay);
    };
    states.get('objstore_account_id')?.input.addEventListener('input', () => derive());
    states.get('objstore_endpoint')?.input.addEventListener('input', () => derive());
    derive(0);

    const saveBtn = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Save changes');
    const reset = h('button', { type: 'button', class: 'btn btn-plain' }, 'Discard changes');
    reset.addEventListener('click', () => void configTab.render(panel));
    const saveMsg = h('div', { 'aria-live': 'polite', class: 'save-msg' });
    form.appendChild(h('div', { class: 'form-actions config-actions' }, saveMsg, reset, saveBtn));

    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const body: Record<string, string> = {};
      for (const [key, s] of states) {
        if (s.fromEnv) continue;
        if (s.clearBox?.checked) body[key] = '';
        else if (s.def.secret) {
          if (s.input.value !== '') body[key] = s.input.value;
        } else if (s.input.value.trim() !== s.initial) body[key] = s.input.value.trim();
      }
      clear(saveMsg);
      for (const st of states.values()) st.error(null);
      if (Object.keys(body).length === 0) {
        saveMsg.appendChild(h('span', { class: 'muted' }, 'Nothing changed.'));
        return;
      }
      saveBtn.disabled = true;
      saveBtn.textContent = 'Saving…';
      try {
        const r = await post<{ saved: string[]; complete: boolean; missing: string[] }>('/api/config', body);
        toast(`Saved ${r.saved.length} setting${r.saved.length === 1 ? '' : 's'}: ${r.saved.join(', ')}`);
        await configTab.render(panel);
      } catch (err) {
        // A refused value: its message under its own field, with the field's label for its key;
        // one line here says nothing was saved.
        const marked = err instanceof ApiError ? fieldErrors(err, states) : [];
        if (marked.length) {
          saveMsg.appendChild(errorBox(`Nothing was saved: correct ${marked.length === 1 ? 'the marked field' : `the ${marked.length} marked fields`}.`));
          marked[0].input.closest('details')?.setAttribute('open', '');
          marked[0].input.focus();
        } else saveMsg.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
        saveBtn.disabled = false;
        saveBtn.textContent = 'Save changes';
      }
    });

    panel.append(
      h('div', { class: 'panel-head' }, h('h2', null, 'Configuration')),
      h(
        'p',
        { class: 'lead' },
        'Changes take effect without a restart. Only the fields you change are saved; secrets are never shown and stay as they are unless you type a new value. Values set in the environment win and are read-only here.',
      ),
      summary,
      form,
    );
    // After a backend change: offer to copy the memories of the earlier backends (issue 12).
    const offer = await migrationOffer().catch(() => null);
    if (offer) panel.insertBefore(offer, summary);
    if (paths) {
      panel.appendChild(
        h(
          'dl',
          { class: 'paths' },
          h('dt', null, 'Config file'),
          h('dd', null, h('code', null, paths.config_file.path), paths.config_file.exists ? '' : ' (not written yet)'),
          h('dt', null, 'Credential store'),
          h('dd', null, h('code', null, paths.credential_store.path), paths.credential_store.exists ? ' (encrypted)' : ' (not written yet)'),
        ),
      );
    }
  },
};
