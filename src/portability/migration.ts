import { ALL_NAMESPACES } from '../namespaces/namespace';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type { DocumentDatabase } from '../backends/ports/document-database.port';
import type { ListCursor, MemoryDoc } from '../backends/ports/memory.model';
import type { ObjectStore } from '../backends/ports/object-store.port';
import { ConflictError, NotFoundError } from '../common/errors';
import { writeFileAtomic } from '../config/atomic-file';

/** One side of a migration: a document database and an object store (open). */
export interface BackendPair {
  db: DocumentDatabase;
  store: ObjectStore;
}

export type MigrationPhase = 'tokens' | 'sessions' | 'objects' | 'memories' | 'verify';

export interface MigrationProgress {
  phase: MigrationPhase;
  done: number;
  /** null while unknown. */
  total: number | null;
}

export interface MigrationOptions {
  /** Copy the document database part (index, tokens, sessions): false when source and target share it. */
  copyDocdb: boolean;
  /** Copy the object store part: false when source and target share it. */
  copyObjects: boolean;
  /** Where progress is saved; an existing checkpoint of the same source and target resumes. */
  checkpointFile?: string;
  /** Aborting stops after the batch in flight, with the checkpoint saved (MigrationInterruptedError). */
  signal?: AbortSignal;
  onProgress?(p: MigrationProgress): void;
  /** Allow a target that already holds memories (e.g. the live target of the admin page). */
  allowNonEmptyTarget?: boolean;
}

export interface MigrationReport {
  resumed: boolean;
  tokens: { copied: number; existing: number };
  sessions: { copied: number };
  objects: { source: number; copied: number } | null;
  memories: { source: number; copied: number; existing: number; target: number } | null;
  verified: {
    ok: boolean;
    /** sha256 over every source object (key + content digest), and the same over the target's copies. */
    objects: { source: string; target: string } | null;
    /** sha256 over every source memory (all fields), and the same over the target's. */
    memories: { source: string; target: string } | null;
    problems: string[];
  };
}

export class MigrationInterruptedError extends Error {
  constructor(readonly checkpointFile: string | undefined) {
    super(`Migration interrupted; ${checkpointFile ? `progress saved in ${checkpointFile}, run it again to resume` : 'run it again to start over'}`);
  }
}

interface Checkpoint {
  v: 1;
  source: string;
  target: string;
  objects: { lastKey: string | null; copied: number; done: boolean };
  memories: { cursors: Array<{ createdAt: string; id: string } | null> | null; nextPage: number; copied: number; existing: number; done: boolean };
}

const PAGE = 500;
const PARALLEL = 8;
const MAX_PROBLEMS = 50;

/**
 * Copies everything from one backend pair to another (issue 12, point 3), through the ports only:
 * every object of the store byte for byte (whatever its layout: current files, versions), every
 * memory of the index (oldest first, so the embedded index keeps its time order) with its version
 * history rows (the objects they name are among the objects copied), the API tokens
 * and the live admin sessions. Resumable: progress goes to a checkpoint after every batch. The
 * source is only read. At the end it verifies counts and checksums of both sides.
 */
