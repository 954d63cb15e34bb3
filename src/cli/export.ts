import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import * as fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { MemoriesService } from '../memories/memories.service';
import { ALL_NAMESPACES, namespaceNameProblem } from '../namespaces/namespace';
import { ExportQueryDto } from '../portability/dto/export-query.dto';
import { ExportService } from '../portability/export.service';
import { withApp } from './context';
import { Command, EXIT, parseOptions, Progress, UsageError } from './io';

export const exportCommand: Command = {
  name: 'export',
  summary: 'Write memories to a zip archive (markdown files + manifest)',
  usage: `memstore export --out <file.zip> [--namespace <name>] [filters]

Writes every memory (or those matching the filters) as memories/<id>.md with a manifest.json
and SHA256SUMS, like GET /api/export. The archive is streamed (flat memory use).

Options:
  --out <file>        the zip to write (required; "-" for stdout)
  --namespace <name>  only this namespace (default: every one); its backup, restored with
                      memstore import --namespace <name>
  --project <name>    --agent <name>    --type <type>    --scope <scope>
  --tag <tag>         (repeat for several; every tag must match)
  --since <ISO date>  --days <N>
Exit codes: 0 written, 1 failed, 2 usage.`,
  async run(args, env, io) {
    const { values } = parseOptions(args, {
      out: { type: 'string' },
      namespace: { type: 'string' },
      project: { type: 'string' },
      agent: { type: 'string' },
      type: { type: 'string' },
      scope: { type: 'string' },
      tag: { type: 'string', multiple: true },
      since: { type: 'string' },
      days: { type: 'string' },
    });
    if (!values.out) throw new UsageError('--out <file> is required');
    const { out, namespace, ...filters } = values;
    const nsProblem = namespace === undefined ? null : namespaceNameProblem(namespace);
    if (nsProblem) throw new UsageError(`--namespace: ${nsProblem}`);
    const q = plainToInstance(ExportQueryDto, filters);
    const problems = await validate(q);
    if (problems.length > 0) throw new UsageError(problems.map((p) => `--${p.property}: ${Object.values(p.constraints ?? {}).join(', ')}`).join('\n'));
    return withApp(
      env,
      async (app) => {
        const progress = new Progress(io, 'export');
        const { output, done, total } = await app.get(ExportService).start({
          // An operator tool: every namespace (issue 43), or the one named.
          filter: app.get(MemoriesService).filterOf(namespace ?? ALL_NAMESPACES, q),
          filters: Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== undefined)),
          onProgress: (n, t) => progress.update(n, t, 'memories'),
        });
        const dest = out === '-' ? process.stdout : fs.createWriteStream(out, { mode: 0o600 });
        const [, manifest] = await Promise.all([pipeline(output, dest), done]);
        progress.finish();
        io.err(`exported ${manifest.count} of ${total} memories to ${out === '-' ? 'stdout' : out}`);
        return EXIT.ok;
      },
      { command: 'export', io, existing: true },
    );
  },
};
