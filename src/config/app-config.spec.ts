import * as os from 'node:os';
import { defaultSearchWorkers, loadAppConfig } from './app-config';

describe('loadAppConfig: MEMSTORE_SEARCH_WORKERS', () => {
  it('defaults to one search worker per core beyond the first, at most 2', () => {
    const expected = Math.max(0, Math.min(2, os.availableParallelism() - 1));
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
