import type { NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Nest middleware instances run in order as one Express handler, for middleware that every
 * request goes through. Bound with `forRoutes('*')`, each becomes an Express route layer of its
 * own, matched against the whole path as a parameter and checked against its exclusions on every
 * request; as one layer they cost one match (bench/README.md "The request pipeline in fewer layers").
 * An error handed to `next`, thrown, or rejected by an async `use` skips the rest and goes to
 * Express's error handler, which Nest points at the exception filter: as Nest's own middleware
 * proxy does for each middleware it binds.
 */
export function oneLayer(middleware: readonly NestMiddleware<Request, Response>[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err !== undefined && err !== null) return next(err);
      const m = middleware[i++];
      if (m === undefined) return next();
      try {
        const out: unknown = m.use(req, res, step);
        if (out instanceof Promise) out.catch(next);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
}
