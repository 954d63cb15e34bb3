import { ModulesContainer, Reflector } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { type Request, type Response, Router } from 'express';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ACCESS_KEY, AccessRule, ADMIN_COOKIE } from '../common/auth/decorators';
import { addErrorResponses, allowNullInNullableEnums } from './openapi-responses';

/**
 * The OpenAPI document (/openapi.json) and the two documentation pages, served entirely by us:
 * /docs (Swagger UI from swagger-ui-dist) and /redoc (ReDoc's standalone bundle). No asset,
 * font or logo comes from another host: the pages reference only /docs/* and /redoc/*, the
 * Swagger validator badge is off, and the Redocly logo URL inside the ReDoc bundle is rewritten
 * to a local file. All of it works under the CSP set in app.setup.ts (script-src 'self', no
 * inline script; styles inline; images self/data:; the ReDoc search worker from blob:).
 */

const TAGS: Array<{ name: string; description: string }> = [
  { name: 'memories', description: 'Create, read, update, delete, list and search memories (Bearer token with memory:* scopes, or an admin session).' },
  { name: 'auth', description: 'Admin sign-in (session cookie) and who am I.' },
  { name: 'tokens', description: 'API tokens (admin session only).' },
  { name: 'admin', description: 'Settings, backend tests and status (admin session; /api/status also for any valid token).' },
  { name: 'meta', description: 'Health, guide, skill prompt and skill pack (public).' },
];

/**
 * operationIds as generated clients name their methods (`client.listMemories()`, not
 * `memoriesControllerList`), keyed by `Controller.method`. A route missing here gets
 * `<method><Noun of its controller>` (e.g. `listAudit`); the OpenAPI test checks every id is a
 * unique camelCase name. Renaming one breaks generated clients: treat it like an API change.
 */
const OPERATION_IDS: Record<string, string> = {
  'MemoriesController.list': 'listMemories',
  'MemoriesController.create': 'createMemory',
  'MemoriesController.get': 'getMemory',
  'MemoriesController.update': 'updateMemory',
  'MemoriesController.delete': 'deleteMemory',
  'MemoriesController.bulkDelete': 'bulkDeleteMemories',
  'MemoriesController.download': 'downloadMemory',
  'MemoriesController.versions': 'listMemoryVersions',
  'MemoriesController.version': 'getMemoryVersion',
  'MemoriesController.restore': 'restoreMemoryVersion',
  'MemoriesController.stats': 'getStats',
  'NamespacesController.purge': 'purgeNamespace',
  'TokensController.list': 'listTokens',
  'TokensController.create': 'createToken',
  'TokensController.update': 'updateToken',
  'TokensController.revoke': 'revokeToken',
  'TokensController.delete': 'deleteToken',
  'AdminAuthController.login': 'login',
  'AdminAuthController.logout': 'logout',
  'AdminAuthController.me': 'getMe',
  'AdminAuthController.changePassword': 'changeAdminPassword',
  'AdminConfigController.schema': 'getSettingsSchema',
  'AdminConfigController.getConfig': 'getConfig',
  'AdminConfigController.saveConfig': 'saveConfig',
  'AdminConfigController.raw': 'getRawConfig',
  'AdminConfigController.path': 'getConfigPath',
  'AdminConfigController.test': 'testBackends',
  'AdminConfigController.derive': 'deriveEndpoint',
  'AdminConfigController.ready': 'getReadiness',
  'AdminConfigController.status': 'getStatus',
  'MetaController.health': 'getHealth',
  'MetaController.guide': 'getGuide',
  'MetaController.skillPrompt': 'getSkillPrompt',
  'MetaController.skillPack': 'getSkillPack',
  'PortabilityController.export': 'exportMemories',
  'PortabilityController.import': 'importMemories',
  'MigrationController.offer': 'getMigration',
  'MigrationController.start': 'startMigration',
  'AuditController.list': 'listAuditEntries',
  'MetricsController.scrape': 'getMetrics',
  'WebController.index': 'getAdminPage',
};

/** The operationId of a controller method (see OPERATION_IDS). */
export function operationIdOf(controller: string, method: string): string {
  const noun = controller.replace(/Controller$/, '');
  return OPERATION_IDS[`${controller}.${method}`] ?? `${method}${noun.charAt(0).toUpperCase()}${noun.slice(1)}`;
}

