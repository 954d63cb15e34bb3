import { applyDecorators, CallHandler, ExecutionContext, Injectable, NestInterceptor, SetMetadata, UseInterceptors } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { from, Observable, throwError } from 'rxjs';
import { catchError, mergeMap } from 'rxjs/operators';
import { toErrorResponse } from '../common/http-exception.filter';
import { AuditAction, AuditService } from './audit.service';

export interface AuditedOptions {
  /** The thing acted on; default: the route's first path parameter (token_id, memory_id). */
  target?: (req: Request, result: unknown) => string | null | undefined;
  /** Non-secret facts for a successful action (field names, counts); never values of secrets or memory content. */
  detail?: (req: Request, result: unknown) => Record<string, unknown>;
  /** Non-secret facts recorded on success and on failure alike (e.g. the username a sign-in tried; never a password). */
  context?: (req: Request) => Record<string, unknown>;
  /** Takes back what a successful handler did when its audit entry cannot be written (e.g. ends the session a sign-in opened). */
  undo?: (req: Request) => Promise<void>;
  /** Whether a handler that returned normally succeeded (default: yes), e.g. a backend test that found a backend down. */
  outcome?: (result: unknown) => 'success' | 'failure';
}

/** The names of the fields a request body gave (never their values). */
export const bodyFields = (req: Request): string[] =>
  req.body && typeof req.body === 'object'
    ? Object.keys(req.body as object)
        .filter((k) => (req.body as Record<string, unknown>)[k] !== undefined)
        .sort()
    : [];

const AUDITED_KEY = 'memstore:audited';

/**
 * Records one audit entry per call of the decorated route: `success` with `detail(req, result)`
 * when the handler returns, `failure` with the HTTP status and error message when it throws. When
 * the entry cannot be written the answer is that error (503, decision 0051), not the handler's.
 * (Requests refused before the handler — 422 by validation, 429 by throttling — are not actions
 * and are not recorded here; a refused token is, by the guard: AuditService.recordRefusal.)
 */
export const Audited = (action: AuditAction, options: AuditedOptions = {}) => applyDecorators(SetMetadata(AUDITED_KEY, { action, options }), UseInterceptors(AuditInterceptor));

@Injectable()
export class AuditInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const meta = this.reflector.get<{ action: AuditAction; options: AuditedOptions } | undefined>(AUDITED_KEY, context.getHandler());
    if (!meta) return next.handle();
    const req = context.switchToHttp().getRequest<Request>();
    const { action, options } = meta;
    const param = () => Object.values(req.params ?? {})[0] as string | undefined;
    return next.handle().pipe(
      mergeMap((result: unknown) =>
        from(
          this.audit
            .record(action, {
              req,
              outcome: safe(() => options.outcome?.(result), undefined) ?? 'success',
              target: safe(() => (options.target ? options.target(req, result) : param()), null) ?? null,
              detail: { ...safe(() => options.context?.(req), {}), ...(safe(() => options.detail?.(req, result), { note: 'detail unavailable' }) ?? {}) },
            })
            .then(
              () => result,
              async (e: unknown) => {
                // No entry, no success (decision 0051): undo what can be undone, and answer the audit error.
                if (options.undo) await options.undo(req).catch(() => undefined);
                throw e;
              },
            ),
        ),
      ),
      catchError((err: unknown) =>
        from(
          this.audit
            .record(action, {
              req,
              outcome: 'failure',
              target: (options.target ? null : param()) ?? null,
              detail: { ...safe(() => options.context?.(req), {}), ...failureDetail(err, req) },
            })
            .catch(() => undefined), // the action failed anyway: its own error is the answer
        ).pipe(mergeMap(() => throwError(() => err))),
      ),
    );
  }
}

/** An audit detail that cannot be computed never fails the action it describes. */
function safe<T>(fn: () => T, fallback: T): T {
  try {
    return fn();
  } catch {
    return fallback;
  }
}

/** The status and message the client got (the contract's envelope), nothing more. */
function failureDetail(err: unknown, req: Request): Record<string, unknown> {
  const { status, body } = toErrorResponse(err, req.id);
  return { status, error: body.error };
}
