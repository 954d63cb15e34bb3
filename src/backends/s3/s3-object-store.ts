import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, ListObjectsV2CommandOutput, PutObjectCommand, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { randomBytes } from 'node:crypto';
import { AppError, BackendUnavailableError, NotFoundError } from '../../common/errors';
import { assertObjectKey, InvalidObjectKeyError } from '../ports/object-key';
import { ObjectStore, SignedUrl } from '../ports/object-store.port';

export interface S3Options {
  bucket: string;
  /** S3-compatible endpoint (MinIO, R2, s3rver...); path-style addressing is used when it is set. */
  endpoint?: string | null;
  /** Cloudflare account id: the endpoint is derived from it when no endpoint is given. */
  accountId?: string | null;
  accessKeyId?: string | null;
  secretAccessKey?: string | null;
  /** Default: "auto" for R2, else "us-east-1". */
  region?: string | null;
  /** Every key is stored under this prefix (e.g. "memstore/"); default none. */
  prefix?: string;
  /** When set, download URLs are `<publicBase>/<key>` (a public bucket or CDN) instead of presigned URLs. */
  publicBase?: string | null;
  /** Per-request limits, so that no request hangs for minutes. */
  connectionTimeoutMs?: number;
  requestTimeoutMs?: number;
  maxAttempts?: number;
  /** Keys per ListObjectsV2 page (MaxKeys); default the server's (1000 on S3). Tests set it low to exercise paging. */
  listPageSize?: number;
}

/** R2's S3 endpoint for an account (CONTRACT §5, /api/derive-endpoint). */
export function r2Endpoint(accountId: string): string {
  return `https://${accountId}.r2.cloudflarestorage.com`;
}

/** The endpoint an S3 client uses: the explicit one, else derived from the R2 account id, else AWS (null). */
export function resolveS3Endpoint(o: Pick<S3Options, 'endpoint' | 'accountId'>): { endpoint: string | null; source: 'explicit' | 'account_id' | 'aws' } {
  if (o.endpoint) return { endpoint: o.endpoint.replace(/\/+$/, ''), source: 'explicit' };
  if (o.accountId) return { endpoint: r2Endpoint(o.accountId), source: 'account_id' };
  return { endpoint: null, source: 'aws' };
}

const NETWORK_CODE = /\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EPIPE|ECONNABORTED)\b/;

/** ObjectStore on an S3-compatible bucket (AWS S3, Cloudflare R2, MinIO, s3rver) with the AWS SDK v3. */
export class S3ObjectStore extends ObjectStore {
  readonly kind = 's3';
  readonly bucket: string;
  readonly endpoint: string | null;
  private readonly prefix: string;
  private readonly client: S3Client;
  private readonly publicBase: string | null;
  private readonly region: string;
  private readonly listPageSize: number | undefined;

