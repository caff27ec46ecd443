// Which methods each path takes, so that every answer is ours (issue 16): OPTIONS on a known
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

/**
 * Every public route of the API. A branch adding a route adds its line here (the hardening test
 * and the fuzz suite check the table against the app).
 */
export const API_ROUTES: readonly RouteMethods[] = [
  { path: '/healthz', methods: ['GET'] },
  { path: '/readyz', methods: ['GET'] },
  { path: '/download/:token', methods: ['GET'] },
  { path: '/auth/login', methods: ['POST'] },
  { path: '/api-keys', methods: ['GET', 'POST'] },
  { path: '/api-keys/:id', methods: ['DELETE'] },
  { path: '/jobs', methods: ['GET', 'POST'] },
  { path: '/jobs/:id', methods: ['GET'] },
  { path: '/jobs/:id/retry', methods: ['POST'] },
];

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
