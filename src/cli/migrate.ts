import * as path from 'node:path';
import { BackendsService } from '../backends/backends.service';
import { SETTING_KEYS, SettingKey } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { migrate, MigrationInterruptedError, MigrationReport } from '../portability/migration';
import { closePair, openPair, planMigration } from '../portability/migration-target';
import { withApp } from './context';
import { Command, EXIT, parseOptions, Progress, UsageError } from './io';

const TO_FLAGS = Object.fromEntries(SETTING_KEYS.map((k) => [`to-${k.replace(/_/g, '-')}`, { type: 'string' as const }]));

export const migrateCommand: Command = {
  name: 'migrate',
  summary: 'Copy everything to another backend pair (resumable, verified)',
  usage: `memstore migrate [target options] [--checkpoint <file>]

Copies the memories (index and files, byte for byte), API tokens and admin sessions from the
backends the server is configured with (the source, only read) to another pair, then verifies
counts and checksums. Interrupted (Ctrl-C, a crash), it resumes from the checkpoint when run
again with the same target. Each part of the target defaults to the source's (then it is not copied).

Target options (each also as MEMSTORE_TO_<KEY>, e.g. MEMSTORE_TO_DOCDB_URI, to keep secrets off the command line):
  --to-docdb-uri <uri>            MongoDB (--to-docdb-db, --to-memory-collection)
  --to-objstore-bucket <bucket>   S3-compatible (--to-objstore-endpoint, --to-objstore-account-id,
                                  --to-objstore-access-key-id, --to-objstore-secret-access-key)
  --to-embedded-docdb             the embedded SQLite database in --to-data-dir
  --to-filesystem                 the filesystem store in --to-data-dir
  --to-data-dir <dir>             data directory of embedded target parts (default: MEMSTORE_DATA_DIR)
  --checkpoint <file>             default: <data dir>/migrate-checkpoint.json
Examples:
  embedded → MongoDB + S3:  MEMSTORE_TO_DOCDB_URI=mongodb://… MEMSTORE_TO_OBJSTORE_BUCKET=memories \\
                            MEMSTORE_TO_OBJSTORE_ACCESS_KEY_ID=… MEMSTORE_TO_OBJSTORE_SECRET_ACCESS_KEY=… memstore migrate
  MongoDB + S3 → embedded:  memstore migrate --to-embedded-docdb --to-filesystem --to-data-dir /data/new
  bucket → bucket:          memstore migrate --to-objstore-bucket new-bucket --to-objstore-endpoint …
Exit codes: 0 copied and verified, 1 failed or verification found differences, 2 usage, 130 interrupted (resumable).`,
  async run(args, env, io) {
    const { values } = parseOptions(args, {
      ...TO_FLAGS,
      'to-embedded-docdb': { type: 'boolean' },
      'to-filesystem': { type: 'boolean' },
      'to-data-dir': { type: 'string' },
      checkpoint: { type: 'string' },
    });
    const to: Partial<Record<SettingKey, string>> = {};
    for (const k of SETTING_KEYS) {
      const v = (values as Record<string, string | undefined>)[`to-${k.replace(/_/g, '-')}`] ?? env[`MEMSTORE_TO_${k.toUpperCase()}`];
      if (v) to[k] = v;
    }
    return withApp(
      env,
      async (app, cfg) => {
        const settings = app.get(SettingsService);
        const plan = planMigration({ settings: settings.current(), dataDir: cfg.dataDir }, to, {
          embeddedDocdb: values['to-embedded-docdb'] === true,
          filesystem: values['to-filesystem'] === true,
          dataDir: values['to-data-dir'],
        });
        if (!plan.copyDocdb && !plan.copyObjects) throw new UsageError('The target is the same as the source: give a target (see --help)');
        const backends = app.get(BackendsService);
        const source = { db: backends.docdb, store: backends.objstore };
        const target = await openPair(cfg, settings, plan.target);
        const abort = new AbortController();
        const onSignal = () => abort.abort();
        process.once('SIGINT', onSignal);
        process.once('SIGTERM', onSignal);
        const progress = new Progress(io, 'migrate');
        let phase = '';
        try {
          io.err(`source: ${source.db.describe()} + ${source.store.describe()}`);
          io.err(`target: ${plan.copyDocdb ? target.db.describe() : '(same document database)'} + ${plan.copyObjects ? target.store.describe() : '(same object store)'}`);
          const report = await migrate(source, target, {
            copyDocdb: plan.copyDocdb,
            copyObjects: plan.copyObjects,
            checkpointFile: path.resolve(values.checkpoint ?? path.join(cfg.dataDir, 'migrate-checkpoint.json')),
            signal: abort.signal,
            onProgress: (p) => {
              if (p.phase !== phase) {
                progress.finish();
                phase = p.phase;
              }
              progress.update(p.done, p.total, p.phase);
            },
          });
          progress.finish();
          for (const l of formatMigration(report)) io.out(l);
          if (!report.verified.ok) return EXIT.failed;
          io.out('Done. The source is untouched: point the service at the new backends (admin page or MEMSTORE_* settings), then remove the source when you no longer need it.');
          return EXIT.ok;
        } catch (e) {
          progress.finish();
          if (e instanceof MigrationInterruptedError) {
            io.err(e.message);
            return EXIT.interrupted;
          }
          throw e;
        } finally {
          process.off('SIGINT', onSignal);
          process.off('SIGTERM', onSignal);
          await closePair(target);
        }
      },
      { command: 'migrate', io, existing: true },
    );
  },
};

export function formatMigration(r: MigrationReport): string[] {
  const out = [`resumed from a checkpoint: ${r.resumed ? 'yes' : 'no'}`];
  if (r.memories) {
    out.push(`memories: source ${r.memories.source}, target ${r.memories.target} (copied ${r.memories.copied}, already there ${r.memories.existing})`);
    out.push(`tokens: copied ${r.tokens.copied}, already there ${r.tokens.existing}; admin sessions copied: ${r.sessions.copied}`);
  }
  if (r.objects) out.push(`objects: ${r.objects.source} in the source, ${r.objects.copied} copied`);
  if (r.verified.objects) out.push(`objects checksum: source ${r.verified.objects.source}, target ${r.verified.objects.target}`);
  if (r.verified.memories) out.push(`memories checksum: source ${r.verified.memories.source}, target ${r.verified.memories.target}`);
  out.push(`verified: ${r.verified.ok ? 'yes, counts and checksums match' : 'NO'}`);
  for (const p of r.verified.problems) out.push(`  - ${p}`);
  return out;
}
