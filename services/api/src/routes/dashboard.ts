// Serves the dashboard (packages/dashboard, built into its dist/ by `pnpm build`) at /dashboard:
// hashed assets with a long cache life, and index.html for every client route of the app so
// reloads and shared links work. The API does not import the dashboard package (its build
// tooling must not end up in the API bundle); it finds the built files on disk.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import express, { Router } from 'express';
import { ApiError } from '@ap/contract';

/**
 * packages/dashboard/dist, found upwards from this module: from services/api/src/routes in the
 * source tree and from services/api/dist in a bundle alike.
 */
export function findDashboardDist(from = path.dirname(fileURLToPath(import.meta.url))): string | null {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'packages', 'dashboard', 'dist');
    if (existsSync(path.join(dir, 'packages', 'dashboard', 'package.json'))) return candidate;
    if (path.dirname(dir) === dir) return null;
  }
}

export function dashboardRouter(distDir: string | null = findDashboardDist()): Router {
  const router = Router();
  const notBuilt = () => new ApiError('NOT_FOUND', 'the dashboard is not built (run pnpm build)');
  if (!distDir) {
    router.use((_req, _res, next) => next(notBuilt()));
    return router;
  }
  const index = path.join(distDir, 'index.html');
  // File names under assets/ carry a content hash: they never change.
  router.use('/assets', express.static(path.join(distDir, 'assets'), { immutable: true, maxAge: '1y', index: false }), (_req, _res, next) =>
    next(new ApiError('NOT_FOUND', 'no such dashboard file')),
  );
  // Any other path is one of the app's own pages: index.html. A middleware, not an Express
  // route: the dashboard is static content, not part of the API that /openapi.json describes.
  router.use((req, res, next) => {
    if (req.method === 'OPTIONS') return void res.set('Allow', 'GET, HEAD, OPTIONS').status(204).end();
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return next(new ApiError('METHOD_NOT_ALLOWED', `method ${req.method} is not allowed on the dashboard; allowed: GET, HEAD, OPTIONS`).withHeaders({ Allow: 'GET, HEAD, OPTIONS' }));
    }
    if (!existsSync(index)) return next(notBuilt());
    // /dashboard without the slash: relative links resolve against /dashboard/.
    if (req.originalUrl.split('?')[0] === '/dashboard') return res.redirect(301, '/dashboard/');
    res.set('cache-control', 'no-cache');
    res.sendFile(index);
  });
  return router;
}
