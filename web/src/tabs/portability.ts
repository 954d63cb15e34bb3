import { ApiError, get, post, query } from '../api';
import { beginRender, clear, errorBox, field, h, spinner, toast } from '../dom';
import { MEMORY_SCOPES, MEMORY_TYPES, type Tab } from '../types';

interface ImportItem {
  file: string;
  status: 'created' | 'updated' | 'skipped' | 'invalid';
  id: string | null;
  reason: string | null;
}
interface ImportReport {
  dry_run: boolean;
  format: string;
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  invalid: number;
  /** Earlier versions restored into memories' history. */
  versions?: number;
  items: ImportItem[];
  items_omitted: number;
}
interface MigrationJob {
  state: 'running' | 'done' | 'failed';
  phase: string;
  done: number;
  total: number | null;
  error: string | null;
  report: { verified: { ok: boolean; problems: string[] }; memories: { source: number; target: number } | null } | null;
}
interface MigrationOffer {
  available: boolean;
  source: string | null;
  target: string;
  memories: number | null;
  reason: string | null;
  job: MigrationJob | null;
}

function select(name: string, values: readonly string[], empty: string): HTMLSelectElement {
  return h(
    'select',
    { name },
    h('option', { value: '' }, empty),
    values.map((v) => h('option', { value: v }, v)),
  );
}

function exportSection(): HTMLElement {
  const project = h('input', { name: 'project', autocomplete: 'off' });
  const agent = h('input', { name: 'agent', autocomplete: 'off' });
  const type = select('type', MEMORY_TYPES, 'Any type');
  const scope = select('scope', MEMORY_SCOPES, 'Any scope');
  const tags = h('input', { name: 'tags', autocomplete: 'off', placeholder: 'ops, infra' });
  const since = h('input', { name: 'since', type: 'date' });
  const link = h('a', { class: 'btn btn-primary', id: 'export-link', href: '/api/export', download: '' }, 'Export');
  const update = () => {
    link.href = `/api/export${query({
      project: project.value.trim(),
      agent: agent.value.trim(),
      type: type.value,
      scope: scope.value,
      tag: tags.value
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean),
      since: since.value ? new Date(`${since.value}T00:00:00Z`).toISOString() : '',
    })}`;
  };
  for (const c of [project, agent, type, scope, tags, since]) c.addEventListener('input', update);
  update();
  return h(
    'section',
    { class: 'card', 'aria-labelledby': 'export-title' },
    h('h3', { id: 'export-title' }, 'Export'),
    h('p', { class: 'help' }, 'A zip of markdown files (front matter + content, readable in any editor or Obsidian) with a manifest and SHA256SUMS. Leave the filters empty to export everything.'),
    h(
      'div',
      { class: 'form-grid' },
      field('Project', project),
      field('Agent', agent),
      field('Type', type),
      field('Scope', scope),
      field('Tags (all of)', tags, 'Comma-separated'),
      field('Created since', since),
    ),
    link,
  );
}

function importSection(): HTMLElement {
  const file = h('input', { name: 'file', type: 'file', accept: '.zip,.md,.markdown,.jsonl,.ndjson' });
  const onConflict = h(
    'select',
    { name: 'on_conflict' },
    h('option', { value: 'skip' }, 'Keep the existing memory (skip)'),
    h('option', { value: 'overwrite' }, 'Overwrite it'),
    h('option', { value: 'new_id' }, 'Import a copy under a new id'),
  );
  const dry = h('input', { name: 'dry_run', type: 'checkbox', checked: true });
  const run = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Import');
  const progress = h('p', { class: 'muted', role: 'status', 'aria-live': 'polite' });
  const result = h('div', { id: 'import-report' });
  const form = h(
    'form',
    { novalidate: true },
    field('File', file, 'An export zip, a zip of markdown notes, a markdown file, or JSONL (one memory per line)'),
    field('When a memory with the same id exists with other content', onConflict),
    h('label', { class: 'check' }, dry, ' Dry run: only report what would happen'),
    h('div', { class: 'actions' }, run),
    progress,
    result,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(result);
    const f = file.files?.[0];
    if (!f) {
      result.appendChild(errorBox('Choose a file to import.'));
      file.focus();
      return;
    }
    run.disabled = true;
    progress.textContent = `Uploading ${f.name}…`;
    try {
      const report = await upload(f, onConflict.value, dry.checked, (n) => (progress.textContent = `${n} file${n === 1 ? '' : 's'} processed…`));
      progress.textContent = '';
      result.appendChild(renderReport(report));
      if (!report.dry_run) toast(`Imported: ${report.created} created, ${report.updated} updated`);
    } catch (err) {
      progress.textContent = '';
      result.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
    } finally {
      run.disabled = false;
    }
  });
  return h('section', { class: 'card', 'aria-labelledby': 'import-title' }, h('h3', { id: 'import-title' }, 'Import'), form);
}

