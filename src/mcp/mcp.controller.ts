import { All, Controller, Logger, OnModuleDestroy, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { createMcpHandler, type AuthInfo, type McpHttpHandler } from '@modelcontextprotocol/server';
import { toNodeHandler, type NodeMcpRequestHandler } from '@modelcontextprotocol/node';
import type { Request, Response } from 'express';
import { Public, TokenOnly } from '../common/auth/decorators';
import type { TokenPrincipal } from '../common/auth/principal';
import { NAMESPACE_HEADER } from '../namespaces/namespace';
import { baseUrl } from '../common/base-url';
import { AppConfig } from '../config/app-config';
import { JSONRPC_INVALID_REQUEST, JSONRPC_SERVER_ERROR, McpExceptionFilter, sendJsonRpcError } from './mcp-http';
import { McpServerFactory } from './mcp-server.factory';

interface McpAuthExtra extends Record<string, unknown> {
  principal: TokenPrincipal;
  baseUrl: string;
  /** The X-Memory-Namespace header, if sent (a tool's `namespace` argument wins over it). */
  namespace?: string;
}

/**
 * POST /mcp: the Model Context Protocol over streamable HTTP, stateless. The global guard
 * authenticates the Bearer token exactly as on /api (TokenOnly: a session cookie is not enough);
 * the official SDK's handler then serves both protocol generations (2026-07-28 with
 * server/discover, and the 2025 initialize handshake) from one server factory, a fresh server per
 * request, so any instance behind a load balancer can answer any request.
 */
@ApiExcludeController()
@Controller('mcp')
@UseFilters(McpExceptionFilter)
export class McpController implements OnModuleDestroy {
  private readonly logger = new Logger('MCP');
  private readonly handler: McpHttpHandler;
  private readonly node: NodeMcpRequestHandler;

  constructor(
    private readonly factory: McpServerFactory,
    private readonly cfg: AppConfig,
  ) {
    this.handler = createMcpHandler(
      (ctx) => {
        const extra = ctx.authInfo?.extra as McpAuthExtra | undefined;
        if (!extra) throw new Error('MCP request without authentication'); // the guard always sets it
        return this.factory.create(extra.principal, extra.baseUrl, extra.namespace);
      },
      {
        legacy: 'stateless',
        maxRequestBodySize: cfg.bodyLimitBytes,
        onerror: (err) => this.logger.warn(`MCP request refused or failed: ${err.message}`),
      },
    );
    this.node = toNodeHandler(this.handler, {
      maxRequestBodySize: cfg.bodyLimitBytes,
      onerror: (err) => this.logger.error(`MCP handler failed: ${err.message}`, err.stack),
    });
  }

  @Post()
  @TokenOnly()
  async handle(@Req() req: Request, @Res() res: Response): Promise<void> {
    const principal = req.principal as TokenPrincipal;
    const started = Date.now();
    const body: unknown = req.body;
    const what = summarize(body);
    res.on('finish', () => this.logger.log(`POST /mcp ${what} token=${principal.tokenId} -> ${res.statusCode} ${Date.now() - started}ms [${req.id}]`));
    if (Array.isArray(body)) {
      return sendJsonRpcError(res, 400, JSONRPC_INVALID_REQUEST, 'JSON-RPC batches are not supported: send one JSON-RPC message per POST');
    }
    if (body !== undefined && (body === null || typeof body !== 'object')) {
      return sendJsonRpcError(res, 400, JSONRPC_INVALID_REQUEST, 'Invalid Request: the body must be one JSON-RPC message (a JSON object)');
    }
    const auth: AuthInfo = {
      token: `mem_tok_${principal.tokenId}`, // the public part only; the secret never leaves the guard
      clientId: principal.tokenId,
      scopes: [...principal.scopes],
      extra: { principal, baseUrl: baseUrl(this.cfg, req), namespace: headerNamespace(req) } satisfies McpAuthExtra,
    };
    (req as Request & { auth?: AuthInfo }).auth = auth;
    await this.node(req, res, body);
  }

  /**
   * The same endpoint for OAuth clients (connectors: claude.ai, Claude desktop, ChatGPT), when
   * MEMSTORE_OAUTH is on: its 401 points to its resource metadata, so a connector signs in. Kept
   * apart from /mcp, whose header-configured clients would drop their header on seeing OAuth.
   */
  @Post('oauth')
  @TokenOnly()
  async handleOAuth(@Req() req: Request, @Res() res: Response): Promise<void> {
    if (!this.cfg.oauth) return sendJsonRpcError(res, 404, JSONRPC_SERVER_ERROR, 'Not found: OAuth is not enabled on this service (MEMSTORE_OAUTH)');
    await this.handle(req, res);
  }

  /** GET (a 2025 client's SSE stream), DELETE (session end) and the rest: this endpoint keeps no sessions. */
  @All()
  @Public()
  methodNotAllowed(@Res() res: Response): void {
    sendJsonRpcError(res, 405, JSONRPC_SERVER_ERROR, 'Method not allowed: this MCP endpoint is stateless; send each JSON-RPC message with POST', { Allow: 'POST' });
  }

  async onModuleDestroy(): Promise<void> {
    await this.handler.close();
  }
}

/** "tools/call create_memory", "initialize"... for the log line (never arguments). */
function summarize(body: unknown): string {
  if (Array.isArray(body)) return 'batch';
  if (!body || typeof body !== 'object') return '-';
  const m = body as { method?: unknown; params?: { name?: unknown; uri?: unknown } };
  const method = typeof m.method === 'string' ? m.method.slice(0, 64) : 'response';
  const target = m.params && typeof m.params === 'object' ? (m.params.name ?? m.params.uri) : undefined;
  return typeof target === 'string' ? `${method} ${target.slice(0, 128)}` : method;
}

/** The X-Memory-Namespace header of an MCP request (first value; undefined when absent). */
function headerNamespace(req: Request): string | undefined {
  const h = req.headers[NAMESPACE_HEADER];
  return Array.isArray(h) ? h[0] : h;
}
