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
