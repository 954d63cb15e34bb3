import * as path from 'node:path';
import { BackendsService } from '../backends/backends.service';
import { SqliteDocumentDatabase } from '../backends/sqlite/sqlite-database';
import { backup } from '../portability/backup';
import { withApp } from './context';
import { Command, EXIT, parseOptions, Progress, UsageError } from './io';

export const backupCommand: Command = {
  name: 'backup',
  summary: 'Consistent backup of the embedded default while it serves',
  usage: `memstore backup <dir>

Backs up the embedded database (SQLite online backup: index, tokens, sessions), the markdown file
of every memory in that snapshot, the settings and the credential store with secret.key, into a
new directory, without stopping the service. The backup holds secret.key when the data directory
has one: it decrypts the stored MongoDB/S3 credentials, so keep the backup as safe as a password.
For MongoDB + S3 use mongodump and bucket versioning (docs/production-backends.md).
Exit codes: 0 done, 1 failed, 2 usage.`,
  async run(args, env, io) {
    const { positionals } = parseOptions(args, {}, 1);
    if (!positionals[0]) throw new UsageError('the backup directory is missing');
    const dir = path.resolve(positionals[0]);
    return withApp(
      env,
      async (app, cfg) => {
        const backends = app.get(BackendsService);
        const db = backends.docdb;
        if (!(db instanceof SqliteDocumentDatabase)) {
          throw new UsageError(`The document database is ${db.describe()}: back it up with mongodump (see docs/production-backends.md)`);
        }
        const progress = new Progress(io, 'backup');
        const m = await backup({ dbFile: db.file, store: backends.objstore, dataDir: cfg.dataDir }, dir, (n, t) => progress.update(n, t, 'memories'));
        progress.finish();
        io.out(`backup of ${m.memories} memories and ${m.tokens} tokens as of ${m.started_at} in ${dir}`);
        if (m.rewritten > 0) io.out(`${m.rewritten} file(s) changed after the snapshot were written as they were at the snapshot`);
        if (m.contains_secret_key) io.out('It contains secret.key: keep it as safe as a password.');
        else io.out('It does not contain the master secret: restoring needs the same MEMSTORE_SECRET_KEY.');
        return EXIT.ok;
      },
      { command: 'backup', io, existing: true },
    );
  },
};
