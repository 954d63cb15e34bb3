import { DynamicModule, Logger, LogLevel, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BackendsModule } from './backends/backends.module';
import { AppConfig, loadAppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { MemoriesModule } from './memories/memories.module';
import { ReindexReport, ReindexService } from './memories/reindex.service';

/**
 * What the command line needs: configuration, the backends and the memory services. Not the
 * whole AppModule: no HTTP pipeline, and no admin sign-in start-up (which would generate and
 * print an admin password on a fresh data directory).
 */
@Module({})
export class CliModule {
  static register(cfg: AppConfig): DynamicModule {
    return { module: CliModule, imports: [ConfigModule.forRoot(cfg), BackendsModule, MemoriesModule] };
  }
}

const USAGE = `Usage: node dist/src/cli <command>

Commands:
  reindex [--dry-run] [--include-unacknowledged]
            Rebuild the memory index from the object store alone (the markdown files' front
            matter and bodies; every kept version becomes history), then report counts, orphans
            (index entries without a file, dropped), unreadable files and files of writes that
            were never acknowledged (left out unless --include-unacknowledged). The store is read
            completely before the index is replaced: a failing store leaves the old index.
            --dry-run reads and reports only. Uses the same settings as the server
            (MEMSTORE_DATA_DIR, config file, MEMSTORE_* environment).
`;

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

/** Runs one command; returns the process exit code (0 ok, 1 failure, 2 usage). */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env, io: CliIo = defaultIo): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    io.out(USAGE);
    return command === undefined ? 2 : 0;
  }
  const flags = new Set(rest);
  if (command !== 'reindex' || [...flags].some((f) => f !== '--dry-run' && f !== '--include-unacknowledged')) {
    io.err(`Unknown command or argument: ${argv.join(' ')}\n\n${USAGE}`);
    return 2;
  }
  const cfg = loadAppConfig(env);
  const levels: LogLevel[] | false = cfg.logLevel === 'silent' ? false : ['error', 'warn'];
  const app = await NestFactory.createApplicationContext(CliModule.register(cfg), { logger: levels });
  try {
    const dryRun = flags.has('--dry-run');
    io.out(`${dryRun ? 'Dry run: reading' : 'Rebuilding'} the memory index in ${cfg.dataDir} from the object store ...`);
    const report = await app.get(ReindexService).reindex({ dryRun, includeUnacknowledged: flags.has('--include-unacknowledged') });
    for (const line of formatReport(report)) io.out(line);
    return report.unreadable.length > 0 ? 1 : 0;
  } finally {
    await app.close();
  }
}

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
  ];
  return lines;
}

const defaultIo: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
};

if (require.main === module) {
  runCli(process.argv.slice(2))
    .then((code) => process.exit(code))
    .catch((e: Error) => {
      new Logger('cli').error(e.message);
      process.exit(1);
    });
}
