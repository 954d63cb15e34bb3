/**
 * A few DOM helpers. Every piece of text from the server goes in through textContent or an
 * attribute; the only HTML string ever assigned is markdown-it output with html disabled
 * (see markdown.ts).
 */

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | EventListener>;

/** Creates an element. Keys starting with "on" are event listeners; `true` sets a boolean attribute. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Attrs | null = null, ...children: (Child | Child[])[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key.startsWith('on') && typeof value === 'function') {
        el.addEventListener(key.slice(2).toLowerCase(), value);
      } else if (key === 'value' && 'value' in el) {
        (el as HTMLInputElement).value = String(value);
      } else if (key === 'checked' && 'checked' in el) {
        (el as HTMLInputElement).checked = Boolean(value);
      } else {
        el.setAttribute(key, value === true ? '' : String(value));
      }
    }
  }
  append(el, ...children);
  return el;
}

export function append(el: Node, ...children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

export function clear(el: Element): void {
  el.replaceChildren();
}

/**
 * Starts a render of a panel and returns a check that says whether a newer render has started
 * since (so a slow answer does not draw over a newer view when tabs are switched quickly).
 */
export function beginRender(panel: HTMLElement): () => boolean {
  const gen = String(Number(panel.dataset.gen ?? '0') + 1);
  panel.dataset.gen = gen;
  return () => panel.dataset.gen !== gen;
}

let uid = 0;
/** A unique id for label/for and aria-describedby pairs. */
export function nextId(prefix = 'f'): string {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** A labelled form control: label above, optional help below (linked with aria-describedby). */
export function field(label: string, control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, help?: string | Node): HTMLElement {
  if (!control.id) control.id = nextId();
  const wrap = h('div', { class: 'field' }, h('label', { for: control.id }, label), control);
  if (help) {
    const helpId = nextId('help');
    control.setAttribute('aria-describedby', helpId);
    wrap.appendChild(h('p', { class: 'help', id: helpId }, help));
  }
  return wrap;
}

export function badge(text: string, tone: 'ok' | 'bad' | 'warn' | 'muted' | 'info' = 'muted'): HTMLElement {
  return h('span', { class: `badge badge-${tone}` }, text);
}

export function spinner(label = 'Loading…'): HTMLElement {
  return h('p', { class: 'loading', role: 'status' }, h('span', { class: 'spin', 'aria-hidden': 'true' }), label);
}

/** An inline error message, announced to screen readers. */
export function errorBox(message: string): HTMLElement {
  return h('div', { class: 'alert alert-error', role: 'alert' }, message);
}

// ---- toasts -----------------------------------------------------------------------------

let toastRegion: HTMLElement | null = null;

/** A short notice in a polite live region (errors use role=alert). */
export function toast(message: string, tone: 'ok' | 'error' = 'ok'): void {
  if (!toastRegion) {
    toastRegion = h('div', { class: 'toasts', 'aria-live': 'polite', 'aria-atomic': 'false' });
    document.body.appendChild(toastRegion);
  }
  const item = h('div', { class: `toast toast-${tone}`, role: tone === 'error' ? 'alert' : 'status' }, message);
  toastRegion.appendChild(item);
  setTimeout(() => item.remove(), tone === 'error' ? 8000 : 4000);
}

// ---- modal dialogs ----------------------------------------------------------------------

/**
 * Opens a modal <dialog> (focus trapped by the browser, Escape closes it) and resolves with
 * the value of the button that closed it ('' when dismissed).
 */
export function openDialog(
  title: string,
  body: (Node | string)[],
  buttons: { label: string; value: string; tone?: 'primary' | 'danger' | 'plain' }[],
  /** Runs before a non-cancel button closes the dialog; returning false keeps it open (e.g. to show an error). */
  onConfirm?: (value: string) => Promise<boolean>,
): Promise<string> {
  const titleId = nextId('dlg');
  const form = h('form', { method: 'dialog' });
  const dlg = h('dialog', { class: 'modal', 'aria-labelledby': titleId }, form);
  append(
    form,
    h('h2', { id: titleId }, title),
    h('div', { class: 'modal-body' }, ...body),
    h(
      'div',
      { class: 'modal-actions' },
      buttons.map((b) => h('button', { type: 'submit', value: b.value, class: `btn btn-${b.tone ?? 'plain'}` }, b.label)),
    ),
  );
  if (onConfirm) {
    form.addEventListener('submit', async (ev) => {
      const value = (ev.submitter as HTMLButtonElement | null)?.value ?? '';
      if (value === 'cancel') return;
      ev.preventDefault();
      const buttonsEls = Array.from(form.querySelectorAll('button'));
      buttonsEls.forEach((b) => (b.disabled = true));
      try {
        if (await onConfirm(value)) dlg.close(value);
      } finally {
        buttonsEls.forEach((b) => (b.disabled = false));
      }
    });
  }
  document.body.appendChild(dlg);
  dlg.showModal();
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      const value = dlg.returnValue;
      dlg.remove();
      resolve(value);
    });
  });
}

export async function confirmDialog(title: string, message: string, confirmLabel: string): Promise<boolean> {
  const v = await openDialog(
    title,
    [h('p', null, message)],
    [
      { label: 'Cancel', value: 'cancel' },
      { label: confirmLabel, value: 'ok', tone: 'danger' },
    ],
  );
  return v === 'ok';
}

// ---- clipboard --------------------------------------------------------------------------

export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Fallback for browsers without the async clipboard (or without permission).
    const ta = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true' });
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    ta.remove();
    return ok;
  }
}

/** A "Copy" button that copies what getText() returns and says so. */
export function copyButton(getText: () => string, label = 'Copy', small = true): HTMLButtonElement {
  const btn = h('button', { type: 'button', class: `btn btn-plain${small ? ' btn-small' : ''}` }, label);
  btn.addEventListener('click', async () => {
    const ok = await copyText(getText());
    btn.textContent = ok ? 'Copied' : 'Copy failed: select and copy by hand';
    toast(ok ? 'Copied to the clipboard' : 'Could not copy: select the text and copy it by hand', ok ? 'ok' : 'error');
    setTimeout(() => (btn.textContent = label), 2000);
  });
  return btn;
}

// ---- formatting -------------------------------------------------------------------------

export function formatDate(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
}

export function formatEpoch(sec: number | null | undefined): string {
  if (sec === null || sec === undefined) return 'Never';
  return formatDate(new Date(sec * 1000).toISOString());
}

/** A <time> element with the full timestamp in its title. */
export function timeEl(iso: string | null | undefined, empty = '—'): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, empty);
  return h('time', { datetime: iso, title: iso }, formatDate(iso));
}
