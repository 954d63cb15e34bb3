import type { OpenAPIObject } from '@nestjs/swagger';
import type { AccessRule } from '../common/auth/decorators';
import { JSON_SHAPE_LIMITS } from '../common/json-body';

/**
 * The error answers of every operation, derived from what the global pipeline does rather than
 * written route by route (issue 10): a route added later gets truthful error responses from its
 * access rule, its method and its parameters alone.
 *
 * | status | when | from |
 * | --- | --- | --- |
 * | 400 | a path parameter that is not valid percent-encoding; a body whose Content-Encoding does not decode | router, JSON body parser |
 * | 401 | no or bad credentials | AuthGuard, on every non-public route |
 * | 403 | token without the scope, outside its allow-list, on an admin route; a cross-site cookie write | AuthGuard, CsrfMiddleware (every unsafe method) |
 * | 404 | the resource named in the path does not exist | the services, on every route with a path parameter |
 * | 413 | body over the byte limit or the JSON shape limits | JSON body parser, on every unsafe method |
 * | 415 | unknown Content-Encoding or charset | JSON body parser, on every unsafe method |
 * | 422 | malformed JSON, a body or query that breaks the DTO's rules | JSON body parser, AppValidationPipe |
 * | 429 | the token's rate limit (every non-public route), login throttling | TokenRateLimiter, LoginThrottleMiddleware |
 * | 431 | request line and headers over 16 KB (e.g. a query string that long) | the HTTP server (src/common/client-error.ts), on every route |
 * | 503 | a backend is down (the session store is read on every route but /api/health) | adapters |
 *
 * Responses a controller declares itself keep their description; they get the error schema when
 * they have none.
 */

export const ERROR_SCHEMA = 'ErrorResponse';
export const VALIDATION_ERROR_SCHEMA = 'ValidationErrorResponse';

const UNSAFE = new Set(['post', 'put', 'patch', 'delete']);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
/** Routes that never read a backend, not even the session store. */
const NO_BACKEND = new Set(['/api/health']);

