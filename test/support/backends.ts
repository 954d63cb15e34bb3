/**
 * The backend pairs the end-to-end suites run on. Write e2e suites as
 *   describe.each(testBackends())('memories API on $name', (backend) => { ... createTestApp(await backend.env()) ... })
 * so that every suite runs once per pair. The embedded pair is always present; MongoDB + S3 is
 * added when the global setup has started those servers (see test/support/global-setup.ts).
 * `env()` returns fresh, isolated settings (own database / bucket) for one test app.
 */
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { S3RVER_CREDENTIALS, TEST_ENV, uniqueName } from './servers';

export interface TestBackend {
  name: string;
  /** Which adapters the pair uses, for the few tests that look at one adapter's specifics. */
  docdb: 'sqlite' | 'mongodb';
  objectStore: 'filesystem' | 's3';
  env(): Promise<Record<string, string>>;
}

/** The S3 server of this run (s3rver), or null when the global setup could not start it. */
export function testS3Endpoint(): string | null {
  return process.env[TEST_ENV.s3Endpoint] || null;
}

/** The MongoDB-wire server of this run (FerretDB or MONGODB_URI), or null. */
export function testMongoUri(): string | null {
  return process.env[TEST_ENV.mongoUri] || null;
}

/** True when the MongoDB server of this run is FerretDB (no text indexes: regex fallback search). */
export function testMongoIsFerretdb(): boolean {
  return process.env[TEST_ENV.mongoKind] === 'ferretdb';
}

/** A fresh database name on the test MongoDB (dropped at teardown on a real MongoDB). */
export function freshDatabaseName(): string {
  return uniqueName(process.env[TEST_ENV.dbPrefix] || 'memstore_t');
}

/** Creates a fresh, empty bucket on the given S3 endpoint (default: this run's s3rver). */
export async function createTestBucket(endpoint = testS3Endpoint()): Promise<string> {
  if (!endpoint) throw new Error('no S3 test server');
  const bucket = uniqueName('t-');
  const client = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: S3RVER_CREDENTIALS });
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
  } finally {
    client.destroy();
  }
  return bucket;
}

/** Settings (as MEMSTORE_* environment variables) for a fresh MongoDB database. */
export function mongoTestEnv(uri = testMongoUri()): Record<string, string> {
  if (!uri) throw new Error('no MongoDB test server');
  return { MEMSTORE_DOCDB_URI: uri, MEMSTORE_DOCDB_DB: freshDatabaseName() };
}

/** Settings (as MEMSTORE_* environment variables) for a fresh bucket on the S3 test server. */
export async function s3TestEnv(endpoint = testS3Endpoint()): Promise<Record<string, string>> {
  if (!endpoint) throw new Error('no S3 test server');
  return {
    MEMSTORE_OBJSTORE_BUCKET: await createTestBucket(endpoint),
    MEMSTORE_OBJSTORE_ENDPOINT: endpoint,
    MEMSTORE_OBJSTORE_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    MEMSTORE_OBJSTORE_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
  };
}

export function testBackends(): TestBackend[] {
  const pairs: TestBackend[] = [{ name: 'embedded (sqlite + filesystem)', docdb: 'sqlite', objectStore: 'filesystem', env: async () => ({}) }];
  if (testMongoUri() && testS3Endpoint()) {
    pairs.push({
      name: `mongodb (${testMongoIsFerretdb() ? 'FerretDB' : 'MongoDB'}) + s3 (s3rver)`,
      docdb: 'mongodb',
      objectStore: 's3',
      env: async () => ({ ...mongoTestEnv(), ...(await s3TestEnv()) }),
    });
  }
  return pairs;
}
