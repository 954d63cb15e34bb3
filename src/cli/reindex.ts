import { ReindexReport, ReindexService } from '../memories/reindex.service';
import { Command, EXIT, parseOptions, Progress } from './io';
import { withApp } from './context';

export const reindexCommand: Command = {
  name: 'reindex',
  summary: 'Rebuild the memory index from the object store alone',
  usage: `memstore reindex [--dry-run] [--include-unacknowledged]

Rebuild the memory index from the object store alone (the markdown files' front matter and
bodies; every kept version becomes history), then report counts, orphans (index entries without
a file, dropped), unreadable files and files of writes that were never acknowledged (left out
unless --include-unacknowledged). The store is read completely before the index is replaced: a
failing store leaves the old index. --dry-run reads and reports only. Uses the same settings as
the server (MEMSTORE_DATA_DIR, config file, MEMSTORE_* environment). Exit code 1 when some files
were unreadable.`,
  async run(args, env, io) {
    const { values } = parseOptions(args, { 'dry-run': { type: 'boolean' }, 'include-unacknowledged': { type: 'boolean' } });
    const dryRun = values['dry-run'] === true;
    return withApp(
      env,
      async (app, cfg) => {
        io.out(`${dryRun ? 'Dry run: reading' : 'Rebuilding'} the memory index in ${cfg.dataDir} from the object store ...`);
        let progress = new Progress(io, 'reindex');
        let phase = '';
        const report = await app.get(ReindexService).reindex({
          dryRun,
          includeUnacknowledged: values['include-unacknowledged'] === true,
          onProgress: (n, total, what) => {
            if (what !== phase) {
              progress.finish();
              progress = new Progress(io, 'reindex');
              phase = what;
            }
            progress.update(n, total, what);
          },
        });
        progress.finish();
        for (const line of formatReport(report)) io.out(line);
        return report.unreadable.length > 0 ? EXIT.failed : EXIT.ok;
      },
      { command: 'reindex', io, existing: true },
    );
  },
};

export function formatReport(r: ReindexReport): string[] {
  const lines = [
    `memory files found: ${r.files}`,
    `memories indexed:   ${r.indexed}${r.dryRun ? ' (dry run: would be; the index was not changed)' : ''}`,
    `index entries before: ${r.previous ?? 'unknown (the old index could not be read)'}`,
    `orphans (indexed, no file; dropped): ${r.orphans.length}`,
    ...r.orphans.map((id) => `  - ${id}`),
    `unreadable files: ${r.unreadable.length}`,
    ...r.unreadable.map((u) => `  - ${u.key}: ${u.reason}`),
    `unacknowledged writes (left out): ${r.unacknowledged.length}`,
    ...r.unacknowledged.map((k) => `  - ${k}`),
    `superseded files (lost writes, pruned versions; left out): ${r.superseded.length}`,
    ...r.superseded.map((k) => `  - ${k}`),
    `memories being deleted (left out): ${r.deleted.length}`,
    ...r.deleted.map((id) => `  - ${id}`),
  ];
  return lines;
}
