import { createParamDecorator, ExecutionContext } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Principal } from '../common/auth/principal';
import { ALL_NAMESPACES, DEFAULT_NAMESPACE, NAMESPACE_HEADER, NamespaceRequestError, resolveNamespace } from './namespace';

/**
 * How a REST request chooses its namespace (issue 43, decision 0101): the X-Memory-Namespace
 * header, or a `namespace` query parameter or JSON body field. The middleware takes the field out
 * of the query and the body before validation (the DTOs stay as the spec has them) and keeps the
 * choice on the request; the route's @RequestNamespace() parameter resolves it against the
 * caller's binding (resolveNamespace: 403 outside it, 400 when ambiguous), and the services pass
 * that one name down to every port call. No hidden state: the name travels as an argument.
 */
declare module 'express-serve-static-core' {
  interface Request {
    /** What the client chose (undefined: nothing), set by namespaceChoice. */
    namespaceChoice?: string;
    /** Why the choice is unusable (several names that disagree, a non-string field): a 400 when the route resolves it. */
    namespaceChoiceProblem?: string;
  }
}

/** The namespaces a caller is bound to: a token's binding; the signed-in administrator works in any. */
export function bindingOf(principal: Principal | undefined): readonly string[] {
  if (!principal) return [DEFAULT_NAMESPACE];
  if (principal.kind === 'admin') return [ALL_NAMESPACES];
  return principal.namespaces && principal.namespaces.length > 0 ? principal.namespaces : [DEFAULT_NAMESPACE];
}

/** The one namespace this request works in (see resolveNamespace). */
export function requestNamespace(req: Request, requested: string | undefined = req.namespaceChoice): string {
  if (req.namespaceChoiceProblem) throw new NamespaceRequestError(req.namespaceChoiceProblem);
  return resolveNamespace(bindingOf(req.principal), requested);
}

/** The request's namespace, resolved against the authenticated caller (a route parameter). */
export const RequestNamespace = createParamDecorator((_: unknown, ctx: ExecutionContext): string => requestNamespace(ctx.switchToHttp().getRequest<Request>()));

/**
 * Takes `namespace` out of the query string and the JSON body; header, query and body must agree
 * (else the route answers 400, after authentication, through the usual error envelope).
 */
export function namespaceChoice(req: Request, _res: Response, next: NextFunction): void {
  if (!req.url.startsWith('/api/')) return next();
  try {
    const seen: string[] = [];
    const header = req.headers[NAMESPACE_HEADER];
    if (header !== undefined) seen.push(...(Array.isArray(header) ? header : [header]));
    const q = req.url.indexOf('?');
    if (q >= 0) {
      const params = new URLSearchParams(req.url.slice(q + 1));
      const given = params.getAll('namespace');
      if (given.length > 0) {
        seen.push(...given);
        params.delete('namespace');
        const rest = params.toString();
        req.url = req.url.slice(0, q) + (rest ? `?${rest}` : '');
      }
    }
    const body = req.body as unknown;
    if (body && typeof body === 'object' && !Array.isArray(body) && Object.prototype.hasOwnProperty.call(body, 'namespace')) {
      const v = (body as Record<string, unknown>).namespace;
      delete (body as Record<string, unknown>).namespace;
      if (typeof v !== 'string') throw new NamespaceRequestError('Invalid namespace: "namespace" must be a string');
      seen.push(v);
    }
    const distinct = [...new Set(seen.map((s) => s.trim()))];
    if (distinct.length > 1) throw new NamespaceRequestError(`The request names several namespaces (${distinct.join(', ')}): name one, in the ${NAMESPACE_HEADER} header or a "namespace" field`);
    req.namespaceChoice = distinct[0];
  } catch (e) {
    req.namespaceChoiceProblem = (e as Error).message;
  }
  next();
}
