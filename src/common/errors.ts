/**
 * Our own error types. Adapters translate library errors (SQLite, MongoDB, AWS) into these at
 * the boundary; services and controllers never see a driver error. The global exception filter
 * turns them into the CONTRACT §1 envelope.
 */

export type BackendName = 'Document database' | 'Object store';

export class AppError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
    super(404, message);
  }
}

export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, message);
  }
}

/**
 * 412: an If-Match precondition did not hold (issue 9). The body carries the current version
 * (`current_version`), so a client can fetch, merge and retry.
 */
export class PreconditionFailedError extends AppError {
  readonly extra: Record<string, unknown>;
  constructor(message: string, currentVersion: number) {
    super(412, message);
    this.extra = { current_version: currentVersion };
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string) {
    super(403, message);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message: string) {
    super(401, message);
  }
}

/** 413: a body over the byte limit, or over one of the structural limits of a JSON body. */
export class PayloadTooLargeError extends AppError {
  constructor(message: string) {
    super(413, message);
  }
}

/** 429 with Retry-After (and, for token limits, the RateLimit-* headers set by the caller). */
export class TooManyRequestsError extends AppError {
  constructor(message: string) {
    super(429, message);
  }
}

/** A backend that is down or misconfigured: 503 "<Backend> unavailable: <reason>". */
export class BackendUnavailableError extends AppError {
  constructor(
    readonly backend: BackendName,
    readonly reason: string,
  ) {
    super(503, `${backend} unavailable: ${reason}`);
  }
}

/** One entry of a 422 detail array (pydantic v2 shape, CONTRACT §1). */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
  input?: unknown;
  ctx?: Record<string, unknown>;
}

/** 422 with a detail array. Thrown by the validation pipe and by services for semantic checks. */
export class RequestValidationError extends AppError {
  constructor(readonly detail: ValidationIssue[]) {
    super(422, summarize(detail));
  }

  static one(loc: (string | number)[], msg: string, type = 'value_error', input?: unknown, ctx: Record<string, unknown> = {}) {
    return new RequestValidationError([{ loc, msg, type, input, ctx }]);
  }
}

function summarize(detail: ValidationIssue[]): string {
  if (detail.length === 0) return 'Request validation failed';
  const first = detail[0];
  const where = first.loc.join('.');
  const more = detail.length > 1 ? ` (and ${detail.length - 1} more)` : '';
  return `Invalid request: ${where}: ${first.msg}${more}`;
}
