import { Injectable, Logger, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { slowDown } from 'express-slow-down';
import { TooManyRequestsError } from '../../common/errors';
import { sendError } from '../../common/http-exception.filter';
import { RateLimitRepository } from '../../backends/ports/rate-limit.repository';
import { AppConfig } from '../../config/app-config';
import { SettingsService } from '../../config/settings.service';
import { loginThrottleKey } from './device-cookie';
import { SharedRateLimitStore } from './shared-rate-limit.store';

/** Extra delay per failed attempt once half the allowed failures are used up, capped. */
const STEP_MS = 500;
const MAX_DELAY_MS = 5000;
/** While the document database fails, at most one warning per this period. */
const WARN_EVERY_MS = 60_000;

/**
 * POST /api/login throttling, counting failed attempts only (a successful sign-in gives its attempt
 * back) per client address and username tried — or, for a browser that signed in before, per its
 * device cookie (decision 0052: behind a proxy without MEMSTORE_TRUST_PROXY every client shares one
 * address, and strangers must not be able to lock the admin's browser out): after half of
 * MEMSTORE_LOGIN_MAX_FAILURES each further try is slowed down, after MEMSTORE_LOGIN_MAX_FAILURES
 * within MEMSTORE_LOGIN_WINDOW_SECONDS that key gets 429 with Retry-After until the window ends.
 *
 * The counters live in the active document database (RateLimitRepository, through
 * SharedRateLimitStore): instances sharing a MongoDB (or a data directory) count the same
 * attempts, and a restart does not reset them. After a switch of document database the counters
 * start afresh in the new one. While the document database fails, each instance throttles with
 * its own in-process counters (logging a warning at most once a minute) rather than refusing or
 * waving through sign-ins. Only POST /api/login passes through here.
 */
@Injectable()
export class LoginThrottleMiddleware implements NestMiddleware {
  private readonly logger = new Logger('LoginThrottle');
  private readonly limiter: RequestHandler;
  private readonly slower: RequestHandler;
  private lastWarning = 0;

  constructor(cfg: AppConfig, counters: RateLimitRepository, settings: SettingsService) {
    const windowMs = cfg.loginWindowSeconds * 1000;
    // Per address and username tried, or per device cookie (device-cookie.ts, decision 0052).
    const keyGenerator = (req: Request) => loginThrottleKey(req, settings.serviceKey());
    const onFallback = (e: unknown) => this.fellBack(e);
    this.limiter = rateLimit({
      store: new SharedRateLimitStore('login-limit:', counters, onFallback),
      windowMs,
      limit: cfg.loginMaxFailures,
      skipSuccessfulRequests: true,
      keyGenerator,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: (req, res) => sendError(new TooManyRequestsError('Too many failed sign-in attempts; try again later'), req, res),
    });
    this.slower = slowDown({
      store: new SharedRateLimitStore('login-slow:', counters, onFallback),
      windowMs,
      delayAfter: Math.max(1, Math.floor(cfg.loginMaxFailures / 2)),
      delayMs: (used, req) => (used - req.slowDown.limit) * STEP_MS,
      maxDelayMs: MAX_DELAY_MS,
      skipSuccessfulRequests: true,
      keyGenerator,
    });
  }

  private fellBack(e: unknown): void {
    if (Date.now() - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = Date.now();
    const reason = e instanceof Error ? e.message : String(e);
    this.logger.warn(`Login throttling uses in-process counters until the document database answers again: ${reason}`);
  }

  use(req: Request, res: Response, next: NextFunction): void {
    const fail = (err?: unknown) => sendError(err, req, res);
    this.limiter(req, res, (err?: unknown) => {
      if (err) return fail(err);
      this.slower(req, res, (err2?: unknown) => (err2 ? fail(err2) : next()));
    });
  }
}
