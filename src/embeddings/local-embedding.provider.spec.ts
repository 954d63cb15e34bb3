import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { defaultModelDir } from '../config/app-config';

/**
 * What the local model does to the process around it: with MEMSTORE_LOG_FORMAT=json every line
 * the service prints must be JSON, so loading and running the model prints nothing of its own, and
 * onnxruntime-node's telemetry client (on by default in its Linux build: it writes an event store
 * under $HOME/.cache/Microsoft and uploads it) stays off. A child process with a fresh HOME.
 */
describe('LocalEmbeddingProvider: a silent neighbour', () => {
  const modelDir = defaultModelDir();
  let home: string;

  beforeEach(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'memstore-ort-home-'));
  });
  afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

  function embedInChild(): Promise<{ status: number | null; stdout: string; stderr: string }> {
    const script = `
      const { LocalEmbeddingProvider } = require(${JSON.stringify(path.join(__dirname, 'local-embedding.provider.ts'))});
      const p = new LocalEmbeddingProvider(${JSON.stringify(modelDir)});
      p.embed('a memory about running', 'document')
        .then((v) => { process.stdout.write(JSON.stringify({ dims: v.length }) + '\\n'); return p.close(); })
        .catch((e) => { process.stdout.write(JSON.stringify({ failed: e.message }) + '\\n'); process.exitCode = 1; });`;
    const { ORT_DISABLE_TELEMETRY: _inherited, ...parentEnv } = process.env;
    const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', '-e', script], {
      cwd: path.join(__dirname, '..', '..'),
      env: { ...parentEnv, HOME: home, XDG_CACHE_HOME: path.join(home, '.cache'), TS_NODE_COMPILER_OPTIONS: '{"module":"commonjs"}' },
      timeout: 110_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
  }

  // A child that compiles the provider and its worker with ts-node: slow on a loaded machine.
  it('embeds while printing nothing but its caller\'s line, and writes no telemetry', async () => {
    const child = await embedInChild();
    expect(child.stderr).toBe('');
    expect(child.stdout.trim().split('\n')).toEqual([JSON.stringify({ dims: 384 })]);
    expect(child.status).toBe(0);
    expect(fs.existsSync(path.join(home, '.cache', 'Microsoft'))).toBe(false);
  }, 120_000);
});
