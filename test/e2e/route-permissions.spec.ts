import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import request from 'supertest';
import { ACCESS_KEY, AccessRule } from '../../src/common/auth/decorators';
import { createTestApp, TestApp } from '../support/app';

/**
 * Every route of the service and what it requires. A change here is a permission change:
 * review it like one. Paths use `{}` for a path parameter and `{*}` for a wildcard.
 * Rules: public | admin | authenticated (admin or any valid token) | token (any valid token, not the admin session) | scopes:<scope>[,<scope>].
 */
const EXPECTED: ReadonlyArray<readonly [method: string, path: string, rule: string]> = [
  // meta (public)
  ['GET', '/api/health', 'public'],
  ['GET', '/api/ready', 'public'], // readiness: which backend does not answer, nothing more
  ['GET', '/api/guide', 'public'],
  ['GET', '/api/skill-prompt', 'public'],
  ['GET', '/api/skill-pack.zip', 'public'],
  ['GET', '/openapi.json', 'public'],
  ['GET', '/docs', 'public'],
  ['GET', '/redoc', 'public'],
  ['GET', '/', 'public'],
  ['GET', '/admin-assets/{}', 'public'], // the admin page's hashed scripts and styles
  // session and admin UI support
  ['POST', '/api/login', 'public'],
  ['POST', '/api/logout', 'public'],
  ['GET', '/api/me', 'public'],
  ['POST', '/api/admin/password', 'admin'], // needs the current password too; signs out the other sessions
  ['GET', '/api/status', 'authenticated'],
  // admin only
  ['GET', '/api/schema', 'admin'],
  ['GET', '/api/config', 'admin'],
  ['POST', '/api/config', 'admin'],
  ['GET', '/api/config/raw', 'admin'],
  ['GET', '/api/config/path', 'admin'],
  ['POST', '/api/test', 'admin'],
  ['POST', '/api/derive-endpoint', 'admin'],
  ['GET', '/api/tokens', 'admin'],
  ['POST', '/api/tokens', 'admin'],
  ['PATCH', '/api/tokens/{}', 'admin'],
  ['DELETE', '/api/tokens/{}', 'admin'],
  ['POST', '/api/tokens/{}/revoke', 'admin'],
  ['GET', '/api/audit', 'admin'],
  // metrics: admin session, a token with metrics:read, or (no credentials) a MEMSTORE_METRICS_ALLOWED_IPS address
  ['GET', '/metrics', 'metrics'],
  // memories (Bearer token with scope, or the admin session)
  ['GET', '/api/memories', 'scopes:memory:read'],
  ['POST', '/api/memories', 'scopes:memory:write'],
  ['GET', '/api/memories/{}', 'scopes:memory:read'],
  ['PATCH', '/api/memories/{}', 'scopes:memory:write'],
  ['DELETE', '/api/memories/{}', 'scopes:memory:delete'],
  ['POST', '/api/memories/bulk-delete', 'scopes:memory:delete'],
  ['GET', '/api/memories/{}/download', 'scopes:memory:read'],
  // versions (issue 9): read for history, write for restore
  ['GET', '/api/memories/{}/versions', 'scopes:memory:read'],
  ['GET', '/api/memories/{}/versions/{}', 'scopes:memory:read'],
  ['POST', '/api/memories/{}/versions/{}/restore', 'scopes:memory:write'],
  ['GET', '/api/stats', 'scopes:memory:read'],
  // remote MCP endpoint: any valid Bearer token (never the admin session); each tool checks its scope
  ['POST', '/mcp', 'token'],
  ['ALL', '/mcp', 'public'], // every other method: 405 (stateless endpoint, no SSE stream or session)
  ['POST', '/mcp/oauth', 'token'], // the OAuth clients' MCP endpoint (MEMSTORE_OAUTH; 404 when off)
  // OAuth for connectors (src/oauth): the sign-in and consent page, the resource metadata (404 when off)
  ['GET', '/oauth-consent/{}', 'public'],
  ['POST', '/oauth-consent/{}/login', 'public'],
  ['POST', '/oauth-consent/{}', 'public'],
  ['GET', '/.well-known/oauth-protected-resource/mcp/oauth', 'public'],
  // portability (issue 12): export reads, import writes; copying between backends is the admin's
  ['GET', '/api/export', 'scopes:memory:read'],
  ['POST', '/api/import', 'scopes:memory:write'],
  ['GET', '/api/migrate', 'admin'],
  ['POST', '/api/migrate', 'admin'],
  // signed download URLs of the filesystem store (the signature is the credential)
  ['GET', '/api/files/{*}', 'public'],
];

