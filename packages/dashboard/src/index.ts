// The dashboard: a Preact single-page app (web/) that Vite builds into dist/, served by the API
// at /dashboard (services/api/src/routes/dashboard.ts). `pnpm build`, `pnpm start` and the test
// global setup build it; the API only serves the files and never imports this package.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DASHBOARD_DIST = path.join(DASHBOARD_ROOT, 'dist');
/** The URL path the API serves the dashboard under (Vite's `base`). */
export const DASHBOARD_BASE = '/dashboard/';

/** Builds web/ into dist/ (about a second). */
export async function buildDashboard(): Promise<void> {
  const { build } = await import('vite');
  await build({
    root: path.join(DASHBOARD_ROOT, 'web'),
    base: DASHBOARD_BASE,
    configFile: false,
    envDir: false,
    logLevel: 'warn',
    oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
    build: {
      outDir: DASHBOARD_DIST,
      emptyOutDir: true,
      // Browsers of the last few years; no polyfills.
      target: 'es2022',
      sourcemap: false,
    },
  });
}
