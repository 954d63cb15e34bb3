import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError, RequestValidationError } from './errors';

export interface ErrorBody {
  ok: false;
  error: string;
  detail?: unknown;
  request_id?: string;
}

/** Maps anything thrown (ours, Nest's, body-parser's, unknown) to a status and a CONTRACT §1 body. */
export function toErrorResponse(err: unknown, requestId: string | undefined): { status: number; body: ErrorBody; headers?: Record<string, string> } {
  if (err instanceof RequestValidationError) {
    return { status: 422, body: { ok: false, error: err.message, detail: err.detail } };
  }
  if (err instanceof AppError) {
    const headers = (err as AppError & { headers?: Record<string, string> }).headers;
    return { status: err.status, body: { ok: false, error: err.message, ...(err as AppError & { extra?: Record<string, unknown> }).extra }, ...(headers ? { headers } : {}) };
  }
  if (err instanceof HttpException) {
    const status = err.getStatus();
    const res = err.getResponse();
    let message = err.message;
    if (status === 404) message = 'Not found';
    else if (typeof res === 'object' && res && 'message' in res) {
      const m = res.message;
      message = Array.isArray(m) ? m.join('; ') : String(m);
    }
    if (status >= 500) return internal(requestId);
    return { status, body: { ok: false, error: message } };
  }
  // body-parser / raw-body errors carry a `type` and a `status`.
  const e = err as { type?: string; status?: number; message?: string; limit?: number; encoding?: string; charset?: string; code?: unknown; errno?: unknown; expose?: boolean };
  if (e && typeof e === 'object' && e.type === 'encoding.unsupported') {
    return { status: 415, body: { ok: false, error: `Unsupported Content-Encoding "${e.encoding ?? ''}": send the body as identity, gzip, deflate or br` } };
  }
  if (e && typeof e === 'object' && e.type === 'charset.unsupported') {
    return { status: 415, body: { ok: false, error: `Unsupported charset "${e.charset ?? ''}": send JSON as UTF-8` } };
  }
  if (e && typeof e === 'object' && e.status === 400 && typeof e.errno === 'number' && typeof e.code === 'string') {
    // A zlib/brotli error from decoding Content-Encoding (wrapped by body-parser with status 400).
    return { status: 400, body: { ok: false, error: `The request body could not be decoded as its Content-Encoding says (${e.message ?? e.code})` } };
  }
  if (e && typeof e === 'object' && typeof e.type === 'string' && typeof e.status === 'number') {
    if (e.type === 'entity.parse.failed') {
      return {
        status: 422,
        body: {
          ok: false,
          error: 'Invalid request: body: the body is not valid JSON',
          detail: [{ loc: ['body'], msg: 'Invalid JSON', type: 'json_invalid', input: null, ctx: { error: e.message ?? '' } }],
        },
      };
    }
    if (e.type === 'entity.too.large') {
      return { status: 413, body: { ok: false, error: `Request body too large (limit ${e.limit ?? 'exceeded'} bytes)` } };
    }
    if (e.status >= 400 && e.status < 500) {
      return { status: e.status, body: { ok: false, error: e.message ?? 'Bad request' } };
    }
  }
  // Other http-errors a library marked as safe to show (Express's router: a path that is not valid percent-encoding).
  if (e && typeof e === 'object' && e.expose === true && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return { status: e.status, body: { ok: false, error: e.message || 'Bad request' } };
  }
  return internal(requestId);
}

function internal(requestId: string | undefined) {
  return { status: 500, body: { ok: false as const, error: 'Internal server error', request_id: requestId } };
}

export function sendError(err: unknown, req: Request, res: Response, logger?: Logger): void {
  const requestId = (req as Request & { id?: string }).id;
  const { status, body, headers } = toErrorResponse(err, requestId);
  if (status >= 500 && status !== 503) {
    (logger ?? new Logger('Exceptions')).error(`${req.method} ${req.originalUrl.split('?')[0]} -> ${status} [${requestId}]`, (err as Error)?.stack);
  }
  if (res.headersSent) {
    res.end();
    return;
  }
  if (headers) for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.status(status).json(body);
}

/** The one exception filter (registered as APP_FILTER). Never sends a stack trace. */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Exceptions');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    sendError(exception, ctx.getRequest<Request>(), ctx.getResponse<Response>(), this.logger);
  }
}
