import { checkSetting, maskMongoUri, maskSetting, parsePresignTtl } from './setting-rules';

describe('setting rules', () => {
  it.each([
    ['mongodb://user:p4ss@db.example.com:27017/mem?authSource=admin', 'mongodb://user:********@db.example.com:27017/mem?authSource=admin'],
    ['mongodb+srv://user:p%40ss:w0rd@cluster0.example.net/', 'mongodb+srv://user:********@cluster0.example.net/'],
    ['mongodb://u:p@h1:27017,h2:27017/db?replicaSet=rs0', 'mongodb://u:********@h1:27017,h2:27017/db?replicaSet=rs0'],
    ['mongodb://user@db.example.com/mem', 'mongodb://user@db.example.com/mem'],
    ['mongodb://db.example.com/mem', 'mongodb://db.example.com/mem'],
  ])('masks the password of %s', (uri, masked) => {
    expect(maskMongoUri(uri)).toBe(masked);
  });

  it('masks secrets and leaves other settings readable', () => {
    expect(maskSetting('objstore_secret_access_key', 'abc')).toBe('********');
    expect(maskSetting('objstore_access_key_id', 'short')).toBe('********');
    expect(maskSetting('objstore_bucket', 'bucket')).toBe('bucket');
    expect(maskSetting('docdb_uri', null)).toBeNull();
  });

  it.each([
    ['docdb_uri', 'mongodb://h/db', null],
    ['docdb_uri', 'mongodb+srv://c.example.net', null],
    ['docdb_uri', 'MONGODB://h', null],
    ['docdb_uri', 'mysql://h', 'must be a MongoDB'],
    ['docdb_uri', 'mongodb://', 'must be a MongoDB'],
    ['docdb_uri', 'mongodb://h /db', 'must be a MongoDB'],
    ['objstore_endpoint', 'https://s3.example.com', null],
    ['objstore_endpoint', 'http://127.0.0.1:9000', null],
    ['objstore_endpoint', 'https://user:pw@s3.example.com', 'without credentials'],
    ['objstore_endpoint', 'ftp://s3.example.com', 'http:// or https://'],
    // Never a link-local or cloud metadata address (issue 46); private and loopback ones are fine.
    ['objstore_endpoint', 'http://169.254.169.254', 'link-local or cloud metadata'],
    ['embedding_url', 'http://169.254.170.2/v1', 'link-local or cloud metadata'],
    ['embedding_url', 'http://[fe80::1]:11434/v1', 'link-local or cloud metadata'],
    ['embedding_url', 'http://[fd00:ec2::254]/v1', 'link-local or cloud metadata'],
    ['embedding_url', 'http://[::ffff:a9fe:a9fe]/v1', 'link-local or cloud metadata'],
    ['embedding_url', 'http://metadata.google.internal/computeMetadata/v1', 'link-local or cloud metadata'],
    ['embedding_url', 'http://10.0.0.5:11434/v1', null],
    ['embedding_url', 'http://[::1]:11434/v1', null],
    ['docdb_uri', 'mongodb://u:p@h1:27017,169.254.169.254:27017/db', 'link-local or cloud metadata'],
    ['docdb_uri', 'mongodb://[fe80::2]:27017/db', 'link-local or cloud metadata'],
    ['objstore_public_base', '//files.example.com', 'http:// or https://'],
    ['objstore_account_id', '0123456789abcdef0123456789abcdef', null],
    ['objstore_account_id', 'a.b', 'letters, digits and hyphens'],
    ['objstore_account_id', '-abc', 'letters, digits and hyphens'],
    ['objstore_bucket', 'my-bucket.v2', null],
    ['objstore_bucket', 'ab', 'bucket name'],
    ['objstore_bucket', 'a/b/c', 'bucket name'],
    ['docdb_db', 'memstore', null],
    ['docdb_db', 'mem.store', 'database name'],
    ['memory_collection', 'system.users', 'collection name'],
    ['memory_collection', 'a$b', 'collection name'],
    ['objstore_presign_ttl', '60', null],
    ['objstore_presign_ttl', '0', 'from 1 to 604800'],
    ['objstore_presign_ttl', '1e3', 'whole number'],
    ['docdb_db', 'x'.repeat(3000), 'at most 2048'],
    ['embedding_cosine_scale', '0.2, 0.6', null],
    ['embedding_cosine_scale', '-0.1,0.45', null],
    ['embedding_cosine_scale', '0.6, 0.2', 'the lower first'],
    ['embedding_cosine_scale', '0.5, 0.5', 'the lower first'],
    ['embedding_cosine_scale', '0.2, 1.5', 'from -1 to 1'],
    ['embedding_cosine_scale', '0.2', 'two cosines'],
    ['embedding_cosine_scale', '0.2; 0.6', 'two cosines'],
  ] as const)('%s = %j → %s', (key, value, problem) => {
    const got = checkSetting(key, value);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toContain(problem);
  });

  it('parses the TTL from an integer or a numeric string only', () => {
    expect(parsePresignTtl(60)).toBe(60);
    expect(parsePresignTtl(' 60 ')).toBe(60);
    expect(parsePresignTtl(1.5)).toBeNaN();
    expect(parsePresignTtl('0x10')).toBeNaN();
    expect(parsePresignTtl(true)).toBeNaN();
  });
});
