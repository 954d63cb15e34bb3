/**
 * The S3 object store against a real S3 server (s3rver on 127.0.0.1, started by the global setup):
 * the shared ObjectStore contract, then what only this adapter does (prefixes, presigned URLs,
 * translation of SDK and network errors into our own errors).
 */
import { AppError, BackendUnavailableError, NotFoundError } from '../../src/common/errors';
import { resolveS3Endpoint, S3ObjectStore, S3Options } from '../../src/backends/s3/s3-object-store';
import { createTestBucket, testS3Endpoint } from '../support/backends';
import { freePort, S3RVER_CREDENTIALS } from '../support/servers';
import { objectStoreContract } from './object-store.contract';

const endpoint = testS3Endpoint();

function store(over: Partial<S3Options> & { bucket: string }): S3ObjectStore {
  return new S3ObjectStore({ endpoint, accessKeyId: S3RVER_CREDENTIALS.accessKeyId, secretAccessKey: S3RVER_CREDENTIALS.secretAccessKey, ...over });
}

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const k of it) out.push(k);
  return out.sort();
}

describe('S3 endpoint resolution', () => {
  it('uses an explicit endpoint, else the R2 endpoint of the account id, else AWS', () => {
    expect(resolveS3Endpoint({ endpoint: 'http://minio:9000/', accountId: 'abc' })).toEqual({ endpoint: 'http://minio:9000', source: 'explicit' });
    expect(resolveS3Endpoint({ accountId: 'abc123' })).toEqual({ endpoint: 'https://abc123.r2.cloudflarestorage.com', source: 'account_id' });
    expect(resolveS3Endpoint({})).toEqual({ endpoint: null, source: 'aws' });
  });

  it('describes R2 with the derived endpoint and AWS with its region', async () => {
    const r2 = new S3ObjectStore({ bucket: 'b', accountId: 'acc' });
    const aws = new S3ObjectStore({ bucket: 'b' });
    expect(r2.describe()).toBe("S3 bucket 'b' at https://acc.r2.cloudflarestorage.com");
    expect(aws.describe()).toBe("S3 bucket 'b' at AWS (us-east-1)");
    await Promise.all([r2.close(), aws.close()]);
  });
});

// Without s3rver the global setup printed "S3 suites: SKIPPED" (and failed the run under MEMSTORE_REQUIRE_ALL_BACKENDS=1).
const onS3rver = endpoint ? describe : () => undefined;

