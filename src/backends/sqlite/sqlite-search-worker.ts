/**
 * A search worker thread (see SqliteSearchPool): its own connection to the SQLite file, used for
 * searches only. Messages in: `{ id, query }`, answered `{ id, result }` or `{ id, error }`, and
 * `{ close: true }`; a vector search carries its hits from the main thread's vector index (`semantic`).
 * Posts `{ ready: true }` once the file is open, or `{ failed }` when it cannot be.
 */
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';
import { translateSqliteError } from './sqlite-errors';
import { SqliteMemoryIndex } from './sqlite-memory-index';
import { SearchWorkerData, serializeError, WorkerRequest } from './sqlite-search-pool';

function main(): void {
  const port = parentPort;
  if (!port) return;
  const { file, index: opts } = workerData as SearchWorkerData;
  let db: Database.Database;
  let index: SqliteMemoryIndex;
  try {
    db = new Database(file, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    // This connection never writes (the main thread's connection owns every write and the schema).
    db.pragma('query_only = ON');
    index = new SqliteMemoryIndex(db, { ...opts, schema: false });
  } catch (e) {
    port.postMessage({ failed: (e as Error).message });
    port.close();
    return;
  }
  // One read transaction per search: every statement of it reads the same snapshot, as it does on
  // the main thread (where a search is one synchronous call between writes).
  const search = db.transaction((r: WorkerRequest) => index.searchNow(r.query, r.semantic ?? null));
  port.on('message', (msg: ({ id: number } & WorkerRequest) | { close: true }) => {
    if ('close' in msg) {
      if (db.open) db.close();
      port.close();
      return;
    }
    try {
      port.postMessage({ id: msg.id, result: search(msg) });
    } catch (e) {
      // Translated here, as on the main thread (BEGIN itself can fail outside the index's guard).
      port.postMessage({ id: msg.id, error: serializeError(translateSqliteError(e)) });
    }
  });
  port.postMessage({ ready: true });
}

main();
