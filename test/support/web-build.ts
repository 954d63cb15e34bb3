import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
export const WEB_SRC = path.join(ROOT, 'web');
export const WEB_DIST = path.join(ROOT, 'dist', 'web');
const LOCK = path.join(ROOT, 'dist', '.web-build.lock');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

function isFresh(): boolean {
  const index = path.join(WEB_DIST, 'index.html');
  return fs.existsSync(index) && fs.statSync(index).mtimeMs >= newestMtime(WEB_SRC);
}

function sleep(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Tests run from the TypeScript sources, where `npm run build` may never have run: build the
 * admin page with Vite into dist/web when it is missing or older than web/, so a test never
 * sees a stub or a stale page. A lock directory keeps parallel jest workers from building at once.
 */
export function ensureWebBuilt(): void {
  if (isFresh()) return;
  fs.mkdirSync(path.dirname(LOCK), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      break;
    } catch {
      // A lock older than a build can take was left by a killed run: take it over.
      const age = Date.now() - (fs.statSync(LOCK, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 150_000) fs.rmSync(LOCK, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`admin page build: lock ${LOCK} held for 2 minutes (remove it if no build runs)`);
      sleep(200);
    }
  }
  try {
    if (isFresh()) return;
    const vitePkg = require.resolve('vite/package.json', { paths: [ROOT] });
    const vite = path.join(path.dirname(vitePkg), (JSON.parse(fs.readFileSync(vitePkg, 'utf8')) as { bin: { vite: string } }).bin.vite);
    execFileSync(process.execPath, [vite, 'build', '--config', path.join(WEB_SRC, 'vite.config.ts')], { cwd: ROOT, stdio: 'pipe', timeout: 120_000 });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    throw new Error(`admin page build (vite) failed: ${e.stderr?.toString() || e.message}`, { cause: err });
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}
