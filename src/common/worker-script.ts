import * as path from 'node:path';
import { Worker } from 'node:worker_threads';

/**
 * Starts the worker script `name` that sits next to `besideFile` (the caller's __filename):
 * compiled JS in production, TypeScript (through ts-node) under ts-jest / ts-node.
 */
export function startWorker(besideFile: string, name: string, workerData: unknown): Worker {
  const ext = path.extname(besideFile);
  const entry = path.join(path.dirname(besideFile), `${name}${ext}`);
  if (ext !== '.ts') return new Worker(entry, { workerData });
  const boot = `require('ts-node').register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } }); require(${JSON.stringify(entry)});`;
  return new Worker(boot, { eval: true, workerData });
}

/**
 * Asks a worker to stop (posts `message`), terminates it if it has not exited within `timeoutMs`,
 * and resolves once it has exited (at once if it had already).
 */
export async function stopWorker(worker: Worker, message: unknown, timeoutMs: number): Promise<void> {
  if (worker.threadId === -1) return; // no longer running
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage(message);
  const timer = setTimeout(() => void worker.terminate(), timeoutMs);
  await exited;
  clearTimeout(timer);
}
