import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { UnauthorizedError } from '../../common/errors';
import { AppConfig } from '../../config/app-config';
import { AdminPasswordService } from './admin-password.service';

function call(fn: (cb: (err?: Error) => void) => void): Promise<void> {
  return new Promise((resolve, reject) => fn((err) => (err ? reject(err) : resolve())));
}

/** Ends the request's session, if any. */
export async function endSession(req: Request): Promise<void> {
  if (req.session) await call((cb) => req.session.destroy(cb));
}

/** Sign-in and sign-out on the express-session of the request. */
@Injectable()
export class AdminAuthService {
  constructor(
    private readonly password: AdminPasswordService,
    private readonly cfg: AppConfig,
  ) {}

  /** Checks the credentials, then starts a fresh session (new id: no session fixation). */
  async login(req: Request, username: string, password: string): Promise<string> {
    if (!(await this.password.verify(username, password))) throw new UnauthorizedError('Wrong username or password');
    await call((cb) => req.session.regenerate(cb));
    req.session.admin = { username: this.cfg.adminUsername, signedInAt: Date.now() };
    await call((cb) => req.session.save(cb));
    return this.cfg.adminUsername;
  }

  async logout(req: Request): Promise<void> {
    await endSession(req);
  }
}
