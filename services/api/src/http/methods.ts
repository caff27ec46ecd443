// Which methods each path takes, so that every answer is ours: OPTIONS on a known
// path is 204 with `Allow`, another method on it is 405 with `Allow` and the error envelope,
// before authentication (a path's methods are no secret). Unknown paths fall through to 404.
import type { RequestHandler } from 'express';
import { ApiError } from '@ap/contract';

export interface RouteMethods {
  /** Express-style path: literal segments and `:param` segments (one non-empty segment each). */
  path: string;
  /** Methods the route answers; GET implies HEAD (Express answers HEAD with the GET route). */
  methods: readonly string[];
}

/** Every route of the API, one entry per path, from the contract's route list (which the OpenAPI document is made of). */
export function routeMethodsOf(routes: readonly { method: string; path: string }[]): RouteMethods[] {
  const byPath = new Map<string, string[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r.method.toUpperCase()]);
  const order = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
  return [...byPath].map(([path, methods]) => ({ path, methods: methods.sort((a, b) => order.indexOf(a) - order.indexOf(b)) }));
}

/** Splits a request path as Express matches it: case-insensitive, one trailing slash optional. */
const segmentsOf = (path: string) => path.replace(/\/$/, '').toLowerCase().split('/');

function matcher(route: RouteMethods): (segments: string[]) => boolean {
  const pattern = segmentsOf(route.path);
  return (segments) => segments.length === pattern.length && pattern.every((p, i) => (p.startsWith(':') ? segments[i] !== '' : p === segments[i]));
}

/** The `Allow` value of a route: its methods, HEAD after GET, OPTIONS last. */
export function allowHeader(methods: readonly string[]): string {
  const allowed = methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
  return [...new Set([...allowed, 'OPTIONS'])].join(', ');
}

export function methodGuard(routes: readonly RouteMethods[]): RequestHandler {
  const table = routes.map((route) => ({ matches: matcher(route), allow: allowHeader(route.methods), methods: new Set(route.methods.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]))) }));
  return (req, res, next) => {
    const segments = segmentsOf(req.path);
    // Several routes can share a path shape (`/jobs/stats` and `/jobs/:id`): their methods add up.
    const matching = table.filter((route) => route.matches(segments));
    if (matching.length === 0) return next();
    const methods = new Set(matching.flatMap((route) => [...route.methods]));
    if (methods.has(req.method)) return next();
    const allow = allowHeader([...methods].filter((m) => m !== 'HEAD'));
    if (req.method === 'OPTIONS') {
      res.set('Allow', allow).status(204).end();
      return;
    }
    next(new ApiError('METHOD_NOT_ALLOWED', `method ${req.method} is not allowed on this path; allowed: ${allow}`).withHeaders({ Allow: allow }));
  };
}
