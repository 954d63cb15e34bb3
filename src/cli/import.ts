import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_NAMESPACE, namespaceNameProblem } from '../namespaces/namespace';
import { IMPORT_FORMATS, ImportFormat, ImportService, ON_CONFLICT, OnConflict } from '../portability/import.service';
import { withApp } from './context';
import { Command, EXIT, parseOptions, Progress, UsageError } from './io';

export const importCommand: Command = {
  name: 'import',
  summary: 'Import memories from an export zip, a zip of markdown notes, a markdown file or JSONL',
  usage: `memstore import <file> [--on-conflict skip|overwrite|new_id] [--dry-run] [--format auto|zip|jsonl|markdown] [--namespace <name>]

Imports like POST /api/import: ids and timestamps of our own archives are kept, plain notes get
a title from their first heading or file name and tags from #tags. Importing the same file
twice changes nothing the second time. Into namespace --namespace (default: default).
Exit codes: 0 done (nothing invalid), 1 some files were invalid (see the report) or it failed, 2 usage.`,
  async run(args, env, io) {
    const { values, positionals } = parseOptions(
      args,
      {
        'on-conflict': { type: 'string', default: 'skip' },
        'dry-run': { type: 'boolean', default: false },
        format: { type: 'string', default: 'auto' },
        namespace: { type: 'string', default: DEFAULT_NAMESPACE },
      },
      1,
    );
    const file = positionals[0];
    if (!file) throw new UsageError('the file to import is missing');
    if (!ON_CONFLICT.includes(values['on-conflict'] as OnConflict)) throw new UsageError(`--on-conflict must be one of ${ON_CONFLICT.join(', ')}`);
    if (!IMPORT_FORMATS.includes(values.format as ImportFormat)) throw new UsageError(`--format must be one of ${IMPORT_FORMATS.join(', ')}`);
    const nsProblem = namespaceNameProblem(values.namespace);
    if (nsProblem) throw new UsageError(`--namespace: ${nsProblem}`);
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new UsageError(`${file} is not a file (zip a folder of notes first: zip -r notes.zip notes/)`);
    return withApp(
      env,
      async (app) => {
        const progress = new Progress(io, 'import');
        const report = await app.get(ImportService).importFile(file, {
          onConflict: values['on-conflict'] as OnConflict,
          dryRun: values['dry-run'] === true,
          format: values.format as ImportFormat,
          filename: path.basename(file),
          namespace: values.namespace,
          onItem: (_item, n) => progress.update(n, null, 'files'),
        });
        progress.finish();
        const verb = report.dry_run ? 'would be ' : '';
        io.out(`${report.format}: ${report.processed} files; ${verb}created ${report.created}, ${verb}updated ${report.updated}, skipped ${report.skipped}, invalid ${report.invalid}`);
        for (const i of report.items) if (i.status === 'invalid') io.out(`  invalid ${i.file}: ${i.reason}`);
        if (report.items_omitted > 0) io.out(`  (${report.items_omitted} more files not listed)`);
        return report.invalid > 0 ? EXIT.failed : EXIT.ok;
      },
      { command: 'import', io, existing: false },
    );
  },
};
