import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs a header-setting middleware once, at start-up, and answers a middleware that sets the same
 * headers on every response in one step. For middleware whose headers depend on nothing in the
 * request, such as helmet with fixed directives (app.setup.ts): helmet is a chain of a dozen
 * middlewares, one per header. Start-up fails if the middleware reads the request, does anything
 * to the response but set or remove headers, or does not call next() at once.
 */
export function headersOnce(middleware: RequestHandler): RequestHandler {
  const set: Array<[string, string | number | readonly string[]]> = [];
  const removed: string[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      set.push([name, value]);
      return recorder;
    },
    removeHeader(name: string) {
      removed.push(name);
    },
  };
  const refuse = (what: string) =>
    new Proxy({} as Record<string | symbol, unknown>, {
      get: (_t, prop) => {
        throw new Error(`headersOnce: the middleware uses ${what}.${String(prop)}`);
      },
    });
  const res = new Proxy(recorder as unknown as Record<string | symbol, unknown>, {
    get: (t, prop) => (prop === 'setHeader' || prop === 'removeHeader' ? t[prop] : refuse('res')[prop]),
  });
  let done = false;
  void middleware(refuse('req') as unknown as Request, res as unknown as Response, (err?: unknown) => {
    if (err !== undefined) throw err instanceof Error ? err : new Error(String(err));
    done = true;
  });
  if (!done) throw new Error('headersOnce: the middleware did not call next() at once');
  return (_req: Request, res: Response, next: NextFunction): void => {
    for (const [name, value] of set) res.setHeader(name, value);
    for (const name of removed) res.removeHeader(name);
    next();
  };
}