export async function migrate(source: BackendPair, target: BackendPair, opts: MigrationOptions): Promise<MigrationReport> {
  const ids = { source: `${source.db.describe()} + ${source.store.describe()}`, target: `${target.db.describe()} + ${target.store.describe()}` };
  let cp = loadCheckpoint(opts.checkpointFile, ids.source, ids.target);
  const resumed = cp !== null;
  if (!cp) {
    if (opts.copyDocdb && !opts.allowNonEmptyTarget) {
      const n = await target.db.memories.count(ALL_NAMESPACES);
      if (n > 0) throw new Error(`The target ${target.db.describe()} already holds ${n} memories; migrate into an empty one`);
    }
    cp = { v: 1, ...ids, objects: { lastKey: null, copied: 0, done: !opts.copyObjects }, memories: { cursors: null, nextPage: 0, copied: 0, existing: 0, done: !opts.copyDocdb } };
  }
  const state = cp;
  const save = () => {
    if (opts.checkpointFile) writeFileAtomic(opts.checkpointFile, JSON.stringify(state) + '\n', 0o600);
  };
  const stopIfAsked = () => {
    if (opts.signal?.aborted) {
      save();
      throw new MigrationInterruptedError(opts.checkpointFile);
    }
  };
  const progress = (phase: MigrationPhase, done: number, total: number | null) => opts.onProgress?.({ phase, done, total });
  const report: MigrationReport = {
    resumed,
    tokens: { copied: 0, existing: 0 },
    sessions: { copied: 0 },
    objects: null,
    memories: null,
    verified: { ok: true, objects: null, memories: null, problems: [] },
  };

  if (opts.copyDocdb) {
    // Tokens and sessions: small; copied again on a resume (those present are left alone).
    const tokens = await source.db.tokens.list();
    for (const t of tokens) {
      if (await target.db.tokens.findById(t.id)) report.tokens.existing++;
      else {
        await target.db.tokens.create(t);
        report.tokens.copied++;
      }
    }
    progress('tokens', tokens.length, tokens.length);
    const sessions = await source.db.sessions.all();
    for (const s of sessions) {
      if (await target.db.sessions.get(s.sid)) continue;
      await target.db.sessions.set(s);
      report.sessions.copied++;
    }
    progress('sessions', sessions.length, sessions.length);
  }

  if (!state.objects.done) {
    // Objects in the source's listing order; the checkpoint holds the last key of a finished batch.
    let skipping = state.objects.lastKey !== null;
    let seen = 0;
    let batch: string[] = [];
    const flush = async () => {
      await inParallel(batch, async (key) => target.store.put(key, await source.store.get(key), contentType(key)));
      state.objects.copied += batch.length;
      state.objects.lastKey = batch[batch.length - 1];
      batch = [];
      save();
      progress('objects', state.objects.copied, null);
      stopIfAsked();
    };
    for await (const key of source.store.list('')) {
      seen++;
      if (skipping) {
        if (key === state.objects.lastKey) skipping = false;
        continue;
      }
      batch.push(key);
      if (batch.length >= PARALLEL * 4) await flush();
    }
    if (batch.length > 0) await flush();
    if (skipping) {
      // The checkpoint's last key is gone from the source: copy everything again (puts are idempotent).
      state.objects = { lastKey: null, copied: 0, done: false };
      save();
      return migrate(source, target, opts);
    }
    state.objects.done = true;
    save();
    report.objects = { source: seen, copied: state.objects.copied };
  }

  if (!state.memories.done) {
    if (state.memories.cursors === null) {
      // Page boundaries, newest first (only the cursors are kept: flat memory), then pages are copied oldest first.
      const cursors: Checkpoint['memories']['cursors'] = [null];
      let after: ListCursor | undefined;
      for (;;) {
        const page = await source.db.memories.list({ filter: { namespace: ALL_NAMESPACES }, limit: PAGE, offset: 0, after });
        if (page.rows.length < PAGE) break;
        const last = page.rows[page.rows.length - 1];
        after = { createdAt: last.createdAt, id: last.id };
        cursors.push({ createdAt: last.createdAt.toISOString(), id: last.id });
      }
      state.memories.cursors = cursors;
      state.memories.nextPage = cursors.length - 1;
      save();
    }
    const cursors = state.memories.cursors;
    const total = await source.db.memories.count(ALL_NAMESPACES);
    while (state.memories.nextPage >= 0) {
      const c = cursors[state.memories.nextPage];
      const page = await source.db.memories.list({ filter: { namespace: ALL_NAMESPACES }, limit: PAGE, offset: 0, after: c ? { createdAt: new Date(c.createdAt), id: c.id } : undefined });
      const byId = new Map(
        (
          await source.db.memories.getMany(
            ALL_NAMESPACES,
            page.rows.map((r) => r.id),
          )
        ).map((d) => [d.id, d]),
      );
      const docs = [...page.rows].reverse().flatMap((r) => byId.get(r.id) ?? []);
      try {
        await target.db.memories.insertMany(docs);
        state.memories.copied += docs.length;
      } catch (e) {
        if (!(e instanceof ConflictError)) throw e;
        // Some are there already (a resumed batch, or written meanwhile on a live target): one by one, keeping the target's.
        for (const d of docs) {
          try {
            await target.db.memories.insert(d);
            state.memories.copied++;
          } catch (err) {
            if (!(err instanceof ConflictError)) throw err;
            state.memories.existing++;
          }
        }
      }
      // Their version history (issue 9): the insert recorded each memory's current version; the
      // earlier ones are copied as they are (addHistory leaves entries already there alone).
      await copyHistory(source, target, docs);
      state.memories.nextPage--;
      save();
      progress('memories', state.memories.copied + state.memories.existing, total);
      stopIfAsked();
    }
    state.memories.done = true;
    save();
  }
  if (opts.copyDocdb) {
    report.memories = {
      source: await source.db.memories.count(ALL_NAMESPACES),
      copied: state.memories.copied,
      existing: state.memories.existing,
      target: await target.db.memories.count(ALL_NAMESPACES),
    };
  }

  await verify(source, target, opts, report, progress);
  if (opts.checkpointFile && report.verified.ok) fs.rmSync(opts.checkpointFile, { force: true });
  return report;
}

