import './styles.css';
import { ApiError, api, post, setUnauthorizedHandler } from './api';
import { clear, errorBox, field, h, nextId, openDialog, toast } from './dom';
import { auditTab } from './tabs/audit';
import { configTab } from './tabs/config';
import { memoriesTab } from './tabs/memories';
import { portabilityTab } from './tabs/portability';
import { setupTab } from './tabs/setup';
import { statusTab } from './tabs/status';
import { tokensTab } from './tabs/tokens';
import type { Me, Tab } from './types';

const TABS: Tab[] = [statusTab, memoriesTab, tokensTab, configTab, portabilityTab, auditTab, setupTab];
const root = document.getElementById('app') as HTMLElement;

function docsLinks(): HTMLElement {
  return h(
    'nav',
    { class: 'docs-links', 'aria-label': 'API documentation' },
    h('a', { href: '/docs', target: '_blank', rel: 'noopener' }, 'API docs'),
    h('a', { href: '/redoc', target: '_blank', rel: 'noopener' }, 'ReDoc'),
    h('a', { href: '/openapi.json', target: '_blank', rel: 'noopener' }, 'OpenAPI'),
  );
}

function brand(): HTMLElement {
  return h('a', { class: 'brand', href: '#status' }, h('span', { class: 'logo', 'aria-hidden': 'true' }, 'M'), h('span', null, 'Memory Store'));
}

// ---- sign in ----------------------------------------------------------------------------

function showLogin(message?: string): void {
  document.title = 'Sign in · Memory Store';
  const user = h('input', { name: 'username', autocomplete: 'username', required: true, value: 'admin', autocapitalize: 'off', spellcheck: 'false' });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const msg = h('div', { class: 'login-message' }); // its alerts announce themselves (role=alert / status)
  if (message) msg.appendChild(h('div', { class: 'alert alert-info', role: 'status' }, message));
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block' }, 'Sign in');
  const form = h(
    'form',
    { class: 'login-card', 'aria-labelledby': 'login-title', novalidate: true },
    h('div', { class: 'login-brand' }, brand()),
    h('h1', { id: 'login-title' }, 'Sign in to the admin page'),
    field('Username', user),
    field('Password', pass),
    msg,
    submit,
    h('p', { class: 'help login-help' }, 'The password is MEMSTORE_ADMIN_PASSWORD, or the one printed on the console at the first start.'),
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(msg);
    if (!user.value || !pass.value) {
      msg.appendChild(errorBox('Enter the admin username and password.'));
      (user.value ? pass : user).focus();
      return;
    }
    submit.disabled = true;
    submit.textContent = 'Signing in…';
    try {
      await api('POST', '/api/login', { username: user.value, password: pass.value }, { quiet401: true });
      const typed = pass.value;
      pass.value = '';
      await boot(typed);
    } catch (err) {
      msg.appendChild(errorBox(loginError(err)));
      pass.select();
      pass.focus();
    } finally {
      submit.disabled = false;
      submit.textContent = 'Sign in';
    }
  });
  clear(root);
  root.appendChild(h('main', { class: 'login-page' }, form, h('footer', { class: 'login-footer' }, docsLinks())));
  (user.value ? pass : user).focus();
}

function loginError(err: unknown): string {
  if (err instanceof ApiError) {
    if (err.status === 401) return 'Wrong username or password.';
    if (err.status === 429) {
      const wait = err.retryAfter ? ` Try again in ${humanSeconds(err.retryAfter)}.` : ' Try again later.';
      return `Too many failed sign-in attempts from this address.${wait}`;
    }
    if (err.status === 422) return 'Enter the admin username and password.';
    return err.message;
  }
  return 'Sign-in failed. Try again.';
}

function humanSeconds(s: number): string {
  if (s < 90) return `${s} second${s === 1 ? '' : 's'}`;
  const m = Math.ceil(s / 60);
  return `${m} minute${m === 1 ? '' : 's'}`;
}

// ---- the admin password -----------------------------------------------------------------