export function buildOpenApiDocument(app: NestExpressApplication): OpenAPIObject {
  const config = new DocumentBuilder()
    .setTitle('Memory Store API')
    .setDescription(
      [
        'A searchable memory store for language-model agents.',
        '',
        'Machine clients authenticate with `Authorization: Bearer mem_tok_<id>_<secret>`; each memory route needs a scope',
        '(`memory:read`, `memory:write` or `memory:delete`). The administrator signs in with `POST /api/login` and gets the',
        `\`${ADMIN_COOKIE}\` session cookie, which may call every route. Each operation states what it needs under **Access**`,
        'and in `x-access`. Errors: `{"ok": false, "error": "..."}`; 422 adds a pydantic-style `detail` list.',
        '',
        'Namespaces: every memory belongs to one (`namespace` in its answers). A request works in one namespace, chosen by',
        'the `X-Memory-Namespace` header or a `namespace` query/body field; a token bound to one name (or to `default` or `*`)',
        'needs neither. A namespace outside the token’s binding is a 403; several bound and none chosen, a 400.',
        '',
        'The full guide is at `/api/guide`.',
      ].join('\n'),
    )
    .setVersion('1.0.0')
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: 'mem_tok_<id>_<secret>', description: 'API token created by the administrator' }, 'bearer')
    .addCookieAuth(ADMIN_COOKIE, { type: 'apiKey', in: 'cookie', name: ADMIN_COOKIE, description: 'Admin session (POST /api/login)' }, 'session')
    .build();
  config.tags = TAGS;
  const document = SwaggerModule.createDocument(app, config, { operationIdFactory: operationIdOf });
  const rules = accessRules(app);
  annotateAccess(rules, document);
  addErrorResponses(document, (operationId) => rules.get(operationId));
  allowNullInNullableEnums(document);
  return document;
}

/** Every controller method's access rule, keyed by its operationId. */
function accessRules(app: NestExpressApplication): Map<string, AccessRule | undefined> {
  const reflector = new Reflector();
  const rules = new Map<string, AccessRule | undefined>();
  for (const mod of app.get(ModulesContainer).values()) {
    for (const wrapper of mod.controllers.values()) {
      const cls = wrapper.metatype as (new (...a: unknown[]) => unknown) | null;
      if (!cls?.prototype) continue;
      for (const name of Object.getOwnPropertyNames(cls.prototype)) {
        const fn = (cls.prototype as Record<string, unknown>)[name];
        if (name === 'constructor' || typeof fn !== 'function') continue;
        rules.set(operationIdOf(cls.name, name), reflector.getAllAndOverride<AccessRule | undefined>(ACCESS_KEY, [fn, cls]));
      }
    }
  }
  return rules;
}