  constructor(opts: S3Options) {
    super();
    this.bucket = opts.bucket;
    this.listPageSize = opts.listPageSize;
    const { endpoint, source } = resolveS3Endpoint(opts);
    this.endpoint = endpoint;
    this.region = opts.region || (source === 'account_id' ? 'auto' : 'us-east-1');
    this.prefix = opts.prefix ? opts.prefix.replace(/^\/+/, '').replace(/\/*$/, '/') : '';
    this.publicBase = opts.publicBase ? opts.publicBase.replace(/\/+$/, '') : null;
    this.client = new S3Client({
      region: this.region,
      endpoint: endpoint ?? undefined,
      forcePathStyle: endpoint !== null,
      credentials: opts.accessKeyId && opts.secretAccessKey ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey } : undefined,
      maxAttempts: opts.maxAttempts ?? 2,
      requestHandler: {
        connectionTimeout: opts.connectionTimeoutMs ?? 3_000,
        requestTimeout: opts.requestTimeoutMs ?? 20_000,
        throwOnRequestTimeout: true,
      },
    });
  }

  private fullKey(key: string): string {
    assertObjectKey(key);
    return this.prefix + key;
  }

  override async put(key: string, body: string | Buffer, contentType: string): Promise<void> {
    const Key = this.fullKey(key);
    await this.call(() => this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: body, ContentType: contentType, ContentLength: Buffer.byteLength(body) })), key);
  }

  override async get(key: string): Promise<Buffer> {
    const Key = this.fullKey(key);
    const out = await this.call(() => this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key })), key);
    try {
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (e) {
      throw this.translate(e, key);
    }
  }

  override async delete(key: string): Promise<void> {
    const Key = this.fullKey(key);
    try {
      await this.call(() => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key })), key);
    } catch (e) {
      if (e instanceof NotFoundError) return;
      throw e;
    }
  }

  override async *list(prefix: string): AsyncIterable<string> {
    if (prefix.includes('\\') || prefix.startsWith('/') || prefix.split('/').some((s) => s === '.' || s === '..')) {
      throw new InvalidObjectKeyError('the prefix could leave the store');
    }
    let token: string | undefined;
    do {
      const page: ListObjectsV2CommandOutput = await this.call(
        () => this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token, MaxKeys: this.listPageSize })),
        prefix,
      );
      for (const o of page.Contents ?? []) if (o.Key) yield o.Key.slice(this.prefix.length);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  override async signedUrl(key: string, ttlSeconds: number, opts: { baseUrl: string; filename: string }): Promise<SignedUrl> {
    const Key = this.fullKey(key);
    const ttl = Math.min(604_800, Math.max(1, Math.floor(ttlSeconds)));
    const expiresAt = new Date((Math.floor(Date.now() / 1000) + ttl) * 1000);
    if (this.publicBase) {
      return { url: `${this.publicBase}/${Key.split('/').map(encodeURIComponent).join('/')}`, expiresAt };
    }
    const filename = opts.filename.replace(/["\\\r\n]/g, '_');
    try {
      const url = await getSignedUrl(
        this.client,
        new GetObjectCommand({
          Bucket: this.bucket,
          Key,
          ResponseContentDisposition: `attachment; filename="${filename}"`,
          ResponseContentType: 'text/markdown; charset=utf-8',
        }),
        { expiresIn: ttl },
      );
      return { url, expiresAt };
    } catch (e) {
      throw this.translate(e, key);
    }
  }

  override async probe(): Promise<void> {
    const key = `probe/${process.pid}-${randomBytes(6).toString('hex')}.txt`;
    const body = `probe ${new Date().toISOString()}`;
    try {
      await this.put(key, body, 'text/plain');
      const back = (await this.get(key)).toString('utf8');
      if (back !== body) throw new BackendUnavailableError('Object store', 'the probe object read back differently');
      if (!this.publicBase) {
        const { url } = await this.signedUrl(key, 60, { baseUrl: '', filename: 'probe.txt' });
        const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
        const text = await res.text();
        if (!res.ok || text !== body) {
          throw new BackendUnavailableError('Object store', `a presigned URL of bucket '${this.bucket}' did not return the probe object (HTTP ${res.status})`);
        }
      }
      await this.delete(key);
    } catch (e) {
      await this.delete(key).catch(() => undefined);
      if (e instanceof BackendUnavailableError) throw e;
      if (e instanceof NotFoundError) throw new BackendUnavailableError('Object store', `the probe object written to bucket '${this.bucket}' was not found`);
      throw new BackendUnavailableError('Object store', `probe failed: ${(e as Error).message}`);
    }
  }

  override describe(): string {
    return `S3 bucket '${this.bucket}' at ${this.endpoint ?? `AWS (${this.region})`}${this.prefix ? ` under '${this.prefix}'` : ''}`;
  }

  override async close(): Promise<void> {
    this.client.destroy();
  }

  private async call<T>(fn: () => Promise<T>, key: string): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw this.translate(e, key);
    }
  }

  /** SDK and network errors → our own errors (CONTRACT §1: 503 naming the object store and the reason). */
  private translate(e: unknown, key: string): Error {
    if (e instanceof AppError) return e;
    const err = e as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } };
    const name = err?.name ?? '';
    const status = err?.$metadata?.httpStatusCode;
    // Network errors may arrive wrapped ("AWS SDK error wrapper for Error: connect ECONNREFUSED ...").
    const code = err?.code ?? err?.cause?.code ?? NETWORK_CODE.exec(err?.message ?? '')?.[0] ?? '';
    const where = this.endpoint ?? 'AWS S3';
    const unavailable = (reason: string) => new BackendUnavailableError('Object store', reason);
    switch (name) {
      case 'NoSuchKey':
      case 'NotFound':
        return new NotFoundError('Object not found');
      case 'NoSuchBucket':
        return unavailable(`bucket '${this.bucket}' does not exist`);
      case 'AccessDenied':
      case 'AllAccessDisabled':
        return unavailable(`access to bucket '${this.bucket}' was denied`);
      case 'InvalidAccessKeyId':
        return unavailable('the access key id is not valid');
      case 'SignatureDoesNotMatch':
        return unavailable('the secret access key does not match the access key id');
      case 'ExpiredToken':
      case 'InvalidToken':
        return unavailable('the credentials have expired or are not valid');
      case 'CredentialsProviderError':
        return unavailable('no credentials are configured (objstore_access_key_id / objstore_secret_access_key)');
      case 'TimeoutError':
      case 'RequestTimeout':
        return unavailable(`${where} did not answer in time`);
    }
    if (new RegExp(`^${NETWORK_CODE.source}$`).test(code)) {
      return unavailable(`cannot reach ${where} (${code})`);
    }
    if (status === 404 && !(e instanceof S3ServiceException && name !== 'NotFound' && name !== 'UnknownError')) return new NotFoundError('Object not found');
    if (status === 403) return unavailable(`access to bucket '${this.bucket}' was denied (${name || 'HTTP 403'})`);
    const message = (err?.message ?? String(e)).split('\n')[0].slice(0, 200);
    return unavailable(`S3 request for '${key}' failed: ${name ? `${name}: ` : ''}${message}${status ? ` (HTTP ${status})` : ''}`);
  }
}
