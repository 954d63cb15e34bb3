import { ReindexReport, ReindexService } from '../memories/reindex.service';
import { Command, EXIT, parseOptions } from './io';
import { withApp } from './context';

export const reindexCommand: Command = {
  name: 'reindex',
  summary: 'Rebuild the memory index from the object store alone',
  usage: `memstore reindex

Rebuild the memory index from the object store alone (the markdown files' front matter and
bodies), then report counts, orphans (index entries without a file, dropped) and unreadable
files. Uses the same settings as the server (MEMSTORE_DATA_DIR, config file, MEMSTORE_*
environment). Exit code 1 when some files were unreadable.`,
  async run(args, env, io) {
    parseOptions(args, {});
    return withApp(env, async (app, cfg) => {
      io.out(`Rebuilding the memory index in ${cfg.dataDir} from the object store ...`);
      const report = await app.get(ReindexService).reindex();
      for (const line of formatReport(report)) io.out(line);
      return report.unreadable.length > 0 ? EXIT.failed : EXIT.ok;
    });
  },
};

export function formatReport(r: ReindexReport): string[] {
  const lines = [
    `memory files found: ${r.files}`,
    `memories indexed:   ${r.indexed}`,
    `index entries before: ${r.previous ?? 'unknown (the old index could not be read)'}`,
    `orphans (indexed, no file; dropped): ${r.orphans.length}`,
    ...r.orphans.map((id) => `  - ${id}`),
    `unreadable files: ${r.unreadable.length}`,
    ...r.unreadable.map((u) => `  - ${u.key}: ${u.reason}`),
  ];
  return lines;
}