/** POST /api/import with the file as the body, reading the NDJSON progress lines as they come. */
async function upload(f: File, onConflict: string, dryRun: boolean, onProgress: (n: number) => void): Promise<ImportReport> {
  const res = await fetch(`/api/import${query({ on_conflict: onConflict, dry_run: String(dryRun), filename: f.name, progress: 'true' })}`, {
    method: 'POST',
    credentials: 'same-origin',
    headers: { 'Content-Type': f.type && f.type !== 'application/json' ? f.type : 'application/octet-stream', Accept: 'application/x-ndjson' },
    body: f,
  });
  if (!res.ok || !res.body) {
    const body = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    throw new ApiError(res.status, typeof body?.error === 'string' ? body.error : `Import failed (HTTP ${res.status})`, body, null);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buf += value;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = JSON.parse(buf.slice(0, nl)) as Record<string, unknown>;
      buf = buf.slice(nl + 1);
      if (line.type === 'item') onProgress(Number(line.processed));
      else if (line.type === 'report') return line as unknown as ImportReport;
      else if (line.type === 'error') throw new ApiError(Number(line.status), String(line.error), null, null);
    }
    if (done) throw new ApiError(0, 'The import stopped before its report (connection lost)', null, null);
  }
}

function renderReport(r: ImportReport): HTMLElement {
  const verb = (what: string) => (r.dry_run ? `Would be ${what}` : `${what[0].toUpperCase()}${what.slice(1)}`);
  const counts = h(
    'ul',
    { class: 'counts' },
    h('li', null, `${verb('created')}: `, h('strong', { 'data-count': 'created' }, String(r.created))),
    h('li', null, `${verb('updated')}: `, h('strong', { 'data-count': 'updated' }, String(r.updated))),
    h('li', null, 'Skipped: ', h('strong', { 'data-count': 'skipped' }, String(r.skipped))),
    h('li', null, 'Invalid: ', h('strong', { 'data-count': 'invalid' }, String(r.invalid))),
    r.versions ? h('li', null, `Earlier versions ${r.dry_run ? 'that would be ' : ''}restored: `, h('strong', { 'data-count': 'versions' }, String(r.versions))) : null,
  );
  const rows = r.items.map((i) => h('tr', { 'data-status': i.status }, h('td', null, h('code', null, i.file)), h('td', null, i.status), h('td', null, i.reason ?? '')));
  return h(
    'div',
    { class: r.invalid > 0 ? 'alert alert-warn' : 'alert alert-ok', role: 'status' },
    h('p', null, `${r.dry_run ? 'Dry run' : 'Import'} of ${r.processed} file${r.processed === 1 ? '' : 's'} (${r.format}).`),
    counts,
    h('table', { class: 'table' }, h('thead', null, h('tr', null, h('th', null, 'File'), h('th', null, 'Result'), h('th', null, 'Reason'))), h('tbody', null, rows)),
    r.items_omitted > 0 ? h('p', { class: 'help' }, `${r.items_omitted} more files are not listed.`) : null,
  );
}

/**
 * "Copy the N memories to the new backends": shown when the backends changed (also on the
 * Configuration tab after a save). Null when there is nothing to copy.
 */
export async function migrationOffer(): Promise<HTMLElement | null> {
  const offer = await get<MigrationOffer>('/api/migrate');
  if (!offer.available && !offer.job) return null;
  const box = h('div', { class: 'alert alert-info', id: 'migration-offer' });
  const draw = (o: MigrationOffer) => {
    clear(box);
    const job = o.job;
    if (job?.state === 'running') {
      box.append(h('p', { role: 'status' }, `Copying to the new backends: ${job.phase} ${job.done}${job.total ? ` of ${job.total}` : ''}…`));
      setTimeout(() => void get<MigrationOffer>('/api/migrate').then(draw, () => undefined), 1000);
      return;
    }
    if (job?.state === 'done' && job.report)
      box.append(
        h(
          'p',
          { role: 'status' },
          `Copied and verified: the new backends hold ${job.report.memories?.target ?? 'all'} memories. The earlier backends are untouched; remove them when you no longer need them.`,
        ),
      );
    if (job?.state === 'failed') box.append(errorBox(`The copy failed: ${job.error ?? 'unknown error'}. Try again: it resumes where it stopped.`));
    if (o.available && job?.state !== 'done') {
      const btn = h('button', { type: 'button', class: 'btn btn-primary', id: 'migration-start' }, `Copy the ${o.memories ?? ''} memories to the new backends`.replace('  ', ' '));
      btn.addEventListener('click', async () => {
        btn.disabled = true;
        try {
          await post('/api/migrate');
          draw(await get<MigrationOffer>('/api/migrate'));
        } catch (err) {
          box.appendChild(errorBox(err instanceof ApiError ? err.describe() : String(err)));
          btn.disabled = false;
        }
      });
      box.append(h('p', null, `The earlier backends (${o.source ?? 'unknown'}) hold ${o.memories ?? 'some'} memories; the active ones are ${o.target}. Memories are not moved by themselves.`), btn);
    }
  };
  draw(offer);
  return box;
}

export const portabilityTab: Tab = {
  id: 'portability',
  label: 'Export / Import',
  async render(panel) {
    const stale = beginRender(panel);
    clear(panel);
    panel.appendChild(spinner());
    let offer: HTMLElement | null = null;
    try {
      offer = await migrationOffer();
    } catch {
      offer = null; // the offer is optional; export and import work without it
    }
    if (stale()) return;
    clear(panel);
    panel.append(
      h('div', { class: 'panel-head' }, h('h2', null, 'Export / Import')),
      h('p', { class: 'lead' }, 'Take your memories out as markdown files, bring notes in, and move between backends. The command line does the same: memstore export, import, migrate, backup.'),
      offer ?? '',
      exportSection(),
      importSection(),
    );
  },
};
