import { randomBytes } from 'node:crypto';
import { adminPasswordEnv, adminPasswordProblem, storeAdminPassword } from '../admin/auth/admin-password.service';
import { AuditService } from '../audit/audit.service';
import { BackendsService } from '../backends/backends.service';
import { loadAppConfig } from '../config/app-config';
import { SettingsService } from '../config/settings.service';
import { withApp } from './context';
import { Command, EXIT, parseOptions, UsageError } from './io';

export const adminCommand: Command = {
  name: 'admin',
  summary: 'The administrator account: set-password',
  usage: `memstore admin set-password [--generate]

Sets the admin password (its bcrypt hash, in the credential store of the data directory), signs
out every admin session and records it in the audit log. The password is asked twice on a
terminal (not shown) or read from the first line of stdin, never from the command line:
  printf '%s\\n' "$NEW_PASSWORD" | memstore admin set-password
--generate makes a random one and prints it once. At least 12 characters, at most 72 bytes.
Refused while MEMSTORE_ADMIN_PASSWORD or MEMSTORE_ADMIN_PASSWORD_HASH is set: they win at every
start. A running service takes the new password at its next sign-in.
Exit codes: 0 changed, 1 failed, 2 usage.`,
  async run(args, env, io) {
    const { values, positionals } = parseOptions(args, { generate: { type: 'boolean' } }, 1);
    if (positionals[0] !== 'set-password') throw new UsageError(positionals[0] ? `Unknown admin command: ${positionals[0]}` : 'the admin command is missing (set-password)');
    const fixed = adminPasswordEnv(loadAppConfig(env));
    if (fixed) throw new Error(`the admin password is set by ${fixed}; change it there (and restart the service), or unset it to use a stored password`);
    let password: string;
    if (values.generate) password = randomBytes(18).toString('base64url');
    else {
      if (!io.readSecret) throw new UsageError('no way to read the password here: use --generate');
      const first = await io.readSecret('New admin password: ');
      if (first === null || first === '') throw new UsageError('no password was given (type it, pipe it on stdin, or use --generate)');
      const problem = adminPasswordProblem(first);
      if (problem) throw new UsageError(problem);
      if (io.interactive) {
        const again = await io.readSecret('Repeat it: ');
        if (again !== first) throw new UsageError('the two passwords differ; nothing was changed');
      }
      password = first;
    }
    return withApp(
      env,
      async (app, cfg) => {
        const backends = app.get(BackendsService);
        const { signedOut } = await storeAdminPassword(cfg, app.get(SettingsService), backends.docdb.sessions, password);
        await new AuditService(backends.docdb.audit, backends.docdb.tokens, cfg).record('admin.password_change', {
          actor: { kind: 'admin', id: cfg.adminUsername, name: cfg.adminUsername },
          detail: { via: 'command line', sessions_signed_out: signedOut },
        });
        if (values.generate) io.out(`New admin password for ${cfg.adminUsername}: ${password}\n(shown only this once; only its hash is kept)`);
        io.out(`The admin password of ${cfg.adminUsername} was changed; ${signedOut} admin session(s) signed out.`);
        return EXIT.ok;
      },
      { command: 'admin set-password', io, existing: true },
    );
  },
};
