// The package-boundary lint (.dependency-cruiser.cjs, `pnpm lint:deps`): it fails a tree where a
// service imports another service or a package imports a service, by relative path or by
// workspace package name, and it passes this repository.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');

interface CruiseResult {
  /** The exit code and report of the lint itself, as `pnpm lint:deps` runs it. */
  exitCode: number;
  output: string;
  /** From its JSON report (whose exit code is always 0). */
  violations: { from: string; to: string; rule: string }[];
  dependenciesOf: (source: string) => string[];
}

function depcruise(cwd: string, extra: string[]): Promise<{ exitCode: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [DEPCRUISE, '--config', CONFIG, ...extra, 'services', 'packages'], { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      const exitCode = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      if (exitCode < 0 || !stdout) return reject(new Error(`depcruise did not run: ${err?.message} ${stderr}`));
      resolve({ exitCode, stdout });
    });
  });
}

/** Runs the lint in `cwd`: once as `pnpm lint:deps` does, once for its JSON report. */
async function cruise(cwd: string): Promise<CruiseResult> {
  const [plain, json] = await Promise.all([depcruise(cwd, []), depcruise(cwd, ['--output-type', 'json'])]);
  const report = JSON.parse(json.stdout) as {
    modules: { source: string; dependencies: { resolved: string }[] }[];
    summary: { violations: { from: string; to: string; rule: { name: string } }[] };
  };
  return {
    exitCode: plain.exitCode,
    output: plain.stdout,
    violations: report.summary.violations.map((v) => ({ from: v.from, to: v.to, rule: v.rule.name })),
    dependenciesOf: (source) => report.modules.find((m) => m.source === source)?.dependencies.map((d) => d.resolved) ?? [],
  };
}

describe('a tree that breaks the boundaries', () => {
  let dir = '';

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ap-boundaries-'));
    const file = async (rel: string, text: string) => {
      await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
      await writeFile(path.join(dir, rel), text);
    };
    // Two services, two packages; `@fx/worker` is the worker service under its workspace name,
    // linked into the api's node_modules as pnpm does.
    await file('packages/shared/package.json', JSON.stringify({ name: '@fx/shared', type: 'module', exports: { '.': './src/index.ts' } }));
    await file('packages/shared/src/index.ts', "export const shared = 1;\n");
    await file('packages/util/src/index.ts', "import { shared } from '../../shared/src/index';\nexport const util = shared + 1;\n");
    await file('packages/leaky/src/index.ts', "import { work } from '../../../services/worker/src/work';\nexport const leaky = work;\n");
    await file('services/worker/package.json', JSON.stringify({ name: '@fx/worker', type: 'module', exports: { '.': './src/work.ts' } }));
    await file('services/worker/src/work.ts', "import { shared } from '../../../packages/shared/src/index';\nexport const work = shared;\n");
    await file('services/worker/src/main.ts', "import { work } from './work';\nconsole.log(work);\n");
    await file('services/api/src/by-path.ts', "import { work } from '../../worker/src/work';\nexport const a = work;\n");
    await file('services/api/src/by-name.ts', "import type { work } from '@fx/worker';\nexport type B = typeof work;\n");
    await file('services/api/src/fine.ts', "import { util } from '../../../packages/util/src/index';\nexport const c = util;\n");
    await mkdir(path.join(dir, 'services/api/node_modules/@fx'), { recursive: true });
    await symlink(path.join(dir, 'services/worker'), path.join(dir, 'services/api/node_modules/@fx/worker'), 'dir');
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails, naming exactly the service-to-service and package-to-service imports', async () => {
    const result = await cruise(dir);
    expect(result.exitCode).not.toBe(0);
    expect(result.output).toContain('error service-imports-service: services/api/src/by-name.ts → services/worker/src/work.ts');
    expect(result.output).toContain('error package-imports-service: packages/leaky/src/index.ts → services/worker/src/work.ts');
    expect(result.violations.sort((a, b) => a.from.localeCompare(b.from))).toEqual([
      { from: 'packages/leaky/src/index.ts', to: 'services/worker/src/work.ts', rule: 'package-imports-service' },
      { from: 'services/api/src/by-name.ts', to: 'services/worker/src/work.ts', rule: 'service-imports-service' },
      { from: 'services/api/src/by-path.ts', to: 'services/worker/src/work.ts', rule: 'service-imports-service' },
    ]);
  });
});

describe('this repository', () => {
  it('passes, with workspace imports resolved to the packages they name', async () => {
    const result = await cruise(ROOT);
    expect(result.violations).toEqual([]);
    expect(result.exitCode).toBe(0);
    expect(result.output).toContain('no dependency violations found');
    // Not a pass by not seeing the imports: the stream server's engine import resolves to the
    // archive package, and the packer's processor to it as well.
    expect(result.dependenciesOf('services/api/src/download/planned.ts')).toContain('packages/archive/src/index.ts');
    expect(result.dependenciesOf('services/packer/src/processor.ts')).toContain('packages/archive/src/index.ts');
  });

  it('declares no service as a dependency of a service or package', async () => {
    const manifests = async (folder: string) =>
      Promise.all(
        (await readdir(path.join(ROOT, folder))).map(async (name) => ({
          at: `${folder}/${name}`,
          ...(JSON.parse(await readFile(path.join(ROOT, folder, name, 'package.json'), 'utf8')) as { name: string; dependencies?: object; devDependencies?: object }),
        })),
      );
    const services = await manifests('services');
    const serviceNames = new Set(services.map((s) => s.name));
    const declared = [...services, ...(await manifests('packages'))].flatMap((m) =>
      Object.keys({ ...m.dependencies, ...m.devDependencies })
        .filter((dep) => serviceNames.has(dep))
        .map((dep) => `${m.at} -> ${dep}`),
    );
    expect(serviceNames).toEqual(new Set(['@ap/api', '@ap/packer', '@ap/preparer']));
    expect(declared).toEqual([]);
  });
});
