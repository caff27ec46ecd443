// The package-boundary lint (.dependency-cruiser.cjs, `pnpm lint:deps`): it fails a tree where a
// service imports another service, a package imports a service, a package imports one of a
// layer above its own, a client package imports a server one, code imports test/, a script or
// bench imports a service (by relative path or by workspace package name), or files import
// each other in a circle; and it passes this repository.
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

/** The folders `pnpm lint:deps` cruises, from its script. */
async function linted(): Promise<string[]> {
  const manifest = JSON.parse(await readFile(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  return manifest.scripts['lint:deps']!.split(' ').slice(3);
}

async function depcruise(cwd: string, extra: string[]): Promise<{ exitCode: number; stdout: string }> {
  const folders = await linted();
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [DEPCRUISE, '--config', CONFIG, ...extra, ...folders], { cwd, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
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
    // One import up from each layer but the top (whose way up is a service), the archive
    // engine's by workspace name as its real imports are; and imports that are allowed.
    const layered = ['contract', 'fetch', 'db', 'archive', 'jobs', 'service-kit', 'zip', 'cli', 'storage', 'dashboard'];
    for (const name of layered) await file(`packages/${name}/package.json`, JSON.stringify({ name: `@fx/${name}`, type: 'module', exports: { '.': './src/index.ts' } }));
    await file('packages/zip/src/index.ts', 'export const zip = 1;\n');
    await file('packages/fetch/src/index.ts', "import { zip } from '../../zip/src/index';\nexport const fetch = zip;\n");
    await file('packages/contract/src/index.ts', "import { fetch } from '../../fetch/src/index';\nexport const contract = fetch;\n");
    await file('packages/db/src/index.ts', "import { archive } from '../../archive/src/index';\nexport const db = archive;\n");
    await file('packages/archive/src/index.ts', "import { jobs } from '@fx/jobs';\nexport const archive = jobs;\n");
    await mkdir(path.join(dir, 'packages/archive/node_modules/@fx'), { recursive: true });
    await symlink(path.join(dir, 'packages/jobs'), path.join(dir, 'packages/archive/node_modules/@fx/jobs'), 'dir');
    await file('packages/jobs/src/index.ts', "import { kit } from '../../service-kit/src/index';\nimport { zip } from '../../zip/src/index';\nexport const jobs = kit + zip;\n");
    await file('packages/service-kit/src/index.ts', "import { helper } from '../../../test/helpers';\nexport const kit = helper;\n");
    await file('packages/cli/src/index.ts', "import { db } from '../../db/src/index';\nexport const cli = db;\n");
    await file('packages/storage/src/store.test.ts', "import { kit } from '../../service-kit/src/index';\nexport const t = kit;\n");
    await file('packages/dashboard/src/page.test.ts', "import { helper } from '../../../test/helpers';\nexport const t = helper;\n");
    await file('test/helpers.ts', 'export const helper = 1;\n');
    await file('scripts/admin.ts', "import { work } from '../services/worker/src/work';\nconsole.log(work);\n");
    await file('bench/run.ts', "import { shared } from '../packages/shared/src/index';\nconsole.log(shared);\n");
    // Two files of one package importing each other (the circle is reported once).
    await file('packages/zip/src/writer.ts', "import { options } from './options';\nexport const writer = () => options;\n");
    await file('packages/zip/src/options.ts', "import { writer } from './writer';\nexport const options = { writer };\n");
  });

  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('fails, naming exactly the imports across a boundary', async () => {
    const result = await cruise(dir);
    expect(result.exitCode).not.toBe(0);
    expect(result.output).toContain('error service-imports-service: services/api/src/by-name.ts → services/worker/src/work.ts');
    expect(result.output).toContain('error package-imports-service: packages/leaky/src/index.ts → services/worker/src/work.ts');
    expect(result.output).toContain('error archive-imports-upward: packages/archive/src/index.ts → packages/jobs/src/index.ts');
    expect(result.violations.sort((a, b) => a.from.localeCompare(b.from) || a.rule.localeCompare(b.rule))).toEqual([
      { from: 'packages/archive/src/index.ts', to: 'packages/jobs/src/index.ts', rule: 'archive-imports-upward' },
      { from: 'packages/cli/src/index.ts', to: 'packages/db/src/index.ts', rule: 'client-imports-server' },
      { from: 'packages/contract/src/index.ts', to: 'packages/fetch/src/index.ts', rule: 'base-imports-upward' },
      { from: 'packages/db/src/index.ts', to: 'packages/archive/src/index.ts', rule: 'io-imports-upward' },
      { from: 'packages/jobs/src/index.ts', to: 'packages/service-kit/src/index.ts', rule: 'lifecycle-imports-upward' },
      { from: 'packages/leaky/src/index.ts', to: 'services/worker/src/work.ts', rule: 'package-imports-service' },
      { from: 'packages/service-kit/src/index.ts', to: 'test/helpers.ts', rule: 'code-imports-tests' },
      { from: 'packages/zip/src/options.ts', to: 'packages/zip/src/writer.ts', rule: 'no-circular' },
      { from: 'scripts/admin.ts', to: 'services/worker/src/work.ts', rule: 'tool-imports-service' },
      { from: 'services/api/src/by-name.ts', to: 'services/worker/src/work.ts', rule: 'service-imports-service' },
      { from: 'services/api/src/by-path.ts', to: 'services/worker/src/work.ts', rule: 'service-imports-service' },
    ]);
  }, 180_000);
});

// The lint cruises the whole workspace twice (once as `pnpm lint:deps` does, once for its JSON
// report): on a busy machine that takes over jest's default minute.
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
  }, 180_000);

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
