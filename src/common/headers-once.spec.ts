import express from 'express';
import helmet from 'helmet';
import request from 'supertest';
import { HELMET_OPTIONS } from '../app.setup';
import { headersOnce } from './headers-once';

function appWith(middleware: express.RequestHandler): express.Express {
  const app = express();
  app.use(middleware);
  app.get('/', (_req, res) => {
    res.json({ ok: true });
  });
  return app;
}

/** The response headers that do not vary per response. */
async function headersOf(app: express.Express): Promise<Record<string, unknown>> {
  const res = await request(app).get('/').expect(200);
  const { date: _date, ...rest } = res.headers as Record<string, unknown>;
  return rest;
}

describe('headersOnce', () => {
  it("sets exactly the headers helmet sets with the service's options, X-Powered-By removed included", async () => {
    const once = await headersOf(appWith(headersOnce(helmet(HELMET_OPTIONS))));
    expect(once).toEqual(await headersOf(appWith(helmet(HELMET_OPTIONS))));
    expect(once['content-security-policy']).toContain("script-src 'self'");
    expect(once['x-content-type-options']).toBe('nosniff');
    expect(once['x-powered-by']).toBeUndefined();
  });

  it('refuses at start-up a middleware whose headers depend on the request', () => {
    const perRequest: express.RequestHandler = (req, res, next) => {
      res.setHeader('X-Path', req.path);
      next();
    };
    expect(() => headersOnce(perRequest)).toThrow();
    const later: express.RequestHandler = (_req, _res, next) => void setImmediate(next);
    expect(() => headersOnce(later)).toThrow('did not call next() at once');
  });
});
