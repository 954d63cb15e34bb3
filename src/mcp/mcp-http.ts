import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import { toErrorResponse } from '../common/http-exception.filter';
import { RequestValidationError } from '../common/errors';
import { parseJsonBody } from '../common/json-body';
import { AppConfig } from '../config/app-config';
import { oauthUrls } from '../oauth/oauth.service';

/**
 * The HTTP edge of POST /mcp: every error it answers itself is a JSON-RPC error object (an MCP
 * client reads `error.message`, not our REST envelope), a 401 carries `WWW-Authenticate: Bearer`
 * and nothing that points at OAuth (no `resource_metadata`: Claude Code and Cursor would then
 * ignore the configured Authorization header and start an OAuth flow we do not offer).
 */

export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;
/** Server-defined range (-32000 to -32099): refused before any MCP method ran (auth, origin, HTTP method). */
export const JSONRPC_SERVER_ERROR = -32000;

export const BEARER_CHALLENGE = 'Bearer realm="Memory Store"';

export function sendJsonRpcError(res: Response, status: number, code: number, message: string, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
  res.status(status).json({ jsonrpc: '2.0', id: null, error: { code, message } });
}

/**
 * JSON body parser for /mcp with the same limit as /api, whose failures are JSON-RPC errors.
 * Installed before the global parser (which then sees the body already read and skips it).
 */
export function mcpJsonBody(limitBytes: number): RequestHandler {
  // The same bounded reading as /api (src/common/json-body.ts): byte limit, Content-Encoding, one
  // linear shape pass (depth, keys, values, lone surrogates) before JSON.parse; errors as JSON-RPC.
  const raw = express.raw({ type: ['application/json', 'application/*+json'], limit: limitBytes, inflate: true });
  return (req: Request, res: Response, next: NextFunction) => {
    raw(req, res, (err?: unknown) => {
      if (!err && Buffer.isBuffer(req.body)) {
        try {
          req.body = req.body.length === 0 ? {} : parseJsonBody(req.body);
        } catch (e) {
          err = e;
        }
      }
      if (!err) return next();
      if (err instanceof RequestValidationError) return sendJsonRpcError(res, 400, JSONRPC_PARSE_ERROR, 'Parse error: the request body is not valid JSON');
      const e = err as { type?: string; status?: number; message?: string };
      if (e.type === 'entity.too.large') {
        return sendJsonRpcError(res, 413, JSONRPC_INVALID_REQUEST, `Request body too large: the limit is ${limitBytes} bytes (MEMSTORE_BODY_LIMIT_BYTES)`);
      }
      const status = typeof e.status === 'number' && e.status >= 400 && e.status < 500 ? e.status : 400;
      return sendJsonRpcError(res, status, JSONRPC_INVALID_REQUEST, e.message ?? 'Unreadable request body');
    });
  };
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;
const IP_LITERAL = /^(\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-f:.]+\])$/i;

function parseOrigin(value: string): URL | null {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : null;
  } catch {
    return null;
  }
}

function portOf(u: URL): string {
  return u.port || (u.protocol === 'https:' ? '443' : '80');
}

/**
 * Whether a browser `Origin` may call /mcp (MCP transport spec: servers MUST validate Origin
 * against DNS rebinding). Requests without Origin (agents, CLIs) pass. A browser origin passes
 * when it is the service's own: MEMSTORE_PUBLIC_URL's origin; or the address the request was
 * sent to, when that host is an IP address or localhost (a DNS name could be a rebinding
 * attacker's); or a localhost form of it (localhost / 127.0.0.1 / [::1], same scheme and port).
 */
export function originAllowed(origin: string | undefined, requestUrl: string, publicUrl: string | null): boolean {
  if (origin === undefined) return true;
  const o = parseOrigin(origin);
  if (!o) return false;
  if (publicUrl && parseOrigin(publicUrl)?.origin === o.origin) return true;
  const target = parseOrigin(requestUrl);
  if (!target) return false;
  if (o.origin === target.origin) return LOOPBACK.test(target.hostname) || IP_LITERAL.test(target.hostname);
  return LOOPBACK.test(o.hostname) && LOOPBACK.test(target.hostname) && o.protocol === target.protocol && portOf(o) === portOf(target);
}

/** Middleware in front of every /mcp route: a foreign browser Origin gets 403 before anything else runs. */
export function mcpOriginCheck(cfg: AppConfig): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const origin = req.headers.origin;
    if (originAllowed(origin, `${req.protocol}://${req.host}`, cfg.publicUrl)) return next();
    sendJsonRpcError(res, 403, JSONRPC_SERVER_ERROR, `Forbidden: requests from the browser origin ${JSON.stringify(origin)} are not accepted (set MEMSTORE_PUBLIC_URL to the service's own address)`);
  };
}

/**
 * Exception filter of the MCP controller: what the global guard or the handler throws (401, 403
 * from an IP allow-list, 429, 503...) keeps its status and message (the REST mapping,
 * toErrorResponse) but is framed as a JSON-RPC error; a 401 adds the Bearer challenge.
 */
@Catch()
export class McpExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('MCP');

  constructor(private readonly cfg: AppConfig) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const { status, body, headers } = toErrorResponse(exception, req.id);
    if (status >= 500 && status !== 503) this.logger.error(`POST /mcp -> ${status} [${req.id}]`, (exception as Error)?.stack);
    const extra: Record<string, string> = { ...(headers ?? {}) };
    if (status === 401) {
      // RFC 6750 §3: no error code when no credentials were sent; invalid_token when they were wrong.
      // The OAuth endpoint (and only it) points to its resource metadata (RFC 9728), which starts a connector's sign-in.
      const oauth = this.cfg.oauth && this.cfg.publicUrl && /^\/mcp\/oauth\/?$/i.test(req.path) ? `, resource_metadata="${oauthUrls(this.cfg.publicUrl).resourceMetadata}"` : '';
      extra['WWW-Authenticate'] = (req.headers.authorization === undefined ? BEARER_CHALLENGE : `${BEARER_CHALLENGE}, error="invalid_token"`) + oauth;
    }
    const message = status >= 500 && status !== 503 ? `Internal server error (request id ${req.id})` : body.error;
    sendJsonRpcError(res, status, JSONRPC_SERVER_ERROR, message, extra);
  }
}
