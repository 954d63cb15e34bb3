import type { NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { oneLayer } from './one-layer';

const req = {} as Request;
const res = {} as Response;

function recording(name: string, seen: string[], act: (next: NextFunction) => void = (next) => next()): NestMiddleware<Request, Response> {
  return {
    use: (_req, _res, next) => {
      seen.push(name);
      act(next);
    },
  };
}

describe('oneLayer', () => {
  it('runs the middleware in order, then hands on once', () => {
    const seen: string[] = [];
    const next = jest.fn();
    oneLayer([recording('a', seen), recording('b', seen), recording('c', seen)])(req, res, next);
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(next).toHaveBeenCalledTimes(1);
    expect(next).toHaveBeenCalledWith();
  });

  it('an error skips the rest and goes to the error handler', () => {
    const seen: string[] = [];
    const next = jest.fn();
    const boom = new Error('boom');
    oneLayer([recording('a', seen), recording('b', seen, (n) => n(boom)), recording('c', seen)])(req, res, next);
    expect(seen).toEqual(['a', 'b']);
    expect(next).toHaveBeenCalledWith(boom);
  });

  it('a throw, also in a step reached after I/O, or an async rejection goes to the error handler', async () => {
    const boom = new Error('boom');
    const seen: string[] = [];
    const thrown = jest.fn();
    oneLayer([recording('a', seen, () => { throw boom; }), recording('b', seen)])(req, res, thrown);
    expect(thrown).toHaveBeenCalledWith(boom);

    const later = await new Promise<unknown[]>((resolve) => {
      oneLayer([recording('c', seen, (n) => setImmediate(n)), recording('d', seen, () => { throw boom; })])(req, res, (...args: unknown[]) => resolve(args));
    });
    expect(later).toEqual([boom]);

    const rejected = await new Promise<unknown[]>((resolve) => {
      const failing: NestMiddleware<Request, Response> = { use: async () => Promise.reject(boom) };
      oneLayer([failing, recording('e', seen)])(req, res, (...args: unknown[]) => resolve(args));
    });
    expect(rejected).toEqual([boom]);
    expect(seen).toEqual(['a', 'c', 'd']);
  });

  it('a middleware that answers itself ends the request there', () => {
    const seen: string[] = [];
    const next = jest.fn();
    oneLayer([recording('a', seen, () => undefined), recording('b', seen)])(req, res, next);
    expect(seen).toEqual(['a']);
    expect(next).not.toHaveBeenCalled();
  });

  it('a middleware that goes on later (after I/O) continues the chain then', async () => {
    const seen: string[] = [];
    const done = new Promise<unknown[]>((resolve) => {
      oneLayer([recording('a', seen, (n) => setImmediate(n)), recording('b', seen)])(req, res, (...args: unknown[]) => resolve(args));
    });
    expect(await done).toEqual([]);
    expect(seen).toEqual(['a', 'b']);
  });
});