async function verify(
  source: BackendPair,
  target: BackendPair,
  opts: MigrationOptions,
  report: MigrationReport,
  progress: (phase: MigrationPhase, done: number, total: number | null) => void,
): Promise<void> {
  const v = report.verified;
  const problem = (p: string) => {
    v.ok = false;
    if (v.problems.length < MAX_PROBLEMS) v.problems.push(p);
  };
  let done = 0;
  if (opts.copyObjects) {
    const src = createHash('sha256');
    const dst = createHash('sha256');
    let keys: string[] = [];
    const check = async () => {
      const pairs = await inParallel(keys, async (key) => {
        const a = digest(await source.store.get(key));
        const b = await target.store.get(key).then(digest, (e: unknown) => {
          if (e instanceof NotFoundError) return 'missing';
          throw e;
        });
        return [a, b];
      });
      keys.forEach((key, i) => {
        const [a, b] = pairs[i];
        src.update(`${key} ${a}\n`);
        dst.update(`${key} ${b}\n`);
        if (a !== b) problem(b === 'missing' ? `object ${key} is missing in the target` : `object ${key} differs in the target`);
      });
      done += keys.length;
      keys = [];
      progress('verify', done, null);
    };
    for await (const key of source.store.list('')) {
      keys.push(key);
      if (keys.length >= 256) await check();
    }
    await check();
    v.objects = { source: src.digest('hex'), target: dst.digest('hex') };
  }
  if (opts.copyDocdb && report.memories) {
    const m = report.memories;
    if (m.target < m.source) problem(`the target holds ${m.target} memories, the source ${m.source}`);
    const src = createHash('sha256');
    const dst = createHash('sha256');
    let after: ListCursor | undefined;
    for (;;) {
      const page = await source.db.memories.list({ filter: { namespace: ALL_NAMESPACES }, limit: PAGE, offset: 0, after });
      const ids = page.rows.map((r) => r.id);
      const [from, to] = await Promise.all([source.db.memories.getMany(ALL_NAMESPACES, ids), target.db.memories.getMany(ALL_NAMESPACES, ids)]);
      const inSource = new Map(from.map((d) => [d.id, d]));
      const inTarget = new Map(to.map((d) => [d.id, d]));
      for (const row of page.rows) {
        const a = inSource.get(row.id);
        const b = inTarget.get(row.id);
        const ha = a ? memoryDigest(a) : 'gone';
        const hb = b ? memoryDigest(b) : 'missing';
        src.update(`${row.id} ${ha}\n`);
        dst.update(`${row.id} ${hb}\n`);
        if (ha !== hb && ha !== 'gone') problem(hb === 'missing' ? `memory ${row.id} is missing in the target` : `memory ${row.id} differs in the target`);
        if (a && b && a.version > 1) {
          const [ra, rb] = await Promise.all([historyDigest(source, row.id), historyDigest(target, row.id)]);
          src.update(`${row.id} history ${ra}\n`);
          dst.update(`${row.id} history ${rb}\n`);
          if (ra !== rb) problem(`the version history of memory ${row.id} differs in the target`);
        }
        progress('verify', ++done, null);
      }
      if (page.rows.length < PAGE) break;
      const last = page.rows[page.rows.length - 1];
      after = { createdAt: last.createdAt, id: last.id };
    }
    v.memories = { source: src.digest('hex'), target: dst.digest('hex') };
  }
}

const MAX_VERSIONS = 1000;

/** Copies the history rows of the memories that have earlier versions (version > 1). */
async function copyHistory(source: BackendPair, target: BackendPair, docs: MemoryDoc[]): Promise<void> {
  await inParallel(
    docs.filter((d) => d.version > 1),
    async (d) => {
      const { rows } = await source.db.memories.history(ALL_NAMESPACES, d.id, MAX_VERSIONS, 0);
      if (rows.length > 0) await target.db.memories.addHistory(ALL_NAMESPACES, d.id, rows);
    },
  );
}

async function historyDigest(pair: BackendPair, id: string): Promise<string> {
  const { rows } = await pair.db.memories.history(ALL_NAMESPACES, id, MAX_VERSIONS, 0);
  return digest(
    Buffer.from(JSON.stringify(rows.map((r) => [r.version, r.objectKey, r.title, r.size, r.updatedAt.toISOString(), r.author ? [r.author.kind, r.author.id, r.author.name ?? null] : null]))),
  );
}

/** fn over items, PARALLEL at a time, results in order. */
async function inParallel<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, items.length) }, worker));
  return out;
}

function digest(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/** Every field of a memory, in a fixed order (adapters may add fields: those count too). */
export function memoryDigest(d: Omit<MemoryDoc, 'namespace'>): string {
  const o = d as unknown as Record<string, unknown>;
  // Where the file lives (objectKey, and the namespace, which its key names) is not part of the memory: the file itself does not say it.
  const canon = Object.keys(o)
    .filter((k) => k !== 'objectKey' && k !== 'namespace' && o[k] !== undefined)
    .sort()
    .map((k) => [k, o[k] instanceof Date ? o[k].toISOString() : o[k]]);
  return digest(Buffer.from(JSON.stringify(canon)));
}

function contentType(key: string): string {
  return key.endsWith('.md') ? 'text/markdown; charset=utf-8' : 'application/octet-stream';
}

function loadCheckpoint(file: string | undefined, source: string, target: string): Checkpoint | null {
  if (!file || !fs.existsSync(file)) return null;
  const cp = JSON.parse(fs.readFileSync(file, 'utf8')) as Checkpoint;
  if (cp.v !== 1 || cp.source !== source || cp.target !== target) {
    throw new Error(`The checkpoint ${file} belongs to another migration (${cp.source} → ${cp.target}); remove it to start over`);
  }
  return cp;
}