if (endpoint) {
  objectStoreContract('S3 (s3rver)', async () => {
    const s = store({ bucket: await createTestBucket() });
    return { store: s, cleanup: () => s.close() };
  });
  objectStoreContract('S3 (s3rver) under a key prefix', async () => {
    const s = store({ bucket: await createTestBucket(), prefix: 'memstore/' });
    return { store: s, cleanup: () => s.close() };
  });
}
onS3rver('S3 object store on s3rver', () => {
  let bucket: string;
  let s: S3ObjectStore;
  beforeEach(async () => {
    bucket = await createTestBucket();
    s = store({ bucket });
  });
  afterEach(() => s.close());

  it('writes, reads, lists and deletes objects', async () => {
    await s.put('memories/a.md', '# A\n', 'text/markdown');
    await s.put('memories/b.md', Buffer.from('B'), 'text/markdown');
    await s.put('other/c.md', 'C', 'text/markdown');
    expect((await s.get('memories/a.md')).toString()).toBe('# A\n');
    expect(await collect(s.list('memories/'))).toEqual(['memories/a.md', 'memories/b.md']);
    await s.delete('memories/a.md');
    await expect(s.get('memories/a.md')).rejects.toBeInstanceOf(NotFoundError);
    await s.delete('memories/a.md'); // idempotent
    expect(await collect(s.list(''))).toEqual(['memories/b.md', 'other/c.md']);
  });

  it('keeps keys under its prefix: two prefixes in one bucket do not see each other', async () => {
    const a = store({ bucket, prefix: 'one' });
    const b = store({ bucket, prefix: 'two/' });
    await a.put('memories/x.md', 'from a', 'text/markdown');
    await b.put('memories/x.md', 'from b', 'text/markdown');
    expect((await a.get('memories/x.md')).toString()).toBe('from a');
    expect(await collect(b.list('memories/'))).toEqual(['memories/x.md']);
    expect(await collect(s.list(''))).toEqual(['one/memories/x.md', 'two/memories/x.md']);
    await Promise.all([a.close(), b.close()]);
  });

  it('lists every key across several ListObjectsV2 pages (continuation tokens), with and without a key prefix', async () => {
    for (const [prefix, label] of [
      [undefined, 'plain'],
      ['memstore/', 'prefixed'],
    ] as const) {
      const paged = store({ bucket, prefix, listPageSize: 3 });
      const keys = Array.from({ length: 11 }, (_, i) => `memories/${label}-${String(i).padStart(2, '0')}.md`);
      for (const k of keys) await paged.put(k, k, 'text/markdown');
      await paged.put('other/outside.md', 'x', 'text/markdown');
      const send = jest.spyOn((paged as unknown as { client: { send: (...a: unknown[]) => unknown } }).client, 'send');
      expect(await collect(paged.list('memories/'))).toEqual(keys);
      expect(send).toHaveBeenCalledTimes(4); // 3 + 3 + 3 + 2 keys: the last page is not truncated
      expect(await collect(paged.list(''))).toEqual([...keys, 'other/outside.md'].sort());
      for (const k of [...keys, 'other/outside.md']) await paged.delete(k);
      expect(await collect(paged.list(''))).toEqual([]);
      await paged.close();
    }
  });

  it('refuses keys that could be read two ways (400, not a backend error)', async () => {
    for (const key of ['', '/abs.md', 'a/../b.md', 'a//b.md', 'a\\b.md', 'a\u0000b']) {
      const err = await s.put(key, 'x', 'text/plain').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(400);
    }
  });

  it('presigns a GET URL that downloads the object as an attachment until it expires, and not after', async () => {
    await s.put('memories/p.md', '# presigned', 'text/markdown');
    // s3rver checks the expiry on its own clock: 2 s leave a loaded machine room for the first fetch.
    const { url, expiresAt } = await s.signedUrl('memories/p.md', 2, { baseUrl: 'http://unused', filename: 'p.md' });
    expect(url.startsWith(`${endpoint}/${bucket}/memories/p.md?`)).toBe(true);
    expect(expiresAt.getTime()).toBeGreaterThan(Date.now() - 1000);
    const ok = await fetch(url);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe('# presigned');
    expect(ok.headers.get('content-disposition')).toBe('attachment; filename="p.md"');
    await new Promise((r) => setTimeout(r, 3100));
    const late = await fetch(url);
    expect(late.status).toBe(403);
  });

  it('gives public URLs under objstore_public_base when it is set', async () => {
    const pub = store({ bucket, publicBase: 'https://cdn.example.com/files/' });
    const { url } = await pub.signedUrl('memories/a b.md', 3600, { baseUrl: '', filename: 'a.md' });
    expect(url).toBe('https://cdn.example.com/files/memories/a%20b.md');
    await pub.close();
  });

  it('passes its probe (put, get, presigned GET, delete) and leaves nothing behind', async () => {
    await s.probe();
    expect(await collect(s.list(''))).toEqual([]);
  });

  it('names a missing bucket: 503 "Object store unavailable: bucket \'...\' does not exist"', async () => {
    const missing = store({ bucket: 'no-such-bucket-here' });
    const err = await missing.get('memories/a.md').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toBe("Object store unavailable: bucket 'no-such-bucket-here' does not exist");
    await expect(missing.put('memories/a.md', 'x', 'text/plain')).rejects.toThrow("bucket 'no-such-bucket-here' does not exist");
    await expect(missing.probe()).rejects.toThrow("bucket 'no-such-bucket-here' does not exist");
    await missing.close();
  });

  it('names wrong credentials', async () => {
    const wrong = store({ bucket, accessKeyId: 'WRONG', secretAccessKey: 'WRONG' });
    const err = await wrong.put('memories/a.md', 'x', 'text/plain').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toMatch(/^Object store unavailable: (the access key id is not valid|access to bucket)/);
    await wrong.close();
  });

  it('answers "cannot reach" when nothing listens at the endpoint (a refused connection is not retried into a hang)', async () => {
    const port = await freePort();
    const dead = store({ bucket, endpoint: `http://127.0.0.1:${port}` });
    const err = await dead.get('memories/a.md').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BackendUnavailableError);
    expect((err as Error).message).toBe(`Object store unavailable: cannot reach http://127.0.0.1:${port} (ECONNREFUSED)`);
    await dead.close();
  });
});
