#!/usr/bin/env node
import { Logger } from '@nestjs/common';
import * as readline from 'node:readline';
import { withDotEnv } from '../config/app-config';
import { adminCommand } from './admin';
import { backupCommand } from './backup';
import { embedCommand } from './embed';
import { exportCommand } from './export';
import { importCommand } from './import';
import { CliIo, Command, EXIT, UsageError } from './io';
import { migrateCommand } from './migrate';
import { reindexCommand } from './reindex';
import { restoreCommand } from './restore';

export type { CliIo } from './io';
export { formatReport } from './reindex';

const COMMANDS: Command[] = [reindexCommand, embedCommand, exportCommand, importCommand, migrateCommand, backupCommand, restoreCommand, adminCommand];

const USAGE = `Usage: memstore <command> [options]     (npm run <command> -- [options])

Commands:
${COMMANDS.map((c) => `  ${c.name.padEnd(9)} ${c.summary}`).join('\n')}

"memstore <command> --help" tells more. Every command uses the server's settings
(MEMSTORE_DATA_DIR, default ./data of the working directory; the config file and credential store
there; MEMSTORE_* environment, then a .env file in the working directory), names the data
directory and backends it acts on, and refuses to create an empty store to read from.
Exit codes: 0 success, 1 failure, 2 usage error, 130 interrupted.`;

/** Runs one command; returns the process exit code. */
export async function runCli(argv: string[], env: NodeJS.ProcessEnv = process.env, io: CliIo = defaultIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.out(USAGE);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    io.err(`Unknown command: ${name}\n\n${USAGE}`);
    return EXIT.usage;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    io.out(command.usage);
    return EXIT.ok;
  }
  try {
    return await command.run(rest, env, io);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`memstore ${name}: ${e.message}\n\n${command.usage}`);
      return EXIT.usage;
    }
    io.err(`memstore ${name} failed: ${(e as Error).message}`);
    return EXIT.failed;
  }
}

const defaultIo: CliIo = {
  out: (l) => process.stdout.write(`${l}\n`),
  err: (l) => process.stderr.write(`${l}\n`),
  rawErr: (t) => process.stderr.write(t),
  tty: process.stderr.isTTY === true,
  readSecret,
  interactive: process.stdin.isTTY === true,
};

/** One line from the terminal without echo, or the first line of a piped stdin. */
let stdinLines: AsyncIterator<string> | undefined;
async function readSecret(prompt: string): Promise<string | null> {
  if (!process.stdin.isTTY) {
    stdinLines ??= readline.createInterface({ input: process.stdin, terminal: false })[Symbol.asyncIterator]();
    const next = await stdinLines.next();
    return next.done ? null : next.value.replace(/\r$/, '');
  }
  const rl = readline.createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  process.stderr.write(prompt);
  // Echo nothing while the line is typed (readline writes through _writeToOutput).
  (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = () => undefined;
  try {
    return await new Promise<string | null>((resolve) => {
      rl.once('line', (line) => resolve(line));
      rl.once('close', () => resolve(null));
    });
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

if (require.main === module) {
  let env: NodeJS.ProcessEnv;
  try {
    env = withDotEnv();
  } catch (e) {
    process.stderr.write(`memstore: ${(e as Error).message}\n`);
    process.exit(EXIT.failed);
  }
  runCli(process.argv.slice(2), env)
    .then((code) => process.exit(code))
    .catch((e: Error) => {
      new Logger('cli').error(e.message);
      process.exit(1);
    });
}
