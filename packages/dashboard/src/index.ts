// The dashboard: a Preact single-page app (web/) that Vite builds into dist/, served by the API
// at /dashboard (services/api/src/routes/dashboard.ts). `pnpm build`, `pnpm start` and the test
// global setup build it; the API only serves the files and never imports this package.
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DASHBOARD_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const DASHBOARD_DIST = path.join(DASHBOARD_ROOT, 'dist');
/** The URL path the API serves the dashboard under (Vite's `base`). */
export const DASHBOARD_BASE = '/dashboard/';

/** The SDK's browser-safe client and its generated types, which the app bundles (web/api.ts). */
const SDK_CLIENT_SOURCES = ['client.ts', 'openapi.ts'].map((f) => path.join(DASHBOARD_ROOT, '..', 'sdk', 'src', f));

/** Newest modification time of the app's sources (web/, the SDK client, and this package's manifest for dependency changes). */
async function newestSource(): Promise<number> {
  const entries = await readdir(path.join(DASHBOARD_ROOT, 'web'), { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  files.push(path.join(DASHBOARD_ROOT, 'package.json'), fileURLToPath(import.meta.url), ...SDK_CLIENT_SOURCES);
  const times = await Promise.all(files.map(async (f) => (await stat(f)).mtimeMs));
  return Math.max(...times);
}

/** True when dist/ was built after the last change to the sources. */
export async function dashboardIsFresh(): Promise<boolean> {
  const built = await stat(path.join(DASHBOARD_DIST, 'index.html')).then((s) => s.mtimeMs, () => 0);
  return built > (await newestSource());
}

/**
 * Builds web/ into dist/ (about a second of CPU, more on a busy machine). With `ifStale`, only
 * when a source changed since the last build: `pnpm start` and the tests need not pay for it.
 */
export async function buildDashboard(options: { ifStale?: boolean } = {}): Promise<void> {
  if (options.ifStale && (await dashboardIsFresh())) return;
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
