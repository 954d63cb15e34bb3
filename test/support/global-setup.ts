/**
 * Jest global setup: starts the real test servers on 127.0.0.1 and tells the workers where they
 * are through environment variables (TEST_ENV). s3rver runs in-process; FerretDB runs when its
 * binary is present, unless MONGODB_URI names a real MongoDB. A server that cannot be had is
 * reported by name; with MEMSTORE_REQUIRE_ALL_BACKENDS=1 (set by .ci/run) that fails the run.
 */
import { MongoClient } from 'mongodb';
import { findFerretdb, RunningServer, startFerretdb, startS3rver, TEST_ENV, uniqueName, waitForMongo } from './servers';

export interface TestServers {
  s3?: RunningServer;
  ferretdb?: RunningServer;
}

declare global {
  // Shared between global setup and teardown (same process).
  var __memstoreTestServers: TestServers | undefined;
}

export default async function globalSetup(): Promise<void> {
  const required = process.env.MEMSTORE_REQUIRE_ALL_BACKENDS === '1';
  // The AWS SDK warns once per process that its 2027 releases need Node 22; in every test worker
  // that is noise around the results (the service itself still says it once in its log).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const servers: TestServers = {};
  globalThis.__memstoreTestServers = servers;
  const missing: string[] = [];
  const lines: string[] = [];

  try {
    servers.s3 = await startS3rver();
    process.env[TEST_ENV.s3Endpoint] = servers.s3.url;
    lines.push(`S3 suites: s3rver at ${servers.s3.url}`);
  } catch (e) {
    missing.push(`S3 suites: SKIPPED — s3rver did not start (${(e as Error).message})`);
  }

  process.env[TEST_ENV.dbPrefix] = uniqueName('memstore_t');
  const external = process.env.MONGODB_URI;
  if (external) {
    try {
      await waitForMongo(external, 10_000);
      process.env[TEST_ENV.mongoUri] = external;
      process.env[TEST_ENV.mongoKind] = 'mongodb';
      lines.push(`MongoDB suites: MongoDB at MONGODB_URI`);
    } catch (e) {
      missing.push(`MongoDB suites: SKIPPED — MONGODB_URI does not answer (${(e as Error).message})`);
    }
  } else {
    const bin = findFerretdb();
    if (!bin) {
      missing.push('MongoDB suites: SKIPPED — no FerretDB binary and no MONGODB_URI');
    } else {
      try {
        servers.ferretdb = await startFerretdb(bin);
        process.env[TEST_ENV.mongoUri] = servers.ferretdb.url;
        process.env[TEST_ENV.mongoKind] = 'ferretdb';
        process.env.FERRETDB_BIN = bin; // the fault tests start their own FerretDB
        lines.push(`MongoDB suites: FerretDB (${bin}) at ${servers.ferretdb.url}`);
      } catch (e) {
        missing.push(`MongoDB suites: SKIPPED — FerretDB did not start (${(e as Error).message})`);
      }
    }
  }

  process.stdout.write(`\n${[...lines, ...missing].join('\n')}\n`);
  if (required && missing.length > 0) {
    await stopAll(servers);
    throw new Error(`MEMSTORE_REQUIRE_ALL_BACKENDS=1 but a test server is missing:\n${missing.join('\n')}`);
  }
}

export async function stopAll(servers: TestServers | undefined): Promise<void> {
  if (!servers) return;
  // Drop the databases this run created on a real, shared MongoDB.
  const uri = process.env[TEST_ENV.mongoUri];
  const prefix = process.env[TEST_ENV.dbPrefix];
  if (uri && prefix && process.env[TEST_ENV.mongoKind] === 'mongodb') {
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 3000 });
    try {
      await client.connect();
      const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
      for (const d of databases) if (d.name.startsWith(prefix)) await client.db(d.name).dropDatabase();
    } catch {
      /* best effort */
    } finally {
      await client.close().catch(() => undefined);
    }
  }
  await Promise.allSettled([servers.s3?.dispose(), servers.ferretdb?.dispose()]);
}
