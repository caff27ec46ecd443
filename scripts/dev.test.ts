// `./dev` on a machine without the project's Node (docs/operations.md#the-dev-command): a
// registry this test serves stands in for the npm registry, and PATH holds only the
// commands ./dev may rely on (bash, curl, coreutils, tar), so no Node, npm or pnpm is found.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

const root = new URL('../', import.meta.url).pathname;
const pnpmVersion = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { packageManager: string }).packageManager.split('@')[1]!;
const arch = os.arch() === 'arm64' ? 'arm64' : 'x64';
const TOOLS = ['bash', 'curl', 'tr', 'grep', 'sed', 'sort', 'tail', 'head', 'cut', 'mktemp', 'dirname', 'mkdir', 'rm', 'mv', 'cp', 'chmod', 'tar', 'gzip', 'sha512sum', 'base64', 'uname', 'id', 'seq', 'sleep', 'env', 'cat', 'ls', 'readlink'];

let work: string;
let registry: Server;
let registryUrl: string;
let binDir: string;
const packages = new Map<string, Buffer>(); // metadata path or tarball path -> body
let tamper = false;
let setpriv: string;

/** A registry tarball (package/<files>) of executable shell scripts. */
function tarball(name: string, files: Record<string, string>): Buffer {
  const dir = mkdtempSync(path.join(work, 'pkg-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, 'package', file)), { recursive: true });
    writeFileSync(path.join(dir, 'package', file), text, { mode: 0o755 });
  }
  writeFileSync(path.join(dir, 'package', 'package.json'), JSON.stringify({ name }));
  return execFileSync('tar', ['czf', '-', '-C', dir, 'package']);
}

/** Publishes `versions` of `name`, in the registry's abbreviated metadata format. */
function publish(name: string, versions: Record<string, Buffer>) {
  const base = name.split('/').pop()!;
  const entries: Record<string, unknown> = {};
  for (const [version, body] of Object.entries(versions)) {
    const file = `/${name}/-/${base}-${version}.tgz`;
    packages.set(file, body);
    const integrity = `sha512-${createHash('sha512').update(body).digest('base64')}`;
    entries[version] = { name, version, dist: { integrity, shasum: createHash('sha1').update(body).digest('hex'), tarball: `${registryUrl}${file}` } };
  }
  packages.set(`/${name.replace('/', '%2f')}`, Buffer.from(JSON.stringify({ name, 'dist-tags': {}, versions: entries })));
}

/** A stand-in `node` that reports `version` and otherwise runs this machine's Node. */
const fakeNode = (version: string) => ({ 'bin/node': `#!/bin/sh\n[ "$1" = --version ] && { echo v${version}; exit 0; }\nexec ${process.execPath} "$@"\n` });

/** Runs ./dev (asynchronously: this process serves the registry it reads). */
function dev(args: string[], home: string, extraEnv: Record<string, string> = {}, asUser = false): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const env = { PATH: binDir, HOME: home, AP_NODE_HOME: path.join(home, 'node'), npm_config_registry: registryUrl, ...extraEnv };
  // The non-root path is what a developer's account takes: as root, run it as `nobody`.
  const [cmd, argv] = asUser && process.getuid!() === 0 ? [setpriv, ['--reuid=65534', '--regid=65534', '--clear-groups', path.join(root, 'dev'), ...args]] : [path.join(root, 'dev'), args];
  const child = spawn(cmd, argv as string[], { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

function freshHome(): string {
  const home = mkdtempSync(path.join(work, 'home-'));
  chmodSync(home, 0o777);
  return home;
}

beforeAll(async () => {
  work = mkdtempSync(path.join(os.tmpdir(), 'ap-dev-'));
  chmodSync(work, 0o755);
  binDir = path.join(work, 'bin');
  mkdirSync(binDir);
  for (const tool of TOOLS) {
    const found = execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim();
    symlinkSync(found, path.join(binDir, tool));
  }
  setpriv = execFileSync('bash', ['-c', 'command -v setpriv || true'], { encoding: 'utf8' }).trim();
  registry = createServer((req, res) => {
    let body = packages.get(req.url!);
    if (!body) return void res.writeHead(404).end();
    if (tamper && req.url!.endsWith('.tgz')) body = Buffer.concat([body, Buffer.alloc(1)]);
    res.writeHead(200, { 'content-type': req.url!.endsWith('.tgz') ? 'application/octet-stream' : 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
  registryUrl = `http://127.0.0.1:${(registry.address() as AddressInfo).port}`;
  publish(`node-linux-${arch}`, Object.fromEntries(['22.1.0', '24.2.0', '24.10.0', '25.0.0'].map((v) => [v, tarball('node', fakeNode(v))])));
  publish('pnpm', { [pnpmVersion]: tarball('pnpm', { pnpm: '#!/bin/sh\necho placeholder\n' }), '99.0.0': tarball('pnpm', { pnpm: '#!/bin/sh\necho 99.0.0\n' }) });
  publish(`@pnpm/exe.linux-${arch}`, { [pnpmVersion]: tarball('exe', { pnpm: `#!/bin/sh\n[ "$1" = --version ] && { echo ${pnpmVersion}; exit 0; }\necho "pnpm $*"\n` }) });
});

afterAll(async () => {
  await new Promise((resolve) => registry.close(resolve));
  rmSync(work, { recursive: true, force: true });
});

describe('./dev <command>', () => {
  it('installs the newest Node 24 and the pinned pnpm from the registry once, then runs the command with them on PATH', async () => {
    const home = freshHome();
    const first = await dev(['node', '--version'], home);
    expect(first.stderr).toContain(`installing node-linux-${arch}@24.10.0`);
    expect(first.stderr).toContain(`installing @pnpm/exe.linux-${arch}@${pnpmVersion}`);
    expect(first.stdout.trim()).toBe('v24.10.0');
    expect(first.status).toBe(0);
    expect(existsSync(path.join(home, 'node', 'node_modules', `node-linux-${arch}`, 'bin', 'node'))).toBe(true);

    const again = await dev(['pnpm', '--silent', 'admin', 'users'], home);
    expect(again.stderr).not.toContain('installing');
    expect(again.stdout.trim()).toBe('pnpm --silent admin users');
    expect(again.status).toBe(0);
    // Anything else runs with both first on PATH (the walkthrough's second terminal).
    const which = await dev(['bash', '-c', 'command -v node; command -v pnpm; node -p 40+2'], home);
    expect(which.stdout.split('\n').slice(0, 3)).toEqual([path.join(home, 'node', 'node_modules', `node-linux-${arch}`, 'bin', 'node'), path.join(home, 'node', 'pnpm', pnpmVersion, 'pnpm'), '42']);
  });

  it('refuses a tarball whose SHA-512 is not the registry\'s, and installs nothing', async () => {
    const home = freshHome();
    tamper = true;
    try {
      const out = await dev(['node', '--version'], home);
      expect(out.status).toBe(1);
      expect(out.stderr).toContain("the tarball's SHA-512 does not match the registry's integrity");
      expect(existsSync(path.join(home, 'node', 'node_modules', `node-linux-${arch}`))).toBe(false);
    } finally {
      tamper = false;
    }
  });

  it('names the registry when it cannot be read', async () => {
    const out = await dev(['node', '--version'], freshHome(), { npm_config_registry: 'http://127.0.0.1:1/' });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('cannot read node-linux-');
    expect(out.stderr).toContain('from the npm registry at http://127.0.0.1:1');
  });

  it('prints its usage without arguments', async () => {
    const out = await dev([], freshHome());
    expect(out.status).toBe(2);
    expect(out.stderr).toContain('./dev start [args]');
  });
});

describe('./dev start', () => {
  it('runs what `pnpm start` runs as its own process, so a signal sent to its pid reaches the stack', async () => {
    const home = freshHome();
    // The toolchain ./dev start asks for, and a Node 24 already on PATH that reports its pid and arguments.
    const extra = path.join(home, 'bin');
    mkdirSync(extra);
    for (const tool of ['python3', 'make', 'g++']) symlinkSync(execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), path.join(extra, tool));
    writeFileSync(path.join(extra, 'node'), '#!/bin/sh\n[ "$1" = --version ] && { echo v24.10.0; exit 0; }\necho "node pid $$: $*"\n', { mode: 0o755 });
    const env = { PATH: `${extra}:${binDir}`, HOME: home, AP_NODE_HOME: path.join(home, 'node'), npm_config_registry: registryUrl, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
    const child = spawn(path.join(root, 'dev'), ['start', '--an-argument'], { cwd: home, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const status = await new Promise((resolve) => child.once('close', resolve));
    expect(status).toBe(0);
    expect(stdout).toContain('pnpm install --frozen-lockfile');
    expect(stdout).toContain(`node pid ${child.pid}: --import tsx scripts/start.ts --an-argument`);
  });
});

describe('./dev start and ./dev test without root', () => {
  // No Redis answers on port 1, and PATH has no compiler, Python, Redis, browser or archive readers.
  const env = { REDIS_URL: 'redis://127.0.0.1:1', TEST_REDIS_URL: 'redis://127.0.0.1:1' };

  it('./dev start names the OS packages to install and exits 1 before installing anything', async () => {
    const home = freshHome();
    const out = await dev(['start'], home, env, true);
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('dev: missing: python3 make g++ redis-server');
    expect(out.stderr).toContain('as root: apt-get install -y python3 make g++ redis-server), then run ./dev start again');
    expect(existsSync(path.join(home, 'node'))).toBe(false);
  });

  it('./dev test also names what the tests need', async () => {
    const out = await dev(['test'], freshHome(), env, true);
    expect(out.status).toBe(1);
    // The commons-compress jar is a file, not a command: named when this machine lacks it.
    const jar = existsSync('/usr/share/java/commons-compress.jar') ? '' : ' libcommons-compress-java';
    expect(out.stderr).toContain(`dev: missing: python3 make g++ redis-server chromium unzip p7zip-full libarchive-tools openssl default-jdk-headless${jar} unar\n`);
    expect(out.stderr).toContain('then run ./dev test again');
  });
});
