import { DynamicModule, Logger, LogLevel, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { BackendsModule } from './backends/backends.module';
import { AppConfig, loadAppConfig } from './config/app-config';
import { ConfigModule } from './config/config.module';
import { EmbeddingsModule } from './embeddings/embeddings.module';
import { EmbeddingsService } from './embeddings/embeddings.service';
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
    return { module: CliModule, imports: [ConfigModule.forRoot(cfg), BackendsModule, EmbeddingsModule, MemoriesModule] };
  }
}

const USAGE = `Usage: node dist/src/cli <command>

Commands:
  reindex   Rebuild the memory index from the object store alone (the markdown files' front
            matter and bodies), then report counts, orphans (index entries without a file,
            dropped) and unreadable files. Uses the same settings as the server
            (MEMSTORE_DATA_DIR, config file, MEMSTORE_* environment).
  embed     Compute every missing embedding now (after a reindex or a change of model), with a
            progress bar, then exit. A running server does the same in the background.
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
  if ((command !== 'reindex' && command !== 'embed') || rest.length > 0) {
    io.err(`Unknown command or argument: ${argv.join(' ')}\n\n${USAGE}`);
    return 2;
  }
  // The background embedding worker is the server's; `embed` drives it here instead.
  const cfg = loadAppConfig(env, { embeddingWorker: false });
  const levels: LogLevel[] | false = cfg.logLevel === 'silent' ? false : ['error', 'warn'];
  const app = await NestFactory.createApplicationContext(CliModule.register(cfg), { logger: levels });
  try {
    if (command === 'embed') return await embedAll(app.get(EmbeddingsService), io);
    io.out(`Rebuilding the memory index in ${cfg.dataDir} from the object store ...`);
    const report = await app.get(ReindexService).reindex();
    for (const line of formatReport(report)) io.out(line);
    return report.unreadable.length > 0 ? 1 : 0;
  } finally {
    await app.close();
  }
}

/** Drains the embedding queue in this process, drawing a progress bar; 1 when search is keyword-only or jobs keep failing. */
async function embedAll(embeddings: EmbeddingsService, io: CliIo): Promise<number> {
  let s = await embeddings.status();
  if (s.state === 'keyword-only') {
    io.err(`Search is keyword-only: ${s.reason ?? 'no embedding model'}`);
    return 1;
  }
  io.out(`Embedding with ${s.provider} (${s.model}, ${s.dimensions ?? '?'} dimensions): ${s.pending} waiting`);
  const total = (s.pending ?? 0) + (s.embedded ?? 0);
  const tty = process.stdout.isTTY === true;
  let stalled = 0;
  while ((s.pending ?? 0) > 0 && stalled < 3) {
    const worked = await embeddings.drainOnce();
    s = await embeddings.status();
    stalled = worked === 0 ? stalled + 1 : 0;
    const line = `${progressBar((s.embedded ?? 0) / Math.max(1, total))} ${s.embedded}/${total}`;
    if (tty) process.stdout.write(`\r${line}`);
    else if (worked > 0 && (s.embedded ?? 0) % 500 < worked) io.out(line);
  }
  if (tty) process.stdout.write('\n');
  io.out(`embedded: ${s.embedded}, waiting: ${s.pending}${s.failing ? `, failing: ${s.failing} (${s.last_error})` : ''}`);
  return (s.pending ?? 0) === 0 ? 0 : 1;
}

function progressBar(share: number, width = 30): string {
  const n = Math.round(Math.max(0, Math.min(1, share)) * width);
  return `[${'#'.repeat(n)}${'.'.repeat(width - n)}] ${(share * 100).toFixed(0).padStart(3)}%`;
}

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
