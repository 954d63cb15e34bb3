import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

/** The service run as its own process (src/main.ts through ts-node), for tests that signal or kill it. */
export interface ServiceProcess {
  proc: ChildProcess;
  port: number;
  base: string;
  /** Resolves when the process has exited (with its exit code). */
  exited: Promise<number | null>;
  /** Everything it printed so far (stdout and stderr). */
  output: () => string;
}

/**
 * Starts the service on `dataDir` (embedded backends, port chosen by the system) with only the
 * settings given in `env` besides PATH, and resolves once it says where it listens.
 */
export function spawnService(dataDir: string, env: Record<string, string>): Promise<ServiceProcess> {
  const proc = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: path.resolve(__dirname, '../..'),
    env: { PATH: process.env.PATH, MEMSTORE_DATA_DIR: dataDir, MEMSTORE_PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 90_000);
    proc.stdout.on('data', () => {
      const m = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), base: `http://127.0.0.1:${m[1]}`, exited, output: () => out });
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${out}`));
    });
  });
}
