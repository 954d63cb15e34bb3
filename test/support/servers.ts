/**
 * Real test servers on 127.0.0.1: s3rver (in-process) for S3, FerretDB (child process, SQLite
 * handler, temp dir) for MongoDB. Used by the jest global setup for the whole run, and by the
 * fault tests, which start their own server, stop it mid-run and start it again on the same port.
 *
 * This is test support: it reads process.env directly (the app never does outside app-config.ts).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Server } from 'node:http';
import { MongoClient } from 'mongodb';

/** Environment variables through which the global setup tells the jest workers where the servers are. */
export const TEST_ENV = {
  s3Endpoint: 'MEMSTORE_TEST_S3_ENDPOINT',
  mongoUri: 'MEMSTORE_TEST_MONGODB_URI',
  /** "ferretdb" or "mongodb" (a real server given by MONGODB_URI). */
  mongoKind: 'MEMSTORE_TEST_MONGODB_KIND',
  /** Prefix of every database name a test creates in this run (dropped at teardown). */
  dbPrefix: 'MEMSTORE_TEST_DB_PREFIX',
  /** When set (by .ci/run), every server process started writes its pid here so a trap can stop it. */
  pidDir: 'MEMSTORE_TEST_PID_DIR',
} as const;

/** s3rver accepts only these credentials. */
export const S3RVER_CREDENTIALS = { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' };

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningServer {
  /** http://127.0.0.1:<port> for S3, mongodb://127.0.0.1:<port>/ for MongoDB. */
  url: string;
  port: number;
  /** Stop the server (drops open connections at once). Its data directory is kept for restart(). */
  stop(): Promise<void>;
  /** Start it again on the same port with the same data. */
  restart(): Promise<void>;
  /** Stop and delete its data directory. */
  dispose(): Promise<void>;
}

/** The handle of a started server: restart keeps its data directory, dispose deletes it. */
function runningServer(url: string, port: number, directory: string, start: () => Promise<void>, stop: () => Promise<void>): RunningServer {
  return {
    url,
    port,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
    dispose: async () => {
      await stop();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------------------------
// s3rver

let s3rverPatched = false;

/**
 * s3rver 3.7 writes an object in place and answers the PUT before the file is complete, so a GET
 * right after a PUT, or two PUTs of one key at once, can see a half-written body — unlike S3,
 * where a PUT is atomic. Its filesystem store is made to write a temp file, wait for it, and
 * rename it into place, one writer per key at a time. Everything else is s3rver's own code.
 */
function makeS3rverPutsAtomic(): void {
  if (s3rverPatched) return;
  s3rverPatched = true;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const FilesystemStore = require('s3rver/lib/stores/filesystem');
  const locks = new Map<string, Promise<unknown>>();
  type S3rverObject = { bucket: string; key: string; content: Buffer | NodeJS.ReadableStream; metadata: unknown };
  FilesystemStore.prototype.putObject = async function putObject(object: S3rverObject): Promise<{ size: number; md5: string }> {
    const objectPath: string = this.getResourcePath(object.bucket, object.key, 'object');
    const body = Buffer.isBuffer(object.content) ? object.content : await readAll(object.content);
    const md5 = createHash('md5').update(body).digest('hex');
    const previous = locks.get(objectPath) ?? Promise.resolve();
    const write = previous.then(async () => {
      await fs.promises.mkdir(path.dirname(objectPath), { recursive: true });
      const tmp = `${objectPath}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
      await fs.promises.writeFile(tmp, body);
      await fs.promises.rename(tmp, objectPath);
      await this.putMetadata(object.bucket, object.key, object.metadata, md5);
    });
    const settled = write.catch(() => undefined);
    locks.set(objectPath, settled);
    try {
      await write;
    } finally {
      if (locks.get(objectPath) === settled) locks.delete(objectPath);
    }
    return { size: body.length, md5 };
  };
}

/**
 * s3rver 3.7 makes ListObjectsV2 continuation tokens with single DES, which OpenSSL 3 (Node 18+)
 * no longer offers, so any listing of more than one page failed with 500. Its bucket controller
 * is loaded with those two cipher calls switched to triple DES (same 8-byte blocks and IV, so the
 * token layout is s3rver's own); listings page like real S3 (MaxKeys, default 1,000) and the
 * adapter's NextContinuationToken loop is exercised. Must run before s3rver is first required.
 */
function makeS3rverContinuationTokensWork(): void {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const Module = require('node:module') as {
    _resolveFilename(r: string, p: unknown): string;
    new (id: string, parent?: unknown): NodeModule & { _compile(src: string, file: string): void; paths: string[] };
  } & { _nodeModulePaths(dir: string): string[] };
  /* eslint-enable @typescript-eslint/no-require-imports */
  const file = require.resolve('s3rver/lib/controllers/bucket');
  if (require.cache[file]) return;
  const source = fs.readFileSync(file, 'utf8');
  const patched = source
    .replace("crypto.createCipheriv('des', key, iv)", "crypto.createCipheriv('des-ede3-cbc', Buffer.concat([key, key, key]), iv)")
    .replace("crypto.createDecipheriv('des', key, iv)", "crypto.createDecipheriv('des-ede3-cbc', Buffer.concat([key, key, key]), iv)");
  if (patched === source || patched.includes("'des',")) throw new Error(`s3rver's ${file} changed: update makeS3rverContinuationTokensWork`);
  const m = new Module(file, module);
  m.filename = file;
  m.paths = Module._nodeModulePaths(path.dirname(file));
  m._compile(patched, file);
  m.loaded = true;
  require.cache[file] = m;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  return Buffer.concat(chunks);
}

export async function startS3rver(opts: { port?: number; directory?: string } = {}): Promise<RunningServer> {
  makeS3rverContinuationTokensWork();
  // s3rver is CommonJS without types.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const S3rver = require('s3rver');
  makeS3rverPutsAtomic();
  const directory = opts.directory ?? fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-s3rver-'));
  const port = opts.port ?? (await freePort());
  let instance: { run(): Promise<unknown>; close(): Promise<void>; httpServer?: Server } | null = null;

  const start = async (): Promise<void> => {
    const s = new S3rver({ address: '127.0.0.1', port, silent: true, directory, vhostBuckets: false });
    await s.run();
    instance = s;
  };
  const stop = async (): Promise<void> => {
    const s = instance;
    instance = null;
    if (!s) return;
    const closing = s.close().catch(() => undefined);
    // Keep-alive sockets from SDK clients would otherwise hold close() open.
    s.httpServer?.closeAllConnections();
    await closing;
  };
  await start();
  return runningServer(`http://127.0.0.1:${port}`, port, directory, start, stop);
}

// ---------------------------------------------------------------------------------------------
// FerretDB

/** The FerretDB binary: FERRETDB_BIN, ~/go/bin/ferretdb, or `ferretdb` on PATH; null when none. */
export function findFerretdb(): string | null {
  const candidates = [process.env.FERRETDB_BIN, path.join(os.homedir(), 'go', 'bin', 'ferretdb')];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir) candidates.push(path.join(dir, 'ferretdb'));
  for (const c of candidates) {
    if (!c) continue;
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.statSync(c).isFile()) return c;
    } catch {
      /* not there */
    }
  }
  return null;
}

function recordPid(child: ChildProcess): () => void {
  const dir = process.env[TEST_ENV.pidDir];
  if (!dir || !child.pid) return () => undefined;
  const file = path.join(dir, `ferretdb-${child.pid}.pid`);
  try {
    fs.writeFileSync(file, String(child.pid));
  } catch {
    return () => undefined;
  }
  return () => fs.rmSync(file, { force: true });
}

/** Resolves once the MongoDB-wire server answers a ping. */
export async function waitForMongo(uri: string, timeoutMs = 20_000, alive: () => boolean = () => true): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (!alive()) throw new Error(`server at ${uri} exited before it answered`);
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 500, connectTimeoutMS: 500 });
    try {
      await client.connect();
      await client.db('admin').command({ ping: 1 });
      return;
    } catch (e) {
      last = e;
      await new Promise((r) => setTimeout(r, 150));
    } finally {
      await client.close().catch(() => undefined);
    }
  }
  throw new Error(`server at ${uri} did not answer within ${timeoutMs} ms: ${(last as Error)?.message}`);
}

