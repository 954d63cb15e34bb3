import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import type { Request, Response } from 'express';
import { createHash } from 'node:crypto';
import { DEFAULT_NAMESPACE } from '../namespaces/namespace';
import { requestNamespace } from '../namespaces/request-namespace';
import { from, Observable } from 'rxjs';
import { catchError, mergeMap } from 'rxjs/operators';
import { IdempotencyRecord, IdempotencyRepository } from '../backends/ports/idempotency.repository';
import { ConflictError, RequestValidationError } from '../common/errors';

/** A key is honoured for a day (Stripe's convention). */
export const IDEMPOTENCY_TTL_MS = 86_400_000;
/** A repeat of a request still running waits this long for its result before 409. */
const WAIT_MS = 10_000;
const POLL_MS = 50;
const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * Idempotency-Key on POST /api/memories and POST /api/memories/bulk-delete (issue 9): the first
 * request with a key claims it in the document database, runs, and its response is stored; the
 * same key with the same body within 24 h replays that response (same status and body, header
 * `Idempotent-Replayed: true`); with another body → 422. Keys are per caller (token id, or the
 * admin). A request that fails gives its key back, so a retry runs again. A repeat that arrives
 * while the first one still runs waits for its result (so concurrent duplicates create one memory).
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(private readonly repo: IdempotencyRepository) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const req = ctx.switchToHttp().getRequest<Request>();
    const res = ctx.switchToHttp().getResponse<Response>();
    const raw = req.headers['idempotency-key'];
    if (raw === undefined) return next.handle();
    const given = Array.isArray(raw) ? raw.join(',') : raw;
    if (!KEY.test(given)) {
      throw RequestValidationError.one(['header', 'Idempotency-Key'], 'Idempotency-Key should be 1 to 255 printable ASCII characters without spaces', 'value_error', given);
    }
    const p = req.principal;
    const who = !p ? 'anonymous' : p.kind === 'token' ? `token:${p.tokenId}` : 'admin';
    // Per namespace (issue 43): 'default' keeps the form of before, so keys written before namespaces still replay.
    const ns = requestNamespace(req);
    const key = `${who}|${ns === DEFAULT_NAMESPACE ? '' : `ns:${ns}|`}${req.method} ${req.path}|${given}`;
    const fingerprint = createHash('sha256')
      .update(canonicalJson(req.body ?? null))
      .digest('hex');

    return from(this.repo.claim({ key, fingerprint, status: null, body: null, createdAt: new Date() }, IDEMPOTENCY_TTL_MS)).pipe(
      mergeMap((held) => {
        if (held) return from(this.replay(held, fingerprint, res));
        return next.handle().pipe(
          mergeMap(async (body: unknown) => {
            await this.repo.complete(key, res.statusCode, JSON.stringify(body ?? null));
            return body;
          }),
          catchError(async (e: unknown) => {
            await this.repo.release(key).catch(() => undefined);
            throw e;
          }),
        );
      }),
    );
  }

  private async replay(held: IdempotencyRecord, fingerprint: string, res: Response): Promise<unknown> {
    if (held.fingerprint !== fingerprint) {
      throw RequestValidationError.one(['header', 'Idempotency-Key'], 'This Idempotency-Key was already used with a different request body', 'idempotency_key_reused', null);
    }
    let record: IdempotencyRecord | null = held;
    const until = Date.now() + WAIT_MS;
    while (record && record.status === null && Date.now() < until) {
      await new Promise((r) => setTimeout(r, POLL_MS));
      record = await this.repo.get(held.key);
    }
    if (!record) throw new ConflictError('The first request with this Idempotency-Key failed meanwhile; retry');
    if (record.status === null) throw new ConflictError('A request with this Idempotency-Key is still running; retry later');
    res.status(record.status);
    res.setHeader('Idempotent-Replayed', 'true');
    return JSON.parse(record.body ?? 'null') as unknown;
  }
}

/** JSON with object keys sorted, so the same body in another key order has the same fingerprint. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}