const RATE_LIMIT_HEADERS = {
  'Retry-After': { description: 'Seconds until a request will be accepted again', required: true, schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Limit': { description: "Token limits: the token's requests per window (IETF draft)", schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Remaining': { description: 'Token limits: requests left in the current window', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Token limits: seconds until the window ends', schema: { type: 'integer', minimum: 0 } },
};

function errorSchemas(): Record<string, unknown> {
  return {
    [ERROR_SCHEMA]: {
      type: 'object',
      description: 'CONTRACT §1 error envelope',
      required: ['ok', 'error'],
      properties: {
        ok: { type: 'boolean', enum: [false], example: false },
        error: { type: 'string', example: 'Memory not found' },
        request_id: { type: 'string', description: 'Only on 500 answers' },
        current_version: { type: 'integer', minimum: 1, description: 'Only on 412 answers: the version the memory has now (fetch, merge, retry)' },
        code: { type: 'string', enum: ['namespace_quota_exceeded'], description: 'Only on 403 answers to a write over a namespace quota (decision 0156)' },
        quota: {
          type: 'object',
          description: 'With code namespace_quota_exceeded: which quota, of which namespace, its limit, what is used and what the write asked for',
          required: ['name', 'namespace', 'limit', 'used', 'requested'],
          properties: {
            name: { type: 'string', enum: ['memories', 'bytes'] },
            namespace: { type: 'string' },
            limit: { type: 'integer', minimum: 0 },
            used: { type: 'integer', minimum: 0 },
            requested: { type: 'integer', minimum: 0 },
          },
        },
        report: {
          type: 'object',
          description: 'With code namespace_quota_exceeded on an import: what was done before it stopped',
          properties: { processed: { type: 'integer' }, created: { type: 'integer' }, updated: { type: 'integer' }, skipped: { type: 'integer' }, invalid: { type: 'integer' } },
        },
      },
    },
    [VALIDATION_ERROR_SCHEMA]: {
      type: 'object',
      description: 'CONTRACT §1 validation error: a one-line summary and pydantic-style details',
      required: ['ok', 'error', 'detail'],
      properties: {
        ok: { type: 'boolean', enum: [false], example: false },
        error: { type: 'string', example: 'Invalid request: query.limit: Input should be less than or equal to 200' },
        detail: {
          type: 'array',
          items: {
            type: 'object',
            required: ['loc', 'msg', 'type'],
            properties: {
              loc: { type: 'array', items: { oneOf: [{ type: 'string' }, { type: 'integer' }] }, example: ['query', 'limit'] },
              msg: { type: 'string', example: 'Input should be less than or equal to 200' },
              type: { type: 'string', example: 'less_than_equal' },
              input: { description: 'The offending value (null when large)' },
              ctx: { type: 'object', additionalProperties: true },
            },
          },
        },
      },
    },
  };
}

interface Op {
  parameters?: Array<{ in?: string; schema?: Record<string, unknown> }>;
  requestBody?: unknown;
  responses: Record<string, { description?: string; content?: Record<string, unknown>; headers?: Record<string, unknown> }>;
}

function describe(status: string, rule: AccessRule | undefined, method: string): string {
  const unsafe = UNSAFE.has(method);
  switch (status) {
    case '400':
      return 'A path parameter that is not valid percent-encoding, or a body whose Content-Encoding does not decode';
    case '401':
      return 'Missing, invalid, expired or revoked credentials';
    case '403':
      if (!rule || rule.kind === 'public') return 'A cross-site request relying on the session cookie';
      if (rule.kind === 'admin') return 'API tokens cannot use admin routes' + (unsafe ? '; or a cross-site request' : '');
      return (
        'The token lacks a scope, is used from an address outside its allow-list, or names a namespace outside its binding' +
        (unsafe ? '; a write would pass a namespace quota (code namespace_quota_exceeded); or a cross-site request relying on the cookie' : '')
      );
    case '404':
      return 'Not found';
    case '413':
      return `Body over the byte limit (2 MiB by default), nested deeper than ${JSON_SHAPE_LIMITS.maxDepth} levels, more than ${JSON_SHAPE_LIMITS.maxKeys} keys in one object or more than ${JSON_SHAPE_LIMITS.maxNodes} values`;
    case '415':
      return 'Unknown Content-Encoding (identity, gzip, deflate and br are understood) or a charset other than UTF-8';
    case '422':
      return 'Validation error (malformed JSON, a value outside the rules of the schema)';
    case '429':
      return "Too many requests: the token's rate limit (RateLimit-* headers), or too many failed sign-ins; Retry-After says when to retry";
    case '431':
      return 'The request line and headers together are larger than 16 KB: shorten the query string (or the cookies)';
    case '503':
      return 'A backend is down or misconfigured; the error names it';
    default:
      return 'Error';
  }
}

/**
 * Rules of single operations that OpenAPI 3.0 cannot state as a schema (they depend on server
 * state or span several parameters), added to the description of the status they answer (issue
 * 46 item 9: the fuzzer found each as "a request the schema allows is rejected"). Keyed by method
 * and path, so a renamed operationId keeps them.
 */
const OPERATION_RULES: Record<string, Record<string, string>> = {
  'get /api/memories': { '422': '`after` is taken only in list mode (without `q`) and must be a `next_cursor` this service issued' },
  'post /api/memories': { '422': 'an Idempotency-Key already used (within 24 h, by this caller) with another body (`idempotency_key_reused`)' },
  'post /api/memories/bulk-delete': { '422': 'an Idempotency-Key already used (within 24 h, by this caller) with another body (`idempotency_key_reused`)' },
  'post /api/import': {
    '413': 'an upload over MEMSTORE_IMPORT_MAX_BYTES, an archive over the item, unpacked-size or compression-ratio limits, or an import stopped after MEMSTORE_IMPORT_MAX_SECONDS',
    '422': 'a body that is not the file its format names (a `format=zip` body that is not a readable zip archive, for one)',
    '429': 'this token runs as many imports as MEMSTORE_IMPORT_CONCURRENT_PER_TOKEN allows',
    '503': 'as many imports as MEMSTORE_IMPORT_CONCURRENT allows are running, or the temp directory for uploads cannot be written',
  },
};
const IF_MATCH_RULE = 'If-Match names a version that is not the current one; a weak tag (W/"3") never matches (RFC 9110 §13.1.1 compares strongly)';

/** Adds the error responses (with the contract's schemas) to every operation of the document. */
export function addErrorResponses(document: OpenAPIObject, ruleOf: (operationId: string) => AccessRule | undefined): void {
  document.components ??= {};
  document.components.schemas = { ...(document.components.schemas ?? {}), ...(errorSchemas() as Record<string, never>) };
  const errorRef = { $ref: `#/components/schemas/${ERROR_SCHEMA}` };
  const validationRef = { $ref: `#/components/schemas/${VALIDATION_ERROR_SCHEMA}` };

  for (const [path, item] of Object.entries(document.paths)) {
    for (const method of METHODS) {
      const op = (item as Record<string, Op | undefined>)[method];
      if (!op) continue;
      const rule = ruleOf((op as { operationId?: string }).operationId ?? '');
      const isPublic = !rule || rule.kind === 'public';
      const unsafe = UNSAFE.has(method);
      const hasPath = path.includes('{');
      const hasQuery = (op.parameters ?? []).some((p) => p.in === 'query');
      const statuses = new Set<string>();
      if (hasPath || unsafe) statuses.add('400');
      if (!isPublic) statuses.add('401');
      if (!isPublic || unsafe) statuses.add('403');
      if (hasPath) statuses.add('404');
      if (unsafe) ['413', '415', '422'].forEach((s) => statuses.add(s));
      // A query, or a path or header parameter with rules of its own (e.g. a version number), is checked: 422.
      const checked = (op.parameters ?? []).some((p) => p.in !== 'query' && p.schema && ('pattern' in p.schema || 'minimum' in p.schema));
      if (hasQuery || checked) statuses.add('422');
      if (!isPublic || op.responses['429']) statuses.add('429');
      statuses.add('431');
      if (!NO_BACKEND.has(path)) statuses.add('503');

      const rules = { ...OPERATION_RULES[`${method} ${path}`] };
      if ((op.parameters ?? []).some((p) => p.in === 'header' && (p as { name?: string }).name === 'If-Match')) {
        statuses.add('412');
        rules['412'] = IF_MATCH_RULE;
      }
      for (const status of Object.keys(rules)) statuses.add(status);
      for (const status of [...statuses].sort()) {
        const existing = op.responses[status] ?? { description: describe(status, rule, method) };
        if (rules[status] && !existing.description?.includes(rules[status])) existing.description = `${existing.description ?? describe(status, rule, method)}; or: ${rules[status]}`;
        existing.content ??= { 'application/json': { schema: status === '422' ? validationRef : errorRef } };
        if (status === '429') existing.headers = { ...RATE_LIMIT_HEADERS, ...(existing.headers ?? {}) };
        op.responses[status] = existing;
      }
    }
  }
}

/**
 * OpenAPI 3.0.3: `nullable: true` does not widen an `enum`, so a nullable enumeration must list
 * `null` itself; validators (and fuzzers) otherwise refuse the `null` the service accepts.
 * Applied to every schema of the document, so DTOs can keep writing `{ enum, nullable: true }`.
 */
export function allowNullInNullableEnums(node: unknown): void {
  if (Array.isArray(node)) {
    node.forEach(allowNullInNullableEnums);
    return;
  }
  if (node === null || typeof node !== 'object') return;
  const schema = node as { nullable?: boolean; enum?: unknown[] };
  if (schema.nullable === true && Array.isArray(schema.enum) && !schema.enum.includes(null)) schema.enum = [...schema.enum, null];
  for (const value of Object.values(node)) allowNullInNullableEnums(value);
}