/** What an operation needs: the sentence for its description, its `security` and its `x-access`. */
function describeAccess(rule: AccessRule | undefined): { text: string; security: Array<Record<string, string[]>>; access: unknown } {
  switch (rule?.kind) {
    case 'public':
      return { text: 'Public: no credentials needed.', security: [], access: 'public' };
    case 'admin':
      return { text: 'Admin session only (API tokens get 403; no credentials get 401).', security: [{ session: [] }], access: 'admin' };
    case 'authenticated':
      return { text: 'An admin session or any valid API token.', security: [{ bearer: [] }, { session: [] }], access: 'authenticated' };
    case 'scopes':
      return {
        text: `API token with scope ${rule.scopes.map((s) => `\`${s}\``).join(', ')}, or an admin session.`,
        security: [{ bearer: [] }, { session: [] }],
        access: { scopes: rule.scopes },
      };
    case 'metrics':
      return {
        text: 'API token with scope `metrics:read`, an admin session, or no credentials from an address in MEMSTORE_METRICS_ALLOWED_IPS (empty by default).',
        security: [{ bearer: [] }, { session: [] }],
        access: { scopes: ['metrics:read'], or_allowed_address: true },
      };
    default:
      return { text: 'Denied: this route declares no access rule.', security: [], access: 'denied' };
  }
}

function tagFor(p: string): string {
  if (p.startsWith('/api/memories') || p === '/api/stats') return 'memories';
  if (p.startsWith('/api/tokens')) return 'tokens';
  if (['/api/login', '/api/logout', '/api/me'].includes(p)) return 'auth';
  if (['/api/health', '/api/guide', '/api/skill-prompt', '/api/skill-pack.zip'].includes(p)) return 'meta';
  return 'admin';
}

/** States each operation's access in its description, `security` and `x-access`; fills in missing tags. */
function annotateAccess(rules: Map<string, AccessRule | undefined>, document: OpenAPIObject): void {
  for (const [p, item] of Object.entries(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const) {
      const op = item[method];
      if (!op) continue;
      const { text, security, access } = describeAccess(rules.get(op.operationId ?? ''));
      op.description = op.description ? `**Access:** ${text}\n\n${op.description}` : `**Access:** ${text}`;
      // Public: no `security` at all (there is no document-wide requirement to override).
      if (security.length > 0) op.security = security;
      else delete op.security;
      (op as unknown as Record<string, unknown>)['x-access'] = access;
      if (!op.tags || op.tags.length === 0) op.tags = [tagFor(p)];
    }
  }
}

const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
  'favicon-16x16.png': 'image/png',
};

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Memory Store API · Swagger UI</title>
<link rel="icon" type="image/png" sizes="32x32" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({
  url: '/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
  withCredentials: true,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

const REDOC_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Memory Store API · ReDoc</title>
<link rel="icon" type="image/png" sizes="32x32" href="/docs/favicon-32x32.png">
<style>body { margin: 0; padding: 0; }</style>
</head>
<body>
<div id="redoc"></div>
<script src="/redoc/redoc.standalone.js"></script>
<script src="/redoc/redoc-init.js"></script>
</body>
</html>
`;

const REDOC_INIT = `Redoc.init('/openapi.json', { expandResponses: '200,201', hideHostname: false }, document.getElementById('redoc'));
`;

/** Stand-in for the Redocly logo that the bundle would fetch from cdn.redoc.ly. */
const REDOC_LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#32329f"/></svg>\n`;

/** Absolute URLs inside the vendored bundles that would be fetched at run time, rewritten to ours. */
const BUNDLE_REWRITES: Array<[from: string, to: string]> = [
  ['https://cdn.redoc.ly/redoc/logo-mini.svg', '/redoc/logo-mini.svg'],
  ['https://validator.swagger.io/validator', ''],
];

function packageDir(pkg: string): string {
  return path.dirname(require.resolve(`${pkg}/package.json`));
}

/** Reads a vendored file once (lazily), applying BUNDLE_REWRITES to text files. */
function vendored(file: string): () => Buffer {
  let cached: Buffer | undefined;
  return () => {
    if (!cached) {
      let buf = fs.readFileSync(file);
      if (/\.(js|css)$/.test(file)) {
        let text = buf.toString('utf8');
        for (const [from, to] of BUNDLE_REWRITES) text = text.split(from).join(to);
        buf = Buffer.from(text, 'utf8');
      }
      cached = buf;
    }
    return cached;
  };
}

/**
 * Registers /openapi.json, /docs and /redoc (public; plain Express routes, no backend touched).
 * Each page and its files are a router mounted at its prefix: one layer for every other request
 * to pass, not one per file.
 */
export function setupOpenApi(app: NestExpressApplication): OpenAPIObject {
  const document = buildOpenApiDocument(app);
  const json = Buffer.from(JSON.stringify(document), 'utf8');
  const http = app.getHttpAdapter().getInstance();
  const send =
    (type: string, body: () => string | Buffer, cache = 'no-cache') =>
    (_req: Request, res: Response) => {
      res.setHeader('Content-Type', type);
      res.setHeader('Cache-Control', cache);
      res.send(body());
    };
  const assetCache = 'public, max-age=86400';

  http.get(
    '/openapi.json',
    send('application/json; charset=utf-8', () => json),
  );

  const docs = Router();
  docs.get(
    '/',
    send('text/html; charset=utf-8', () => DOCS_HTML),
  );
  docs.get(
    '/swagger-init.js',
    send('text/javascript; charset=utf-8', () => DOCS_INIT),
  );
  const swaggerDir = packageDir('swagger-ui-dist');
  for (const [name, type] of Object.entries(SWAGGER_FILES)) {
    docs.get(`/${name}`, send(type, vendored(path.join(swaggerDir, name)), assetCache));
  }
  http.use('/docs', docs);

  const redoc = Router();
  redoc.get(
    '/',
    send('text/html; charset=utf-8', () => REDOC_HTML),
  );
  redoc.get(
    '/redoc-init.js',
    send('text/javascript; charset=utf-8', () => REDOC_INIT),
  );
  redoc.get('/redoc.standalone.js', send('text/javascript; charset=utf-8', vendored(path.join(packageDir('redoc'), 'bundles', 'redoc.standalone.js')), assetCache));
  redoc.get(
    '/logo-mini.svg',
    send('image/svg+xml', () => REDOC_LOGO, assetCache),
  );
  http.use('/redoc', redoc);
  return document;
}
