/**
 * `npm run bench` and `npm run eval` write their own results (docs/decisions/0029): one JSON and
 * one markdown file per run, numbered per day so runs never overwrite each other, and a latest
 * copy of the tables.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { benchMarkdown, evalMarkdown, writeResults } = require('../../bench/lib/results');

function benchReport(rps: number) {
  return {
    startedAt: '2026-11-27T05:00:00.000Z',
    finishedAt: '2026-11-27T05:01:00.000Z',
    commit: 'abc123',
    options: { n: 200, duration: 1, only: ['search'] },
    machine: { node: 'v24.0.0', cpus: 2, cpuModel: 'Test CPU', memGb: 8, loadAvgStart: [1, 1, 1] },
    loadAvgEnd: [1, 1, 1],
    clean: true,
    results: [{ name: 'search-1', rps, latencyMs: { p50: 1.5, p99: 4.25, max: 9 }, errors: 0, timeouts: 0, non2xx: 0, server: { cpuMsPerRequest: 0.8, rssPeak: 104857600 }, hits: { mean: 12 } }],
    baseline: [{ name: 'baseline-search-1', of: 'search-1', rps: 900, latencyMs: { p50: 1, p99: 3, max: 5 }, errors: 0, timeouts: 0, non2xx: 0, server: { cpuMsPerRequest: 0.6, rssPeak: 52428800 } }],
    vectorRecall: { k: 10, recall: 0.987654, queries: 64 },
  };
}

describe('bench results files', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-results-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes each run to its own numbered files and the last one to latest.md', () => {
    const started = new Date('2026-11-27T05:00:00Z');
    const first = writeResults('bench', started, benchReport(1000), benchMarkdown(benchReport(1000)), dir);
    const second = writeResults('bench', started, benchReport(2000), benchMarkdown(benchReport(2000)), dir);
    expect(path.basename(first.jsonFile)).toBe('2026-11-27-1.json');
    expect(path.basename(second.mdFile)).toBe('2026-11-27-2.md');
    expect(JSON.parse(fs.readFileSync(first.jsonFile, 'utf8')).results[0].rps).toBe(1000);
    expect(fs.readFileSync(path.join(dir, 'latest.md'), 'utf8')).toBe(fs.readFileSync(second.mdFile, 'utf8'));
  });

  it('puts every class, the baseline and other measurements in the markdown tables', () => {
    const md: string = benchMarkdown(benchReport(1234));
    expect(md).toContain('| search-1 | 1234 | 1.50 | 4.25 | 9.00 | 0 | 0 | 0.80 | 100 | 12 |');
    expect(md).toContain('| baseline-search-1 | 900 |');
    expect(md).toContain('- commit: abc123');
    expect(md).toContain('### vectorRecall');
    expect(md).toContain('- recall: 0.9877');
  });

  it('keeps eval runs apart from bench runs', () => {
    const report = { hybrid: { n: 760, r1: 0.398, r5: 0.704, r10: 0.789, h1: 0.5, h5: 0.774, h10: 0.85, mrr: 0.58, ran: 'hybrid', byCategory: { 1: { n: 10, r5: 0.377 } } } };
    const meta = { startedAt: '2026-11-27T05:00:00.000Z', commit: 'abc123', data: 'locomo-dev.json', questions: 760 };
    const w = writeResults('eval', new Date('2026-11-27T05:00:00Z'), { ...meta, modes: report }, evalMarkdown(report, meta), dir);
    expect(path.basename(w.jsonFile)).toBe('eval-2026-11-27-1.json');
    expect(path.basename(w.latest)).toBe('latest-eval.md');
    expect(fs.existsSync(path.join(dir, 'latest.md'))).toBe(false);
    expect(fs.readFileSync(w.latest, 'utf8')).toContain('| hybrid | hybrid | 760 | 0.398 | 0.704 | 0.789 | 0.500 | 0.774 | 0.850 | 0.580 |');
  });
});
