import * as path from 'node:path';
import { loadAppConfig } from '../config/app-config';
import { restore } from '../portability/backup';
import { Command, EXIT, parseOptions, UsageError } from './io';

export const restoreCommand: Command = {
  name: 'restore',
  summary: 'Restore a backup into an empty data directory',
  usage: `memstore restore <backup dir> [--data-dir <dir>]

Copies a backup made by "memstore backup" into the data directory (default MEMSTORE_DATA_DIR),
which must hold no database, objects or settings yet, and checks the restored database. Stop
the service first. Nothing else is needed afterwards (no reindex): start the service on it.
Exit codes: 0 restored, 1 failed, 2 usage.`,
  async run(args, env, io) {
    const { values, positionals } = parseOptions(args, { 'data-dir': { type: 'string' } }, 1);
    if (!positionals[0]) throw new UsageError('the backup directory is missing');
    const dataDir = path.resolve(values['data-dir'] ?? loadAppConfig(env).dataDir);
    const m = await restore(path.resolve(positionals[0]), dataDir);
    io.out(`restored ${m.memories} memories and ${m.tokens} tokens (backup of ${m.started_at}) into ${dataDir}`);
    if (!m.contains_secret_key) io.out('The backup has no secret.key: start the service with the same MEMSTORE_SECRET_KEY as before.');
    return EXIT.ok;
  },
};
