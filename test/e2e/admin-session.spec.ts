import request from 'supertest';
import { BackendsService } from '../../src/backends/backends.service';
import { SessionRepository } from '../../src/backends/ports/session.repository';
import { BackendUnavailableError } from '../../src/common/errors';
import { SettingsService } from '../../src/config/settings.service';
import { ADMIN_PASSWORD, adminAgent, createTestApp, TestApp, tempDir } from '../support/app';
import { testBackends } from '../support/backends';

const COOKIE = 'memstore.sid';

function sessionCookie(res: request.Response): string | undefined {
  const raw = res.headers['set-cookie'] as unknown as string[] | undefined;
  return raw?.find((c) => c.startsWith(`${COOKIE}=`));
}

/** "memstore.sid=<value>" from a Set-Cookie line. */
const cookiePair = (setCookie: string) => setCookie.split(';')[0];
const login = (t: TestApp, body: object) => request(t.http).post('/api/login').send(body);

describe.each(testBackends())('admin sign-in on $name', (backend) => {
  describe('one app', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp(await backend.env());
    });
    afterAll(async () => {
      await t?.close();
    });

    it('login → me → admin route → logout → 401', async () => {
      const res = await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      expect(res.body).toEqual({ ok: true, username: 'admin', must_change_password: false });
      const cookie = cookiePair(sessionCookie(res)!);

      const me = await request(t.http).get('/api/me').set('Cookie', cookie).expect(200);
      expect(me.body).toEqual({ ok: true, authenticated: true, kind: 'admin', username: 'admin', must_change_password: false });
      await request(t.http).get('/api/tokens').set('Cookie', cookie).expect(200);
      // a signed-in admin may use every memory route
      await request(t.http).get('/api/memories').set('Cookie', cookie).expect(200);

      const out = await request(t.http).post('/api/logout').set('Cookie', cookie).expect(200);
      expect(out.body).toEqual({ ok: true });
      const cleared = sessionCookie(out)!;
      expect(cleared).toMatch(/^memstore\.sid=;/);
      expect(cleared).toMatch(/Expires=Thu, 01 Jan 1970/);

      const after = await request(t.http).get('/api/tokens').set('Cookie', cookie).expect(401);
      expect(after.body).toEqual({ ok: false, error: expect.any(String) });
      expect((await request(t.http).get('/api/me').set('Cookie', cookie).expect(200)).body).toEqual({ ok: true, authenticated: false });
    });

    it('the session cookie is HttpOnly, SameSite=Lax, path /, 12 h, not Secure over plain HTTP', async () => {
      const res = await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      const c = sessionCookie(res)!;
      expect(c).toMatch(/; HttpOnly/);
      expect(c).toMatch(/; SameSite=Lax/);
      expect(c).toMatch(/; Path=\//);
      const expires = Date.parse(/Expires=([^;]+)/.exec(c)![1]);
      expect(Math.abs(expires - (Date.now() + 12 * 3600_000))).toBeLessThan(5000);
      expect(c).not.toMatch(/; Secure/);
    });

    it('anonymous requests get no cookie', async () => {
      const res = await request(t.http).get('/api/me').expect(200);
      expect(res.body).toEqual({ ok: true, authenticated: false });
      expect(sessionCookie(res)).toBeUndefined();
      expect(sessionCookie(await request(t.http).get('/api/memories'))).toBeUndefined();
    });

    it('signing in again issues a new session id and ends the old one', async () => {
      const first = cookiePair(sessionCookie(await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200))!);
      const second = sessionCookie(await request(t.http).post('/api/login').set('Cookie', first).send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200))!;
      expect(cookiePair(second)).not.toBe(first);
      await request(t.http).get('/api/tokens').set('Cookie', first).expect(401);
      await request(t.http).get('/api/tokens').set('Cookie', cookiePair(second)).expect(200);
    });

    it('sessions are kept in the document database, not in memory', async () => {
      const c = cookiePair(sessionCookie(await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200))!);
      const sid = decodeURIComponent(c.split('=')[1]).replace(/^s:/, '').split('.')[0];
      const stored = await t.app.get(SessionRepository).get(sid);
      expect(stored).not.toBeNull();
      expect(JSON.parse(stored!.data).admin.username).toBe('admin');
      await request(t.http).post('/api/logout').set('Cookie', c).expect(200);
      expect(await t.app.get(SessionRepository).get(sid)).toBeNull();
    });

    it.each([
      ['a wrong password', { username: 'admin', password: 'nope' }],
      ['a wrong username with the right password', { username: 'root', password: ADMIN_PASSWORD }],
      ['empty credentials', {}],
      ['the username in another case', { username: 'Admin', password: ADMIN_PASSWORD }],
    ])('%s → 401 and no cookie', async (_label, body) => {
      const res = await login(t, body).expect(401);
      expect(res.body).toEqual({ ok: false, error: 'Wrong username or password' });
      expect(sessionCookie(res)).toBeUndefined();
    });

    it('a non-string password → 422', async () => {
      const res = await login(t, { username: 'admin', password: 123 }).expect(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'password'], type: 'string_type' });
    });

    it('logout is idempotent and public', async () => {
      expect((await request(t.http).post('/api/logout').expect(200)).body).toEqual({ ok: true });
      expect((await request(t.http).post('/api/logout').set('Cookie', `${COOKIE}=s%3Agarbage.sig`).expect(200)).body).toEqual({ ok: true });
    });

    it('no credentials on an admin route → 401', async () => {
      expect((await request(t.http).get('/api/tokens').expect(401)).body.ok).toBe(false);
      await request(t.http).get('/api/tokens').set('Cookie', `${COOKIE}=s%3Aforged.signature`).expect(401);
    });

    describe('cross-site requests with the session cookie', () => {
      let agent: Awaited<ReturnType<typeof adminAgent>>;
      beforeAll(async () => {
        agent = await adminAgent(t);
      });

      it('a cross-site Origin on a write → 403', async () => {
        const res = await agent.post('/api/tokens').set('Origin', 'http://evil.example').send({ name: 'csrf' }).expect(403);
        expect(res.body).toEqual({ ok: false, error: 'Cross-site request refused' });
      });

      it('Sec-Fetch-Site: cross-site on a write → 403', async () => {
        await agent.post('/api/tokens').set('Sec-Fetch-Site', 'cross-site').send({ name: 'csrf' }).expect(403);
      });

      it('a cross-site login → 403', async () => {
        await request(t.http).post('/api/login').set('Origin', 'http://evil.example').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(403);
      });

      it('same-origin writes and plain clients are allowed; reads are never refused', async () => {
        await agent.post('/api/tokens').set('Host', 'memstore.test:8080').set('Origin', 'http://memstore.test:8080').set('Sec-Fetch-Site', 'same-origin').send({ name: 'ok' }).expect(201);
        await agent.post('/api/tokens').send({ name: 'curl' }).expect(201);
        await agent.get('/api/tokens').set('Origin', 'http://evil.example').set('Sec-Fetch-Site', 'cross-site').expect(200);
      });
    });
  });

  it('Secure cookie when MEMSTORE_COOKIE_SECURE=true, or behind an HTTPS proxy with auto', async () => {
    const forced = await createTestApp({ ...(await backend.env()), MEMSTORE_COOKIE_SECURE: 'true', MEMSTORE_TRUST_PROXY: 'true' });
    const proxied = await createTestApp({ ...(await backend.env()), MEMSTORE_TRUST_PROXY: 'true' });
    try {
      // express-session only sends a Secure cookie on a request it sees as HTTPS (here: via the trusted proxy)
      const viaProxy = await request(forced.http).post('/api/login').set('X-Forwarded-Proto', 'https').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      expect(sessionCookie(viaProxy)).toMatch(/; Secure/);
      const auto = await request(proxied.http).post('/api/login').set('X-Forwarded-Proto', 'https').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      expect(sessionCookie(auto)).toMatch(/; Secure/);
      const plain = await request(proxied.http).post('/api/login').send({ username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      expect(sessionCookie(plain)).not.toMatch(/; Secure/);
    } finally {
      await forced.close();
      await proxied.close();
    }
  });

  it('throttles failed logins per address: slower, then 429 with Retry-After; successes do not count', async () => {
    const t = await createTestApp({ ...(await backend.env()), MEMSTORE_LOGIN_MAX_FAILURES: '4', MEMSTORE_LOGIN_WINDOW_SECONDS: '120' });
    try {
      for (let i = 0; i < 6; i++) await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      // A browser that signed in once carries a device cookie (issue 46, decision 0052).
      const signedIn = await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
      const device = ([] as string[]).concat(signedIn.headers['set-cookie'] ?? []).find((c) => c.startsWith('memstore.device='));
      expect(device).toMatch(/HttpOnly/i);
      // The delays the throttle schedules (work done, not wall time): none for the first two failures,
      // then a growing step from the third on (half of 4 used up): 0.5 s, then 1 s.
      const timers = jest.spyOn(global, 'setTimeout');
      const delays: number[][] = [];
      try {
        for (let i = 0; i < 4; i++) {
          timers.mockClear();
          await login(t, { username: 'admin', password: `wrong-${i}` }).expect(401);
          delays.push(timers.mock.calls.map(([, ms]) => Number(ms)).filter((ms) => ms === 500 || ms === 1000));
        }
      } finally {
        timers.mockRestore();
      }
      expect(delays[0]).not.toContain(500);
      expect(delays[1]).not.toContain(500);
      expect(delays[2]).toContain(500);
      expect(delays[3]).toContain(1000);
      const limited = await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(429);
      expect(limited.body).toEqual({ ok: false, error: expect.stringMatching(/too many/i) });
      const retryAfter = Number(limited.headers['retry-after']);
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(120);
      expect(sessionCookie(limited)).toBeUndefined();
      // Strangers' failures from the same address (everyone, behind a proxy without MEMSTORE_TRUST_PROXY)
      // do not lock out the admin's browser: its attempts are counted under its device cookie.
      await login(t, { username: 'admin', password: ADMIN_PASSWORD }).set('Cookie', device!.split(';')[0]).expect(200);
      // A forged device cookie counts like none.
      await login(t, { username: 'admin', password: ADMIN_PASSWORD })
        .set('Cookie', `memstore.device=${'A'.repeat(16)}.${'B'.repeat(43)}`)
        .expect(429);
      // other routes are not throttled
      await request(t.http).get('/api/me').expect(200);
    } finally {
      await t.close();
    }
  });

  describe('login throttling counters live in the document database', () => {
    /** Two failures allowed per address: the second is slowed down, the third attempt is refused. */
    const throttledEnv = async () => ({
      ...(await backend.env()),
      MEMSTORE_DATA_DIR: tempDir(),
      MEMSTORE_LOGIN_MAX_FAILURES: '2',
      MEMSTORE_LOGIN_WINDOW_SECONDS: '120',
    });

    it('failures on one instance count on another instance sharing the database', async () => {
      const env = await throttledEnv();
      const a = await createTestApp(env);
      const b = await createTestApp(env);
      try {
        await login(a, { username: 'admin', password: 'wrong-1' }).expect(401);
        await login(a, { username: 'admin', password: 'wrong-2' }).expect(401);
        // B never saw a failure itself, yet refuses this address even with the right password.
        const limited = await login(b, { username: 'admin', password: ADMIN_PASSWORD }).expect(429);
        expect(limited.body).toEqual({ ok: false, error: expect.stringMatching(/too many/i) });
        const retryAfter = Number(limited.headers['retry-after']);
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(120);
        expect(sessionCookie(limited)).toBeUndefined();
        await login(a, { username: 'admin', password: ADMIN_PASSWORD }).expect(429);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('a sign-in on one instance gives its attempt back on the other', async () => {
      const env = await throttledEnv();
      const a = await createTestApp(env);
      const b = await createTestApp(env);
      try {
        // The limiter gives a successful attempt back once the response is sent: leave it a moment.
        const signIn = async () => {
          await login(b, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
          await new Promise((r) => setTimeout(r, 500));
        };
        await login(a, { username: 'admin', password: 'wrong-1' }).expect(401);
        await signIn();
        await signIn();
        await login(a, { username: 'admin', password: 'wrong-2' }).expect(401);
        await login(b, { username: 'admin', password: 'wrong-3' }).expect(429);
      } finally {
        await a.close();
        await b.close();
      }
    });

    it('the counters survive an app restart', async () => {
      const env = await throttledEnv();
      const first = await createTestApp(env);
      try {
        await login(first, { username: 'admin', password: 'wrong-1' }).expect(401);
        await login(first, { username: 'admin', password: 'wrong-2' }).expect(401);
      } finally {
        await first.close();
      }
      const second = await createTestApp(env);
      try {
        await login(second, { username: 'admin', password: ADMIN_PASSWORD }).expect(429);
      } finally {
        await second.close();
      }
    });
  });

  it('a session survives an app restart on the same data directory', async () => {
    const env = { ...(await backend.env()), MEMSTORE_DATA_DIR: tempDir() };
    const first = await createTestApp(env);
    const cookie = cookiePair(sessionCookie(await login(first, { username: 'admin', password: ADMIN_PASSWORD }).expect(200))!);
    await request(first.http).get('/api/tokens').set('Cookie', cookie).expect(200);
    await first.close();

    const second = await createTestApp(env);
    try {
      await request(second.http).get('/api/tokens').set('Cookie', cookie).expect(200);
      expect((await request(second.http).get('/api/me').set('Cookie', cookie)).body).toMatchObject({ kind: 'admin' });
    } finally {
      await second.close();
    }
  });

  it('MEMSTORE_ADMIN_PASSWORD_HASH and MEMSTORE_ADMIN_USERNAME are honoured', async () => {
    const bcrypt = await import('bcrypt');
    const hash = await bcrypt.hash('from-a-hash', 4);
    const t = await createTestApp({ ...(await backend.env()), MEMSTORE_ADMIN_PASSWORD: '', MEMSTORE_ADMIN_PASSWORD_HASH: hash, MEMSTORE_ADMIN_USERNAME: 'keeper' });
    try {
      await login(t, { username: 'keeper', password: 'from-a-hash' }).expect(200);
      await login(t, { username: 'admin', password: 'from-a-hash' }).expect(401);
      await login(t, { username: 'keeper', password: ADMIN_PASSWORD }).expect(401);
    } finally {
      await t.close();
    }
  });

  it('refuses to start with a MEMSTORE_ADMIN_PASSWORD_HASH that is not a bcrypt hash', async () => {
    await expect(createTestApp({ ...(await backend.env()), MEMSTORE_ADMIN_PASSWORD: '', MEMSTORE_ADMIN_PASSWORD_HASH: 'plain-text' })).rejects.toThrow(
      /MEMSTORE_ADMIN_PASSWORD_HASH is not a bcrypt hash/,
    );
  });

  it('with no password configured, the first start prints a generated one once; only its hash is kept', async () => {
    const env = { ...(await backend.env()), MEMSTORE_DATA_DIR: tempDir(), MEMSTORE_ADMIN_PASSWORD: '' };
    const written: string[] = [];
    const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    let password: string;
    try {
      const first = await createTestApp(env);
      spy.mockRestore();
      const banner = written.join('');
      const m = /password: (\S+)/.exec(banner);
      expect(m).not.toBeNull();
      password = m![1];
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect(banner.match(/password: /g)).toHaveLength(1);
      expect(banner).toMatch(/^\+-+\+$/m); // boxed

      const stored = first.app.get(SettingsService).getInternalSecret('admin_password_hash');
      expect(stored).toMatch(/^\$2[aby]\$/);
      expect(stored).not.toContain(password);
      await login(first, { username: 'admin', password }).expect(200);
      await login(first, { username: 'admin', password: 'guess' }).expect(401);
      await first.close();
    } finally {
      spy.mockRestore();
    }

    // second start: the hash comes from the credential store, nothing is printed again
    written.length = 0;
    const spy2 = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    const second = await createTestApp(env).finally(() => spy2.mockRestore());
    try {
      expect(written.join('')).not.toMatch(/password: /);
      // Signing in with the generated password asks to choose one (sign-in answer and /api/me).
      const first = await login(second, { username: 'admin', password: password! }).expect(200);
      expect(first.body).toEqual({ ok: true, username: 'admin', must_change_password: true });
      const mine = cookiePair(sessionCookie(first)!);
      const other = cookiePair(sessionCookie(await login(second, { username: 'admin', password: password! }).expect(200))!);
      expect((await request(second.http).get('/api/me').set('Cookie', mine).expect(200)).body.must_change_password).toBe(true);

      const change = (body: object) => request(second.http).post('/api/admin/password').set('Cookie', mine).send(body);
      // Wrong current password, too short, the same again: refused in words, nothing changed.
      expect((await change({ current_password: 'not it', new_password: 'a long new passphrase' }).expect(403)).body).toEqual({ ok: false, error: 'The current password is wrong' });
      const short = await change({ current_password: password!, new_password: 'short' }).expect(422);
      expect(short.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'new_password'], msg: 'The new password must have at least 12 characters' })]);
      await change({ current_password: password!, new_password: password! }).expect(422);
      await request(second.http).post('/api/admin/password').send({ current_password: password!, new_password: 'a long new passphrase' }).expect(401);

      const others = (await second.app.get(BackendsService).docdb.sessions.all()).length - 1; // `other`, and the first start's sign-in
      expect(others).toBeGreaterThanOrEqual(1);
      const done = await change({ current_password: password!, new_password: 'a long new passphrase' }).expect(200);
      expect(done.body).toEqual({ ok: true, sessions_signed_out: others });
      expect(await second.app.get(BackendsService).docdb.sessions.all()).toHaveLength(1);
      // This session stays; the other one is signed out; the old password no longer opens.
      expect((await request(second.http).get('/api/me').set('Cookie', mine).expect(200)).body).toMatchObject({ authenticated: true, must_change_password: false });
      await request(second.http).get('/api/tokens').set('Cookie', other).expect(401);
      await login(second, { username: 'admin', password: password! }).expect(401);
      expect((await login(second, { username: 'admin', password: 'a long new passphrase' }).expect(200)).body.must_change_password).toBe(false);
      // Audited: each refusal and the change, never a password.
      const audit = (await request(second.http).get('/api/audit?action=admin.password_change').set('Cookie', mine).expect(200)).body.entries;
      expect(audit).toEqual([
        expect.objectContaining({ outcome: 'success', actor: { kind: 'admin', id: 'admin', name: 'admin' }, detail: { sessions_signed_out: others } }),
        expect.objectContaining({ outcome: 'failure', detail: { status: 422, error: expect.stringContaining('must differ from the current one') } }),
        expect.objectContaining({ outcome: 'failure', detail: { status: 422, error: expect.stringContaining('at least 12 characters') } }),
        expect.objectContaining({ outcome: 'failure', detail: { status: 403, error: 'The current password is wrong' } }),
      ]);
      expect(JSON.stringify(audit)).not.toContain('passphrase');
    } finally {
      await second.close();
    }

    // The command line: `memstore admin set-password` (stdin), audited, every session signed out.
    const { runCli } = await import('../../src/cli');
    const third = await createTestApp(env);
    try {
      const cookie = cookiePair(sessionCookie(await login(third, { username: 'admin', password: 'a long new passphrase' }).expect(200))!);
      const lines: string[] = [];
      const io = { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l), readSecret: async () => 'set from the command line' };
      const live = (await third.app.get(BackendsService).docdb.sessions.all()).length;
      expect(await runCli(['admin', 'set-password'], { ...env, MEMSTORE_SECRET_KEY: third.cfg.secretKey!, MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_EMBEDDING_PROVIDER: 'none' }, io)).toBe(0);
      expect(lines.join('\n')).toContain(`memstore admin set-password: data directory ${env.MEMSTORE_DATA_DIR}`);
      expect(lines.join('\n')).toContain(`The admin password of admin was changed; ${live} admin session(s) signed out.`);
      expect(await third.app.get(BackendsService).docdb.sessions.all()).toEqual([]);
      await request(third.http).get('/api/tokens').set('Cookie', cookie).expect(401);
      // The running service takes the new password at the next sign-in.
      await login(third, { username: 'admin', password: 'a long new passphrase' }).expect(401);
      const again = cookiePair(sessionCookie(await login(third, { username: 'admin', password: 'set from the command line' }).expect(200))!);
      const entries = (await request(third.http).get('/api/audit?action=admin.password_change').set('Cookie', again).expect(200)).body.entries;
      expect(entries[0]).toMatchObject({ outcome: 'success', actor: { kind: 'admin', id: 'admin' }, detail: { via: 'command line', sessions_signed_out: live } });
      // Too short, and a password fixed by the environment: refused, exit codes 2 and 1.
      expect(
        await runCli(
          ['admin', 'set-password'],
          { ...env, MEMSTORE_SECRET_KEY: third.cfg.secretKey!, MEMSTORE_LOG_LEVEL: 'silent', MEMSTORE_EMBEDDING_PROVIDER: 'none' },
          { ...io, readSecret: async () => 'short' },
        ),
      ).toBe(2);
      lines.length = 0;
      expect(await runCli(['admin', 'set-password'], { ...env, MEMSTORE_ADMIN_PASSWORD: 'from the environment' }, io)).toBe(1);
      expect(lines.join('\n')).toContain('the admin password is set by MEMSTORE_ADMIN_PASSWORD');
    } finally {
      await third.close();
    }
  });

  it('POST /api/admin/password is refused (409) while MEMSTORE_ADMIN_PASSWORD sets the password', async () => {
    const t = await createTestApp(await backend.env());
    try {
      const agent = await adminAgent(t);
      const res = await agent.post('/api/admin/password').send({ current_password: ADMIN_PASSWORD, new_password: 'another long password' }).expect(409);
      expect(res.body.error).toBe('The admin password is set by MEMSTORE_ADMIN_PASSWORD; change it there and restart the service');
      await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200);
    } finally {
      await t.close();
    }
  });

  it('the liveness probe and Bearer requests never read the session store', async () => {
    const t = await createTestApp(await backend.env());
    try {
      const cookie = cookiePair(sessionCookie(await login(t, { username: 'admin', password: ADMIN_PASSWORD }).expect(200))!);
      // a stray Authorization header does not stop sign-in from creating a session
      const withHeader = await login(t, { username: 'admin', password: ADMIN_PASSWORD }).set('Authorization', 'Bearer x').expect(200);
      expect(sessionCookie(withHeader)).toBeDefined();
      const sessions = t.app.get(BackendsService).docdb.sessions; // the active adapter behind the port
      const get = jest.spyOn(sessions, 'get').mockRejectedValue(new BackendUnavailableError('Document database', 'session store down'));
      try {
        await request(t.http).get('/api/health').set('Cookie', cookie).expect(200, { ok: true, status: 'ok' });
        // the probe as Express routes it: HEAD, any casing, a trailing slash
        await request(t.http).head('/api/health').set('Cookie', cookie).expect(200);
        await request(t.http).get('/API/Health/').set('Cookie', cookie).expect(200, { ok: true, status: 'ok' });
        // a Bearer request is judged by its token alone, even with an admin cookie beside it
        await request(t.http).get('/api/tokens').set('Cookie', cookie).set('Authorization', 'Bearer mem_tok_0000000000000000_nope').expect(401);
        expect(get).not.toHaveBeenCalled();
        // any other route with the cookie does read it (and answers the store's failure as a 503)
        const down = await request(t.http).get('/api/tokens').set('Cookie', cookie).expect(503);
        expect(down.body.error).toBe('Document database unavailable: session store down');
        expect(get).toHaveBeenCalled();
      } finally {
        get.mockRestore();
      }
    } finally {
      await t.close();
    }
  });
});
