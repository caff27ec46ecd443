// `pnpm build:runtime DIR`: writes into DIR the files the runtime image holds, and nothing else
// (the Dockerfile copies DIR into its last stage). Every service and operator command is one
// bundle with its node_modules inlined (scripts/services.ts), so the image needs no
// node_modules but the CRC-32 addon the bundles leave outside; no dev, build or test
// dependency, no TypeScript, no pnpm. test/runtime-image.test.ts runs migrations, creates a
// user and starts the services from such a tree.
import { cp, mkdir, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { buildDashboard } from '@ap/dashboard';
import { BUNDLE_OPTIONS, buildServices, bundlePath, ROOT, SERVICES } from './services';

/** Operator commands in the image, run as `node <path>` from its working directory. */
export const OPERATOR_BUNDLES = { migrate: 'dist/migrate.js', admin: 'dist/admin.js' } as const;

/**
 * Bundles scripts/migrate.ts and scripts/admin.ts like the services (the same esbuild settings,
 * without source maps). They sit one folder below the root, as
 * their sources do, so `../prisma/migrations` resolves the same from either.
 */
export async function buildOperatorBundles(): Promise<void> {
  const esbuild = await import('esbuild');
  await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: { migrate: 'scripts/migrate.ts', admin: 'scripts/admin.ts' },
    outdir: 'dist',
    ...BUNDLE_OPTIONS,
  });
}

/** The files of @ap/crc32 that run: its loader and the addon built at install. */
const CRC32_FILES = ['package.json', 'index.cjs', 'build/Release/crc32.node'];

/**
 * Files or folders (from the repository root) that a service reads from disk at run time rather
 * than through its bundle, such as built static assets it serves: copied as they are, at the
 * same path. Anything a service loads from node_modules at run time has to be listed here too,
 * since the image has no node_modules but the CRC-32 addon.
 */
export const RUNTIME_ASSETS: string[] = ['packages/dashboard/package.json', 'packages/dashboard/dist'];

/**
 * Packages the bundles load from node_modules at run time (left outside them because they find
 * files beside themselves): each package's files that run, resolved from the API's manifest.
 * bcrypt loads its prebuilt addon for the platform through node-gyp-build; the reference page
 * serves Swagger UI's files from its package.
 */
export const RUNTIME_PACKAGES: Record<string, string[]> = {
  bcrypt: ['package.json', 'bcrypt.js', 'promises.js', 'prebuilds/linux-x64', 'prebuilds/linux-arm64'],
  'node-gyp-build': ['package.json', 'index.js', 'node-gyp-build.js'],
  'swagger-ui-dist': ['package.json', 'swagger-ui.css', 'swagger-ui-bundle.js', 'favicon-32x32.png'],
};

/** Builds every bundle and copies the runtime files into `dest` (emptied first). */
export async function assembleRuntimeTree(dest: string): Promise<void> {
  await Promise.all([buildServices(), buildOperatorBundles(), buildDashboard({ ifStale: true })]);
  await rm(dest, { recursive: true, force: true });
  await mkdir(dest, { recursive: true });
  // The bundles are ES modules with a .js extension.
  await writeFile(path.join(dest, 'package.json'), `${JSON.stringify({ name: 'archive-packager-runtime', private: true, type: 'module' }, null, 2)}\n`);
  const copy = (from: string, to = from) => cp(path.join(ROOT, from), path.join(dest, to), { recursive: true });
  for (const name of SERVICES) await copy(bundlePath(name));
  for (const file of Object.values(OPERATOR_BUNDLES)) await copy(file);
  await copy('prisma/migrations');
  for (const asset of RUNTIME_ASSETS) await copy(asset);
  for (const file of CRC32_FILES) await copy(path.join('packages/crc32', file), path.join('node_modules/@ap/crc32', file));
  const fromApi = createRequire(path.join(ROOT, 'services/api/package.json'));
  const bcryptRequire = createRequire(fromApi.resolve('bcrypt/package.json'));
  for (const [name, files] of Object.entries(RUNTIME_PACKAGES)) {
    const dir = path.dirname((name === 'node-gyp-build' ? bcryptRequire : fromApi).resolve(`${name}/package.json`));
    for (const file of files) await cp(path.join(dir, file), path.join(dest, 'node_modules', name, file), { recursive: true });
  }
}

/** Total size in bytes of the files under `dir`. */
export async function treeSize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dest = path.resolve(process.argv[2] ?? 'dist/runtime');
  await assembleRuntimeTree(dest);
  process.stdout.write(`runtime files in ${dest}: ${((await treeSize(dest)) / 2 ** 20).toFixed(1)} MiB\n`);
}
