import { Injectable, NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import { slowDown } from 'express-slow-down';
import { AppError } from '../../common/errors';
import { sendError } from '../../common/http-exception.filter';
import { AppConfig } from '../../config/app-config';

export class TooManyRequestsError extends AppError {
  constructor(message: string) {
    super(429, message);
  }
}

/** Extra delay per failed attempt once half the allowed failures are used up, capped. */
const STEP_MS = 500;
const MAX_DELAY_MS = 5000;

/**
 * POST /api/login throttling per client address, counting failed attempts only (a successful
 * sign-in gives its attempt back): after half of MEMSTORE_LOGIN_MAX_FAILURES each further try is
 * slowed down, after MEMSTORE_LOGIN_MAX_FAILURES within MEMSTORE_LOGIN_WINDOW_SECONDS the
 * address gets 429 with Retry-After until the window ends. Counters are per process.
 */
@Injectable()
export class LoginThrottleMiddleware implements NestMiddleware {
  private readonly limiter: RequestHandler;
  private readonly slower: RequestHandler;

  constructor(cfg: AppConfig) {
    const windowMs = cfg.loginWindowSeconds * 1000;
    this.limiter = rateLimit({
      windowMs,
      limit: cfg.loginMaxFailures,
      skipSuccessfulRequests: true,
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      handler: (req, res) => sendError(new TooManyRequestsError('Too many failed sign-in attempts; try again later'), req, res),
    });
    this.slower = slowDown({
      windowMs,
      delayAfter: Math.max(1, Math.floor(cfg.loginMaxFailures / 2)),
      delayMs: (used, req) => (used - req.slowDown.limit) * STEP_MS,
      maxDelayMs: MAX_DELAY_MS,
      skipSuccessfulRequests: true,
    });
  }

  use(req: Request, res: Response, next: NextFunction): void {
    const fail = (err?: unknown) => sendError(err, req, res);
    this.limiter(req, res, (err?: unknown) => {
      if (err) return fail(err);
      this.slower(req, res, (err2?: unknown) => (err2 ? fail(err2) : next()));
    });
  }
}
