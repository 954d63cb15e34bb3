import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultSearchWorkers, loadAppConfig, withDotEnv } from './app-config';
import { DEFAULT_EMBEDDING_MAX_TOKENS } from '../embeddings/local-embedding.text';

describe('loadAppConfig: MEMSTORE_SEARCH_WORKERS', () => {
  it('defaults to two search workers on two cores or more, none on one', () => {
    const expected = os.availableParallelism() < 2 ? 0 : 2;
    expect(defaultSearchWorkers()).toBe(expected);
    expect(loadAppConfig({}).searchWorkers).toBe(expected);
  });

  it('takes 0 (search on the main thread) up to 16, and refuses anything else', () => {
    expect(loadAppConfig({ MEMSTORE_SEARCH_WORKERS: '0' }).searchWorkers).toBe(0);
    expect(loadAppConfig({ MEMSTORE_SEARCH_WORKERS: '3' }).searchWorkers).toBe(3);
    expect(() => loadAppConfig({ MEMSTORE_SEARCH_WORKERS: '-1' })).toThrow(/MEMSTORE_SEARCH_WORKERS must be an integer from 0 to 16/);
    expect(() => loadAppConfig({ MEMSTORE_SEARCH_WORKERS: 'many' })).toThrow(/MEMSTORE_SEARCH_WORKERS/);
  });
});

describe('loadAppConfig: operations settings', () => {
  it('MEMSTORE_EMBEDDING_THREADS defaults to two on two cores or more (one on one), takes 1 to 8, and refuses anything else', () => {
    expect(loadAppConfig({}).embeddingThreads).toBe(Math.min(2, os.availableParallelism()));
    expect(loadAppConfig({ MEMSTORE_EMBEDDING_THREADS: '1' }).embeddingThreads).toBe(1);
    expect(() => loadAppConfig({ MEMSTORE_EMBEDDING_THREADS: '0' })).toThrow(/MEMSTORE_EMBEDDING_THREADS must be an integer from 1 to 8/);
    expect(() => loadAppConfig({ MEMSTORE_EMBEDDING_THREADS: 'two' })).toThrow(/MEMSTORE_EMBEDDING_THREADS/);
  });

  it('MEMSTORE_EMBEDDING_MAX_TOKENS defaults to DEFAULT_EMBEDDING_MAX_TOKENS, takes 16 to 512 (the model reads no more), and refuses anything else', () => {
    expect(loadAppConfig({}).embeddingMaxTokens).toBe(DEFAULT_EMBEDDING_MAX_TOKENS);
    expect(loadAppConfig({ MEMSTORE_EMBEDDING_MAX_TOKENS: '512' }).embeddingMaxTokens).toBe(512);
    expect(() => loadAppConfig({ MEMSTORE_EMBEDDING_MAX_TOKENS: '1024' })).toThrow(/MEMSTORE_EMBEDDING_MAX_TOKENS must be an integer from 16 to 512/);
    expect(() => loadAppConfig({ MEMSTORE_EMBEDDING_MAX_TOKENS: 'all' })).toThrow(/MEMSTORE_EMBEDDING_MAX_TOKENS/);
  });

  it('MEMSTORE_LOG_FORMAT is text by default, json on request, and nothing else', () => {
    expect(loadAppConfig({}).logFormat).toBe('text');
    expect(loadAppConfig({ MEMSTORE_LOG_FORMAT: 'json' }).logFormat).toBe('json');
    expect(() => loadAppConfig({ MEMSTORE_LOG_FORMAT: 'xml' })).toThrow(/MEMSTORE_LOG_FORMAT must be text or json/);
  });

  it('MEMSTORE_METRICS_ALLOWED_IPS is empty by default and normalised when given', () => {
    expect(loadAppConfig({}).metricsAllowedIps).toEqual([]);
    expect(loadAppConfig({ MEMSTORE_METRICS_ALLOWED_IPS: ' 10.0.0.0/8, ::ffff:192.168.1.5 ,' }).metricsAllowedIps).toEqual(['10.0.0.0/8', '192.168.1.5']);
    expect(() => loadAppConfig({ MEMSTORE_METRICS_ALLOWED_IPS: 'prometheus.local' })).toThrow(/MEMSTORE_METRICS_ALLOWED_IPS/);
  });

  it('MEMSTORE_AUDIT_RETENTION_DAYS defaults to 90 and must be a positive integer', () => {
    expect(loadAppConfig({}).auditRetentionDays).toBe(90);
    expect(loadAppConfig({ MEMSTORE_AUDIT_RETENTION_DAYS: '7' }).auditRetentionDays).toBe(7);
    expect(() => loadAppConfig({ MEMSTORE_AUDIT_RETENTION_DAYS: '0' })).toThrow(/MEMSTORE_AUDIT_RETENTION_DAYS/);
  });
});

describe('withDotEnv: the .env file of the working directory', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-dotenv-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('adds its variables; the real environment wins, also with an empty value', () => {
    const file = path.join(dir, '.env');
    fs.writeFileSync(file, '# settings\nMEMSTORE_PORT=9123\nMEMSTORE_HOST="0.0.0.0"\nMEMSTORE_LOG_LEVEL=error\nexport MEMSTORE_ADMIN_USERNAME=root\n');
    const env = withDotEnv({ MEMSTORE_PORT: '8181', MEMSTORE_LOG_LEVEL: '' }, file);
    expect(env).toMatchObject({ MEMSTORE_PORT: '8181', MEMSTORE_HOST: '0.0.0.0', MEMSTORE_LOG_LEVEL: '', MEMSTORE_ADMIN_USERNAME: 'root' });
    const cfg = loadAppConfig(env);
    expect([cfg.port, cfg.host, cfg.logLevel, cfg.adminUsername]).toEqual([8181, '0.0.0.0', 'info', 'root']);
  });

  it('no file: the environment as it is; an unreadable one: an error naming it', () => {
    const env = { MEMSTORE_PORT: '1' };
    expect(withDotEnv(env, path.join(dir, '.env'))).toBe(env);
    fs.mkdirSync(path.join(dir, 'dir.env'));
    expect(() => withDotEnv(env, path.join(dir, 'dir.env'))).toThrow(`cannot read ${path.join(dir, 'dir.env')}`);
  });
});
