/**
 * Memory use of export and import at 100,000 memories (issue 12). Not a test: run it by hand,
 *   node --expose-gc -r ts-node/register/transpile-only bench/portability-memory.ts [--n 100000] [--export-only] [--compare-serial]
 * It seeds N memories into a fresh embedded data directory through MemoriesService (every 10th
 * with two earlier versions, so the archive has history), exports them to a zip (ExportService,
 * as GET /api/export does), imports the zip into a second fresh data directory (ImportService, as
 * POST /api/import does), and samples RSS and heap every 100 ms. --compare-serial first imports
 * into another fresh directory one file at a time (concurrency 1, the old behaviour), in the same
 * process, so the two import times are comparable on a noisy machine.
 */
import { NestFactory } from '@nestjs/core';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { CliModule } from '../src/cli/context';
import { loadAppConfig } from '../src/config/app-config';
import type { MemoryDoc } from '../src/backends/ports/memory.model';
import { MemoriesService } from '../src/memories/memories.service';
import { newMemoryId } from '../src/memories/memory-id';
import { ExportService } from '../src/portability/export.service';
import { ImportService } from '../src/portability/import.service';

const n = Number(process.argv[process.argv.indexOf('--n') + 1]) || 100_000;
const MB = (b: number) => `${(b / 1048576).toFixed(1)} MiB`;

async function open(dir: string) {
  const cfg = loadAppConfig({ MEMSTORE_DATA_DIR: dir, MEMSTORE_SECRET_KEY: 'bench-secret-key-0123456789abcdef0123456789', MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_SEARCH_WORKERS: '0' });
  return NestFactory.createApplicationContext(CliModule.register(cfg), { logger: false });
}

async function measure<T>(label: string, fn: () => Promise<T>): Promise<T> {
  (global as { gc?: () => void }).gc?.();
  const base = process.memoryUsage();
  let peakRss = base.rss;
  let peakHeap = base.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakHeap = Math.max(peakHeap, m.heapUsed);
  }, 100);
  const t0 = Date.now();
  try {
    return await fn();
  } finally {
    clearInterval(timer);
    console.log(
      `${label}: ${((Date.now() - t0) / 1000).toFixed(1)} s; RSS ${MB(base.rss)} before, peak ${MB(peakRss)} (+${MB(peakRss - base.rss)}); heap used ${MB(base.heapUsed)} before, peak ${MB(peakHeap)} (+${MB(peakHeap - base.heapUsed)})`,
    );
  }
}

async function main(): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-portability-bench-'));
  const zipFile = path.join(root, 'export.zip');
  const a = await open(path.join(root, 'a'));
  const svc = a.get(MemoriesService);
  const t0 = Date.UTC(2024, 0, 1);
  const seedStart = Date.now();
  for (let start = 0; start < n; start += 200) {
    const docs: MemoryDoc[] = [];
    for (let i = start; i < Math.min(n, start + 200); i++) {
      const at = new Date(t0 + i * 1000);
      docs.push({
        id: newMemoryId(at.getTime()),
        namespace: 'default',
        title: `Memory ${i}`,
        type: 'note',
        scope: 'global',
        tags: [`t${i % 50}`],
        agent: null,
        project: `p${i % 20}`,
        content: `Memory number ${i}. ${'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(8)}`,
        createdAt: at,
        updatedAt: at,
        version: 1,
      });
    }
    await Promise.all(docs.map((d) => svc.putExact(d, false)));
    for (const d of docs.filter((_, k) => k % 10 === 0)) {
      await svc.update('default', d.id, { content: `${d.content} (second)` });
      await svc.update('default', d.id, { content: `${d.content} (third)` });
    }
    if (start % 10000 === 0) console.log(`seeded ${start} (${((Date.now() - seedStart) / 1000).toFixed(0)} s)`);
  }
  console.log(`seeded ${n} memories in ${((Date.now() - seedStart) / 1000).toFixed(0)} s`);

  await measure(`export of ${n}`, async () => {
    // Heap after a full GC at 10 % and at 90 % of the export: what the export retains, without garbage.
    const gc = (global as { gc?: () => void }).gc;
    const retained: string[] = [];
    const onProgress = (count: number, total: number) => {
      if (gc && (count === Math.floor(total / 10) || count === Math.floor((total * 9) / 10))) {
        gc();
        retained.push(`${count}: ${MB(process.memoryUsage().heapUsed)}`);
      }
    };
    const { output, done } = await a.get(ExportService).start({ filter: { namespace: 'default' }, filters: {}, onProgress });
    void done.then(() => console.log(`export heap after GC at ${retained.join(', at ')}`));
    await Promise.all([pipeline(output, fs.createWriteStream(zipFile)), done]);
  });
  console.log(`archive: ${MB(fs.statSync(zipFile).size)}`);
  await a.close();

  if (process.argv.includes('--export-only')) {
    fs.rmSync(root, { recursive: true, force: true });
    return;
  }
  if (process.argv.includes('--compare-serial')) {
    const s = await open(path.join(root, 's'));
    const serial = await measure(`import of ${n}, one file at a time`, () =>
      s.get(ImportService).importFile(zipFile, { onConflict: 'skip', dryRun: false, format: 'auto', filename: 'export.zip', concurrency: 1, namespace: 'default' }),
    );
    console.log(`import report: created ${serial.created}, versions ${serial.versions}, skipped ${serial.skipped}, invalid ${serial.invalid}`);
    await s.close();
    fs.rmSync(path.join(root, 's'), { recursive: true, force: true });
  }
  const b = await open(path.join(root, 'b'));
  const report = await measure(`import of ${n}`, () => b.get(ImportService).importFile(zipFile, { onConflict: 'skip', dryRun: false, format: 'auto', filename: 'export.zip', namespace: 'default' }));
  console.log(`import report: created ${report.created}, versions ${report.versions}, skipped ${report.skipped}, invalid ${report.invalid}`);
  await b.close();
  fs.rmSync(root, { recursive: true, force: true });
}

void main().catch((e) => {
  console.error(e);
  process.exit(1);
});