export async function startFerretdb(bin: string, opts: { port?: number; directory?: string } = {}): Promise<RunningServer> {
  const directory = opts.directory ?? fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-ferretdb-'));
  const port = opts.port ?? (await freePort());
  const url = `mongodb://127.0.0.1:${port}/`;
  let child: ChildProcess | null = null;
  let forget: () => void = () => undefined;

  const start = async (): Promise<void> => {
    const debugPort = await freePort();
    const logs: string[] = [];
    const c = spawn(
      bin,
      [
        '--handler=sqlite',
        `--sqlite-url=file:${directory}/`,
        `--state-dir=${directory}`,
        `--listen-addr=127.0.0.1:${port}`,
        `--debug-addr=127.0.0.1:${debugPort}`,
        '--telemetry=disable',
        '--log-level=error',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    c.stderr?.on('data', (d: Buffer) => {
      if (logs.length < 50) logs.push(d.toString());
    });
    let exited = false;
    c.once('exit', () => {
      exited = true;
    });
    forget = recordPid(c);
    child = c;
    try {
      await waitForMongo(url, 20_000, () => !exited);
    } catch (e) {
      await stop();
      throw new Error(`FerretDB did not start: ${(e as Error).message}\n${logs.join('')}`, { cause: e });
    }
  };
  const stop = async (): Promise<void> => {
    const c = child;
    child = null;
    if (!c) return;
    if (c.exitCode === null && c.signalCode === null) {
      const exited = new Promise<void>((r) => c.once('exit', () => r()));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    forget();
  };
  await start();
  return runningServer(url, port, directory, start, stop);
}

/** A unique, valid name for a test database or bucket. */
export function uniqueName(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
}
