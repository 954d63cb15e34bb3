/**
 * Trains the vector cache's IVF index off the main thread (sqlite-vector-cache.ts, startTraining):
 * reads the cache's shared buffers (workerData), posts `{ result: TrainOutput }` (shared
 * buffers: no copy) or `{ error }`, then exits.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { trainIvf } from './sqlite-vector-ivf';

interface TrainWorkerData {
  data: SharedArrayBuffer;
  seqs: SharedArrayBuffer;
  count: number;
  dims: number;
  lists: number;
}

function main(): void {
  const port = parentPort;
  if (!port) return;
  const w = workerData as TrainWorkerData;
  try {
    const out = trainIvf({ data: new Float32Array(w.data), seqs: new Int32Array(w.seqs), count: w.count, dims: w.dims, lists: w.lists });
    port.postMessage({ result: { lists: out.lists, centroids: out.centroids.buffer, assign: out.assign.buffer, assigned: out.assigned } });
  } catch (e) {
    port.postMessage({ error: (e as Error).message });
  }
  port.close();
}

main();