interface Route {
  method: string;
  path: string;
  rule: string;
  where: string;
}

function describeRule(rule: AccessRule | undefined): string {
  if (!rule) return 'NONE (denied by default)';
  return rule.kind === 'scopes' ? `scopes:${rule.scopes.join(',')}` : rule.kind;
}

function normalizePath(...parts: string[]): string {
  const joined = `/${parts.filter((p) => p !== '' && p !== '/').join('/')}`
    .replace(/\/+/g, '/')
    .replace(/\/$/, '')
    .replace(/\{\*[^}]*\}|\*[A-Za-z_]\w*|\(\.\*\)|\*/g, '{*}')
    .replace(/:[A-Za-z_]\w*/g, '{}');
  return joined === '' ? '/' : joined;
}

const asList = (v: unknown): string[] => (Array.isArray(v) ? v : [v ?? '']) as string[];

/** Every controller route with the access rule the global guard will apply. */
function controllerRoutes(t: TestApp): Route[] {
  const discovery = new DiscoveryService(t.app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const routes: Route[] = [];
  for (const wrapper of discovery.getControllers()) {
    const ctrl = wrapper.metatype as (new (...a: unknown[]) => object) | undefined;
    if (!ctrl || !wrapper.instance) continue;
    const proto = Object.getPrototypeOf(wrapper.instance) as Record<string, unknown>;
    for (const name of scanner.getAllMethodNames(proto)) {
      const handler = proto[name] as object;
      const methodPaths = Reflect.getMetadata(PATH_METADATA, handler) as unknown;
      if (methodPaths === undefined) continue;
      const verb = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      const rule = (Reflect.getMetadata(ACCESS_KEY, handler) ?? Reflect.getMetadata(ACCESS_KEY, ctrl)) as AccessRule | undefined;
      for (const base of asList(Reflect.getMetadata(PATH_METADATA, ctrl))) {
        for (const sub of asList(methodPaths)) {
          routes.push({ method: verb, path: normalizePath(base, sub), rule: describeRule(rule), where: `${ctrl.name}.${name}` });
        }
      }
    }
  }
  return routes;
}

const key = (method: string, path: string) => `${method} ${path}`;

describe('route permissions', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it('every route requires exactly what the table says (a change here is a permission change)', async () => {
    const actual = new Map(controllerRoutes(t).map((r) => [key(r.method, r.path), r]));
    const expected = new Map(EXPECTED.map(([m, p, rule]) => [key(m, p), rule]));
    const added: string[] = [];
    const removed: string[] = [];
    const changed: string[] = [];

    for (const [k, r] of actual) {
      const want = expected.get(k);
      if (want === undefined) added.push(`${k} -> ${r.rule}   (${r.where})`);
      else if (want !== r.rule) changed.push(`${k}: table says ${want}, code says ${r.rule}   (${r.where})`);
    }
    // Routes outside Nest controllers (Swagger UI, the JSON document, static pages) are checked over HTTP.
    for (const [k, want] of expected) {
      if (actual.has(k)) continue;
      const [method, path] = k.split(' ');
      if (method !== 'GET' || path.includes('{')) {
        removed.push(`${k} (${want}): no controller route`);
        continue;
      }
      const res = await request(t.http).get(path);
      if (res.status === 404) removed.push(`${k} (${want}): not served`);
      else if (want === 'public' && (res.status === 401 || res.status === 403)) changed.push(`${k}: table says public, anonymous GET got ${res.status}`);
      else if (want !== 'public' && res.status !== 401) changed.push(`${k}: table says ${want}, anonymous GET got ${res.status}`);
    }

    const report = [
      added.length ? `Added (not in the table):\n  ${added.sort().join('\n  ')}` : '',
      removed.length ? `Removed (in the table, not served):\n  ${removed.sort().join('\n  ')}` : '',
      changed.length ? `Changed:\n  ${changed.sort().join('\n  ')}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    expect(report).toBe('');
  });

  it('no controller route is left without an access rule', () => {
    const open = controllerRoutes(t).filter((r) => r.rule.startsWith('NONE'));
    expect(open.map((r) => `${key(r.method, r.path)} (${r.where})`)).toEqual([]);
  });
});
