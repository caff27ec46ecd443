// How the three services are built and started, in one place. Each service runs as one
// JavaScript bundle (services/<name>/dist/main.js, built by esbuild from its src/main.ts with
// the workspace packages and node_modules inlined), not through tsx: tsx's ESM loader runs in a
// thread of its own that costs ~45 MiB per process. `pnpm start`, the tests and the benches
// build the bundles themselves; the Dockerfile builds them into the image, and
// docker-compose.yml and k8s/ spell out the same commands (test/deploy-files.test.ts checks).
// docs/operations.md#the-rules says why the flags and the environment below.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, rename, stat, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from 'esbuild';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const SERVICES = ['api', 'preparer', 'packer'] as const;
export type ServiceName = (typeof SERVICES)[number];

/** Node/V8 flags per service. The packer's memory is budgeted (bench:pipeline (c)). */
export const SERVICE_NODE_FLAGS: Record<ServiceName, string[]> = {
  // 2 MiB semi-spaces: V8's default on a large host let the young generation grow to 128 MiB,
  // most of an idle API's RSS. Smaller semi-spaces promote more of a download's per-chunk
  // objects, so the old generation grows by half its live size, as the packer's (docs/engine.md#memory).
  // Liftoff only in every service: Prisma's wasm query compiler tiered up to TurboFan costs
  // ~50 MiB of code per process (docs/operations.md#memory-per-process).
  api: ['--liftoff-only', '--max-semi-space-size=2', '--heap-growing-percent=50'],
  // As the packer's young and old generations: a 20,000-file job's probes otherwise grew its
  // heap to 300 MB of mostly garbage.
  preparer: ['--liftoff-only', '--max-semi-space-size=1', '--heap-growing-percent=50'],
  // Liftoff only: Prisma's wasm query compiler is not tiered up to TurboFan (~50 MiB). 1 MiB
  // semi-spaces keep the heap smaller. No memory reducer: after an idle spell it pins the heap
  // limit just above the live heap and the socket chunks' external memory then starts a full
  // GC every few ms; `gc()` is exposed for the collections an idle packer runs instead
  // (main.ts). The old generation grows by half its live size, not double: a bin of many small
  // files promotes every request's objects. docs/operations.md#the-rules has the figures.
  packer: ['--liftoff-only', '--max-semi-space-size=1', '--no-memory-reducer', '--heap-growing-percent=50', '--expose-gc'],
};

/**
 * Environment of every service process (also set in the Dockerfile). A fixed mmap threshold
 * turns off glibc's sliding one, so freed multi-MiB buffers (upload parts) go back to the OS
 * instead of staying in the heap.
 */
export const SERVICE_ENV: Record<string, string> = {
  MALLOC_MMAP_THRESHOLD_: '131072',
};

/** The bundle of a service, relative to the repository root. */
export const bundlePath = (name: ServiceName) => `services/${name}/dist/main.js`;

/** `node` arguments that start a built service. */
export const serviceArgs = (name: ServiceName) => [...SERVICE_NODE_FLAGS[name], bundlePath(name)];

/** Starts a built service as a child process of this one, from the repository root. */
export function spawnService(name: ServiceName, env: NodeJS.ProcessEnv, options: Omit<SpawnOptions, 'env' | 'cwd'> = {}): ChildProcess {
  return spawn(process.execPath, serviceArgs(name), { ...options, cwd: ROOT, env: { ...env, ...SERVICE_ENV } });
}

/** How every bundle of ours is built: the services here, the operator commands in scripts/runtime-image.ts. */
export const BUNDLE_OPTIONS = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // Dropping comments keeps the source ASCII: V8 holds a bundle with one non-Latin-1
  // character in a comment as a two-byte string, twice the memory.
  minifyWhitespace: true,
  minifySyntax: true,
  keepNames: true,
  // Bundled CommonJS modules call require() for Node's built-ins.
  banner: { js: "import { createRequire as __apCreateRequire } from 'node:module'; const require = __apCreateRequire(import.meta.url);" },
  // pg loads it only for `pg.native`, which nothing uses. @ap/crc32 loads its native
  // addon from beside itself, so it stays in node_modules (resolved up from the bundle); so
  // does bcrypt (the API's native password hashing, its binary found beside its package).
  external: ['pg-native', '@ap/crc32', 'bcrypt'],
  logLevel: 'warning',
} satisfies BuildOptions;

/**
 * Bundles every service (about a second, several on a busy machine). Files are replaced by a
 * rename and only when their content changed, so a service starting meanwhile (another test
 * run) never reads half a file. With `ifStale`, a service whose bundle was built after the last
 * change to every file that went into it (the inputs esbuild reported, and the lockfile), with
 * the same options and esbuild, is not built again: `pnpm start` and the tests' global setup
 * then start without paying for it.
 */
export async function buildServices(names: readonly ServiceName[] = SERVICES, options: { ifStale?: boolean } = {}): Promise<void> {
  const esbuild = await import('esbuild');
  const key = createHash('sha256').update(JSON.stringify([esbuild.version, BUNDLE_OPTIONS])).digest('hex');
  const stale = options.ifStale ? (await Promise.all(names.map(async (name) => ((await bundleIsFresh(name, key)) ? null : name)))).filter((n) => n !== null) : names;
  if (stale.length === 0) return;
  try {
    await buildAll(esbuild, stale, key);
  } finally {
    // esbuild's service process would otherwise live as long as this one (under `pnpm start`
    // the largest process of the stack); the next build starts a new one.
    await esbuild.stop();
  }
}

/** What a build used: every input (relative to the root) and when the build began. */
interface BuildRecord {
  key: string;
  startedAt: number;
  inputs: string[];
}

const recordPath = (name: ServiceName) => path.join(ROOT, `services/${name}/dist/inputs.json`);

async function bundleIsFresh(name: ServiceName, key: string): Promise<boolean> {
  try {
    const record = JSON.parse(await readFile(recordPath(name), 'utf8')) as BuildRecord;
    if (record.key !== key) return false;
    await stat(path.join(ROOT, bundlePath(name)));
    const times = await Promise.all([...record.inputs, 'pnpm-lock.yaml'].map(async (file) => (await stat(path.join(ROOT, file))).mtimeMs));
    return times.every((t) => t < record.startedAt);
  } catch {
    return false; // no record, or an input gone: build
  }
}

async function buildAll(esbuild: typeof import('esbuild'), names: readonly ServiceName[], key: string): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const startedAt = Date.now();
      const result = await esbuild.build({
        absWorkingDir: ROOT,
        entryPoints: [`services/${name}/src/main.ts`],
        outfile: bundlePath(name),
        write: false,
        metafile: true,
        ...BUNDLE_OPTIONS,
        // Not loaded unless a process runs with --enable-source-maps (which costs memory): for
        // mapping a stack trace back to the TypeScript when needed.
        sourcemap: 'linked',
        sourcesContent: false,
      });
      for (const file of result.outputFiles) {
        const current = await readFile(file.path).catch(() => null);
        if (current?.equals(file.contents)) continue;
        await replaceFile(file.path, file.contents);
      }
      const record: BuildRecord = { key, startedAt, inputs: Object.keys(result.metafile.inputs) };
      await replaceFile(recordPath(name), Buffer.from(JSON.stringify(record)));
    }),
  );
}

async function replaceFile(file: string, contents: Uint8Array): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, file);
}