/** A password input with its own error line (role=alert) under it, named by aria-describedby. */
function passwordField(label: string, autocomplete: string, help?: string): { wrap: HTMLElement; input: HTMLInputElement; error(msg: string | null): void } {
  // Not `required`: the browser would then refuse the dialog's Cancel (a submit button) while a field is empty.
  const input = h('input', { type: 'password', autocomplete, spellcheck: 'false' });
  const wrap = field(label, input, help);
  const errId = nextId('err');
  const err = h('p', { class: 'field-error', id: errId, role: 'alert', hidden: true });
  wrap.appendChild(err);
  return {
    wrap,
    input,
    error(msg) {
      err.textContent = msg ?? '';
      err.hidden = !msg;
      input.setAttribute('aria-invalid', String(Boolean(msg)));
      const ids = (input.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x && x !== errId);
      if (msg) ids.push(errId);
      if (ids.length) input.setAttribute('aria-describedby', ids.join(' '));
      else input.removeAttribute('aria-describedby');
    },
  };
}

/**
 * Change the admin password (POST /api/admin/password). `first`: right after signing in with the
 * generated password, which this replaces; `current` fills in the password just typed.
 */
async function changePasswordDialog(opts: { first?: boolean; current?: string } = {}): Promise<void> {
  const current = passwordField('Current password', 'current-password');
  const next = passwordField('New password', 'new-password', 'At least 12 characters. A passphrase of a few words is easy to type and hard to guess.');
  const again = passwordField('Repeat the new password', 'new-password');
  if (opts.current) current.input.value = opts.current;
  const general = h('div', { class: 'dialog-message' });
  const intro = opts.first
    ? 'You signed in with the password generated at the first start. Choose your own now: it replaces the generated one, and other signed-in sessions are signed out.'
    : 'Other signed-in sessions are signed out; this one stays.';
  await openDialog(
    opts.first ? 'Choose your own admin password' : 'Change the admin password',
    [h('p', null, intro), current.wrap, next.wrap, again.wrap, general],
    [
      { label: opts.first ? 'Not now' : 'Cancel', value: 'cancel' },
      { label: 'Change password', value: 'ok', tone: 'primary' },
    ],
    async () => {
      for (const f of [current, next, again]) f.error(null);
      clear(general);
      if (!current.input.value) current.error('Enter the password you signed in with.');
      if ([...next.input.value].length < 12) next.error('Use at least 12 characters.');
      else if (next.input.value === current.input.value) next.error('Choose a password different from the current one.');
      if (again.input.value !== next.input.value) again.error('This does not match the new password.');
      const firstBad = [current, next, again].find((f) => f.input.getAttribute('aria-invalid') === 'true');
      if (firstBad) {
        firstBad.input.focus();
        return false;
      }
      try {
        const res = await post<{ sessions_signed_out: number }>('/api/admin/password', { current_password: current.input.value, new_password: next.input.value });
        const n = res.sessions_signed_out;
        toast(`Password changed.${n ? ` ${n} other session${n === 1 ? ' was' : 's were'} signed out.` : ''}`);
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.status === 403) {
          current.error('This is not the current password.');
          current.input.select();
          current.input.focus();
        } else if (err instanceof ApiError && err.status === 422) {
          const detail = (err.body?.detail as Array<{ loc?: unknown[]; msg?: string }> | undefined)?.[0];
          next.error(detail?.msg ?? err.message);
          next.input.focus();
        } else general.appendChild(errorBox(err instanceof ApiError ? err.message : 'The password could not be changed. Try again.'));
        return false;
      }
    },
  );
}

// ---- the signed-in shell ----------------------------------------------------------------

let panels: Map<string, HTMLElement> = new Map();
let tabButtons: Map<string, HTMLButtonElement> = new Map();

