import { ChildProcess, spawn } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import { tempDir } from '../support/app';

/** The real process, started as `npm start` would (from the TypeScript sources), then sent SIGTERM. */
function startServer(dataDir: string): Promise<{ proc: ChildProcess; port: number; output: () => string }> {
  const root = path.resolve(__dirname, '../..');
  const proc = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      MEMSTORE_DATA_DIR: dataDir,
      MEMSTORE_PORT: '0',
      MEMSTORE_ADMIN_PASSWORD: 'shutdown-test-password',
      MEMSTORE_SECRET_KEY: 'shutdown-test-secret-key-0123456789abcdef',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  proc.stderr.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${out}`)), 60_000);
    const onData = () => {
      const m = /Listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, port: Number(m[1]), output: () => out });
      }
    };
    proc.stdout.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`server exited with ${code}:\n${out}`)));
  });
}

describe('process shutdown', () => {
  jest.setTimeout(90_000);

  it('on SIGTERM finishes the request in flight, refuses new connections and exits 0', async () => {
    const { proc, port, output } = await startServer(tempDir());
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));

    // A request whose body is still arriving when SIGTERM is sent.
    const body = JSON.stringify({ username: 'admin', password: 'wrong' });
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/login', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let data = '';
        res.on('data', (d) => (data += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: data }));
      });
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => {
        proc.kill('SIGTERM');
        setTimeout(() => req.end(body.slice(5)), 500);
      }, 200);
    });

    const res = await inFlight;
    expect(res.status).toBe(401);
    expect(JSON.parse(res.body)).toMatchObject({ ok: false });
    expect(await exited).toBe(0);
    expect(output()).toContain('SIGTERM received');
    await expect(new Promise((resolve, reject) => http.get({ host: '127.0.0.1', port, path: '/api/health' }, resolve).on('error', reject))).rejects.toThrow(/ECONNREFUSED/);
  });
});
