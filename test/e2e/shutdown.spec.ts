import * as http from 'node:http';
import { tempDir } from '../support/app';
import { spawnService } from '../support/service-process';

/** The real process, started as `npm start` would (from the TypeScript sources), then sent SIGTERM. */
describe('process shutdown', () => {
  jest.setTimeout(90_000);

  it('on SIGTERM finishes the request in flight, refuses new connections and exits 0', async () => {
    const { proc, port, output, exited } = await spawnService(tempDir(), { MEMSTORE_ADMIN_PASSWORD: 'shutdown-test-password', MEMSTORE_SECRET_KEY: 'shutdown-test-secret-key-0123456789abcdef' });

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