function showShell(username: string): void {
  const tablist = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Sections' });
  const main = h('main', { id: 'main', class: 'content', tabindex: '-1' }, h('h1', { class: 'visually-hidden' }, 'Memory Store administration'));
  panels = new Map();
  tabButtons = new Map();
  for (const tab of TABS) {
    const btn = h('button', { type: 'button', role: 'tab', id: `tab-${tab.id}`, 'aria-controls': `panel-${tab.id}`, 'aria-selected': 'false', tabindex: '-1', 'data-tab': tab.id }, tab.label);
    btn.addEventListener('click', () => selectTab(tab.id, true));
    btn.addEventListener('keydown', (ev) => onTabKey(ev, tab.id));
    tablist.appendChild(btn);
    tabButtons.set(tab.id, btn);
    const panel = h('section', { role: 'tabpanel', id: `panel-${tab.id}`, 'aria-labelledby': `tab-${tab.id}`, class: 'panel', hidden: true, tabindex: '0' });
    panels.set(tab.id, panel);
    main.appendChild(panel);
  }
  const signOut = h('button', { type: 'button', class: 'btn btn-plain btn-small' }, 'Sign out');
  signOut.addEventListener('click', async () => {
    signedIn = false;
    try {
      await post('/api/logout');
    } catch {
      /* logout is idempotent; show the sign-in page anyway */
    }
    history.replaceState(null, '', '/');
    showLogin('You have signed out.');
  });
  const changePassword = h('button', { type: 'button', class: 'btn btn-plain btn-small' }, 'Change password');
  changePassword.addEventListener('click', () => void changePasswordDialog());
  const header = h(
    'header',
    { class: 'topbar' },
    h('div', { class: 'topbar-inner' }, brand(), docsLinks(), h('div', { class: 'user' }, h('span', { class: 'user-name', title: 'Signed in as' }, username), changePassword, signOut)),
    h('div', { class: 'tabs-wrap' }, tablist),
  );
  clear(root);
  root.append(h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'), header, main);
  selectTab(tabFromHash(), false);
}

function tabFromHash(): string {
  const id = location.hash.replace(/^#/, '').split('/')[0];
  return TABS.some((t) => t.id === id) ? id : 'status';
}

let current = '';
function selectTab(id: string, focusPanel: boolean): void {
  const tab = TABS.find((t) => t.id === id) ?? TABS[0];
  current = tab.id;
  for (const t of TABS) {
    const on = t.id === tab.id;
    const btn = tabButtons.get(t.id)!;
    btn.setAttribute('aria-selected', String(on));
    btn.tabIndex = on ? 0 : -1;
    panels.get(t.id)!.hidden = !on;
  }
  if (location.hash.replace(/^#/, '').split('/')[0] !== tab.id) history.replaceState(null, '', `#${tab.id}`);
  document.title = `${tab.label} · Memory Store`;
  const panel = panels.get(tab.id)!;
  void Promise.resolve(tab.render(panel)).catch((err) => {
    clear(panel);
    panel.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
  });
  if (focusPanel) tabButtons.get(tab.id)!.focus();
}

/** WAI-ARIA tabs keyboard: arrows move, Home/End jump; activation follows focus. */
function onTabKey(ev: KeyboardEvent, id: string): void {
  const i = TABS.findIndex((t) => t.id === id);
  let next = -1;
  if (ev.key === 'ArrowRight') next = (i + 1) % TABS.length;
  else if (ev.key === 'ArrowLeft') next = (i - 1 + TABS.length) % TABS.length;
  else if (ev.key === 'Home') next = 0;
  else if (ev.key === 'End') next = TABS.length - 1;
  if (next < 0) return;
  ev.preventDefault();
  selectTab(TABS[next].id, true);
}

window.addEventListener('hashchange', () => {
  if (panels.size && tabFromHash() !== current) selectTab(tabFromHash(), false);
});

// ---- boot -------------------------------------------------------------------------------

let signedIn = false;
setUnauthorizedHandler(() => {
  if (!signedIn) return;
  signedIn = false;
  showLogin('Your session has ended. Sign in again.');
});

async function boot(typedPassword?: string): Promise<void> {
  let me: Me;
  try {
    me = await api<Me>('GET', '/api/me', undefined, { quiet401: true });
  } catch (err) {
    clear(root);
    root.appendChild(h('main', { class: 'login-page' }, errorBox(err instanceof ApiError ? err.message : 'The service cannot be reached.')));
    return;
  }
  if (me.authenticated && me.kind === 'admin') {
    signedIn = true;
    showShell(me.username ?? 'admin');
    // Still the generated password: ask for one of the admin's own (they may put it off).
    if (me.must_change_password) void changePasswordDialog({ first: true, current: typedPassword });
  } else {
    signedIn = false;
    showLogin();
  }
}

void boot();
