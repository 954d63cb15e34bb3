/**
 * What semantic search costs on the MongoDB adapter (issue 14 §2: "an exact or quantised scan over
 * the candidates, measured and documented"). Not a test: run it by hand,
 *   node -r ts-node/register/transpile-only bench/mongo-vector-scan.ts [--sizes 5000,20000,50000] [--queries 20] [--batch 1000] [--no-keyword]
 * with FERRETDB_BIN set (it starts FerretDB on a free port with a fresh directory) or MONGODB_URI.
 * It inserts memories with random unit vectors (384 dimensions, as bge-small) in steps through the
 * adapter (MemoryIndex.insertMany, then the vectors with one bulk write), and at each size times
 * `mode=semantic` searches through MemoryIndex.search: no filter (the whole in-process copy is
 * scanned) and a project holding a tenth of the memories (their ids are read from the server). The
 * vectors carry `vec_at` and each step bumps the vector-write count, as storeVector does, so each
 * step reaches the copy by its refresh.
 */
import { NestFactory } from '@nestjs/core';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MongoClient } from 'mongodb';
import { CliModule } from '../src/cli/context';
import { loadAppConfig } from '../src/config/app-config';
import { MemoryIndex } from '../src/backends/ports/memory-index.port';
import type { MemoryDoc } from '../src/backends/ports/memory.model';
import { fromVector, META, VECTOR_WRITES } from '../src/backends/mongodb/mongo-vector-codec';
import { newMemoryId, versionKey } from '../src/memories/memory-id';
import { findFerretdb, startFerretdb } from '../test/support/servers';

const arg = (name: string, dflt: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : dflt);
const sizes = arg('--sizes', '5000,20000,50000').split(',').map(Number);
const queries = Number(arg('--queries', '20'));
const DIMS = 384;
const BATCH = Number(arg('--batch', '1000'));
const KEY = 'bench:random-384#ctx1';

let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
function unit(): Float32Array {
  const v = Float32Array.from({ length: DIMS }, rand);
  const n = Math.hypot(...v);
  return v.map((x) => x / n);
}

async function main(): Promise<void> {
  const bin = findFerretdb();
  const ferret = process.env.MONGODB_URI ? null : bin ? await startFerretdb(bin) : null;
  const uri = process.env.MONGODB_URI ?? ferret?.url;
  if (!uri) throw new Error('set FERRETDB_BIN or MONGODB_URI');
  const dbName = `memstore_vscan_${Date.now()}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-vscan-'));
  const cfg = loadAppConfig({
    MEMSTORE_DATA_DIR: dir,
    MEMSTORE_DOCDB_URI: uri,
    MEMSTORE_DOCDB_DB: dbName,
    MEMSTORE_SECRET_KEY: 'bench-secret-key-0123456789abcdef0123456789',
    MEMSTORE_LOG_LEVEL: 'silent',
  });
  const log = (m: string) => process.env.DEBUG && console.error(m);
  log('FerretDB up: ' + uri);
  const app = await NestFactory.createApplicationContext(CliModule.register(cfg), { logger: false });
  const index = app.get(MemoryIndex);
  log('app up');
  const client = await MongoClient.connect(uri);
  const coll = client.db(dbName).collection('memories');
  console.log(
    `MongoDB adapter, ${process.env.MONGODB_URI ? 'MONGODB_URI' : 'FerretDB'}; in-process vector copy; ${queries} queries per line; ms per search (median / p90) and this process's CPU per search (the rest is the server)`,
  );
  let have = 0;
  let template: Record<string, unknown> | null = null;
  const t0 = Date.UTC(2024, 0, 1);
  try {
    for (const size of sizes) {
      while (have < size) {
        const docs: MemoryDoc[] = [];
        for (let i = 0; i < BATCH && have < size; i++, have++) {
          const at = new Date(t0 + have * 60_000);
          const id = newMemoryId(at.getTime());
          docs.push({
            id,
            namespace: 'default',
            title: `note ${have}`,
            type: 'note',
            scope: 'global',
            tags: [],
            agent: null,
            project: have % 10 === 0 ? 'tenth' : 'rest',
            content: `memory number ${have}`,
            createdAt: at,
            updatedAt: at,
            version: 1,
            objectKey: versionKey('default', id, 1),
            author: null,
          });
        }
        if (!template) {
          // The first memory through the adapter; the others are copies of its stored form (one insertMany with their vectors).
          await index.insertMany([docs[0]]);
          template = (await coll.findOne({ _id: docs[0].id as never }))!;
          await coll.updateOne({ _id: docs[0].id as never }, { $set: { vec: fromVector(unit()), vec_model: KEY, vec_at: Date.now() }, $unset: { emb_pending: '' } });
          docs.shift();
        }
        const tb = Date.now();
        if (docs.length > 0) {
          await coll.insertMany(
            docs.map((d) => {
              const { emb_pending: _p, emb_gen: _g, emb_next_at: _n, emb_lease_until: _l, emb_attempts: _a, ...rest } = template!;
              return {
                ...rest,
                _id: d.id as never,
                title: d.title,
                content: d.content,
                project: d.project,
                createdAt: d.createdAt,
                updatedAt: d.updatedAt,
                objectKey: d.objectKey,
                vec: fromVector(unit()),
                vec_model: KEY,
                vec_at: Date.now(),
              };
            }),
          );
        }
        // As storeVector does after each vector: the copy's searches read new vectors when this count moves.
        await client
          .db(dbName)
          .collection<{ _id: string; n: number }>(META)
          .updateOne({ _id: VECTOR_WRITES }, { $inc: { n: 1 } }, { upsert: true });
        log(`${have} memories (${Date.now() - tb} ms)`);
      }
      for (const [label, filter, mode] of [
        ['semantic, no filter', {}, 'semantic'],
        ['semantic, project = a tenth', { project: 'tenth' }, 'semantic'],
        ['keyword, no filter', {}, 'keyword'],
      ] as const) {
        if (mode === 'keyword' && process.argv.includes('--no-keyword')) continue;
        const times: number[] = [];
        let cpu = 0;
        for (let q = 0; q < queries + 2; q++) {
          const start = process.hrtime.bigint();
          const c0 = process.cpuUsage();
          const page = await index.search(
            mode === 'semantic'
              ? { text: 'anything', filter: { namespace: 'default', ...filter }, limit: 10, offset: 0, mode, vector: unit(), vectorKey: KEY }
              : { text: `memory number ${q}`, filter: { namespace: 'default', ...filter }, limit: 10, offset: 0, mode },
          );
          if (page.rows.length !== 10) throw new Error(`expected 10 rows, got ${page.rows.length}`);
          if (q >= 2) {
            // two warm-up searches
            times.push(Number(process.hrtime.bigint() - start) / 1e6);
            const c = process.cpuUsage(c0);
            cpu += (c.user + c.system) / 1000;
          }
        }
        times.sort((a, b) => a - b);
        const scanned = mode === 'keyword' ? 0 : label.includes('tenth') ? size / 10 : size;
        console.log(
          `${String(size).padStart(6)} memories, ${label.padEnd(27)}: ${times[Math.floor(times.length / 2)].toFixed(1)} / ${times[Math.floor(times.length * 0.9)].toFixed(1)} ms; this process's CPU ${(cpu / queries).toFixed(1)} ms (vectors scored: ${scanned})`,
        );
      }
    }
  } finally {
    await client
      .db(dbName)
      .dropDatabase()
      .catch(() => undefined);
    await client.close();
    await app.close();
    await ferret?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
