// The runtime image holds only what scripts/runtime-image.ts assembles: bundles, the SQL
// migrations and the CRC-32 addon, no node_modules otherwise. This builds that tree in a temp
// folder (no node_modules above it) and runs it as the image would: migrations, the first user,
// then api, preparer and packer packing a stored job that is downloaded and read back.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { assembleRuntimeTree, OPERATOR_BUNDLES, RUNTIME_ASSETS, RUNTIME_PACKAGES, treeSize } from '../scripts/runtime-image';
import { SERVICE_ENV, SERVICES, serviceArgs } from '../scripts/services';
import { call, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { readZip } from './zip-readers';

const tree = mkdtempSync(path.join(os.tmpdir(), 'ap-runtime-'));
const databaseUrl = (() => {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/ap_runtime_${process.pid}_${randomBytes(3).toString('hex')}`;
  return url.toString();
})();
/** Every file under a path of the repository (a file or a folder), relative to the root. */
const filesUnder = (p: string): string[] => {
  const full = fileURLToPath(new URL(`../${p}`, import.meta.url));
  if (!statSync(full).isDirectory()) return [p];
  return readdirSync(full, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(fileURLToPath(new URL('../', import.meta.url)), path.join(e.parentPath, e.name)));
};
const migrationNames = readdirSync(new URL('../prisma/migrations/', import.meta.url), { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

/** The service configuration only: no NODE_PATH or anything else that could find node_modules. */
function imageEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = ['PATH', 'REDIS_URL', 'S3_ENDPOINT', 'S3_BUCKET', 'S3_REGION', 'S3_ACCESS_KEY_ID', 'S3_SECRET_ACCESS_KEY', 'S3_FORCE_PATH_STYLE', 'DOWNLOAD_TOKEN_SECRET', 'SESSION_SECRET', 'SECRETS_KEY', 'ALLOW_PRIVATE_URLS', 'LOG_LEVEL', 'RATE_LIMIT_PER_MINUTE', 'UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE', 'TRUSTED_PROXIES'];
  const env: NodeJS.ProcessEnv = { NODE_ENV: 'production', DATABASE_URL: databaseUrl, ...SERVICE_ENV };
  for (const name of keep) if (process.env[name] !== undefined) env[name] = process.env[name];
  return { ...env, ...extra };
}

function runInTree(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: tree, env: imageEnv() }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  await assembleRuntimeTree(tree);
}, 180_000);

afterAll(async () => {
  rmSync(tree, { recursive: true, force: true });
  const admin = new pg.Client({ connectionString: Object.assign(new URL(databaseUrl), { pathname: '/postgres' }).toString() });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${new URL(databaseUrl).pathname.slice(1)}" WITH (FORCE)`);
  await admin.end();
});

describe('runtime image files', () => {
  it('are the bundles, migrations, built static files and the few packages loaded from disk only (size printed for docs/operations.md#deployment-files)', async () => {
    const files = readdirSync(tree, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.relative(tree, path.join(e.parentPath, e.name)))
      .sort();
    expect(files).toEqual(
      [
        'package.json',
        ...Object.values(OPERATOR_BUNDLES),
        ...SERVICES.map((s) => `services/${s}/dist/main.js`),
        'prisma/migrations/migration_lock.toml',
        ...migrationNames.map((m) => `prisma/migrations/${m}/migration.sql`),
        'node_modules/@ap/crc32/package.json',
        'node_modules/@ap/crc32/index.cjs',
        'node_modules/@ap/crc32/build/Release/crc32.node',
        ...RUNTIME_ASSETS.flatMap(filesUnder),
        // Only the listed files of the packages loaded from node_modules (a listed folder whole).
        ...Object.entries(RUNTIME_PACKAGES).flatMap(([name, entries]) =>
          entries.flatMap((entry) => {
            const at = path.join(tree, 'node_modules', name, entry);
            if (!statSync(at).isDirectory()) return [path.relative(tree, at)];
            return readdirSync(at, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => path.relative(tree, path.join(e.parentPath, e.name)));
          }),
        ),
      ].sort(),
    );
    const size = await treeSize(tree);
    process.stdout.write(`runtime image files: ${(size / 2 ** 20).toFixed(1)} MiB\n`);
    expect(size).toBeLessThan(100 * 2 ** 20);
  });

  it('apply every migration to a new database, once', async () => {
    const first = await runInTree([OPERATOR_BUNDLES.migrate]);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    expect(first.stdout).toBe(`migrations applied: ${migrationNames.join(', ')} (already applied: 0)\n`);
    const second = await runInTree([OPERATOR_BUNDLES.migrate]);
    expect(second.stdout).toBe(`migrations applied: none (already applied: ${migrationNames.length})\n`);
  }, 60_000);

  it('create the first user; a bad option is a usage error', async () => {
    const ok = await runInTree([OPERATOR_BUNDLES.admin, 'users', 'create', '--email', 'first@example.com', '--password', 'a long password', '--plan', 'pro']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toEqual({ user_id: expect.any(String), api_key: expect.any(String) });
    const bad = await runInTree([OPERATOR_BUNDLES.admin, 'users', 'create', '--email', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--email must be an email address');
  }, 60_000);

  describe('running api, preparer and packer', () => {
    const children: ChildProcess[] = [];
    let origin: Origin;
    let api: string;
    let key: string;

    beforeAll(async () => {
      origin = await startOrigin();
      const created = await runInTree([OPERATOR_BUNDLES.admin, 'users', 'create', '--email', 'runner@example.com', '--plan', 'pro']);
      key = JSON.parse(created.stdout).api_key;
      const port = await freePort();
      api = `http://127.0.0.1:${port}`;
      const env = imageEnv({ PORT: String(port), PUBLIC_BASE_URL: api, HEALTH_PORT: '0', REDIS_PREFIX: `${process.env.REDIS_PREFIX}-runtime` });
      for (const name of SERVICES) children.push(spawn(process.execPath, serviceArgs(name), { cwd: tree, env, stdio: 'ignore' }));
      await until(async () => (await fetch(`${api}/readyz`)).ok, 'the api is ready', 30_000);
    }, 60_000);

    afterAll(async () => {
      await Promise.all(
        children.map((child) => (child.exitCode !== null ? null : new Promise((r) => (child.once('exit', r), child.kill('SIGTERM'))))),
      );
      await origin.close();
    }, 60_000);

    it('pack a stored job whose ZIP downloads intact', async () => {
      const bodies = [bytesOf(71, 3_000_000), bytesOf(72, 1234)];
      const files = bodies.map((body, i) => ({ url: origin.set(`/runtime-${i}.bin`, { body }) }));
      const created = await call(api, 'POST', '/jobs', { key, body: { files } });
      expect(created.status).toBe(201);
      const job = await waitForJob(api, key, created.body.job_id, ['completed', 'failed'], 60_000);
      expect(job.status).toBe('completed');
      const zip = await download(job.download_url);
      expect(zip.status).toBe(200);
      const entries = await readZip(zip.body);
      expect(entries.map((e) => [e.name, e.size, e.sha256])).toEqual(bodies.map((b, i) => [`runtime-${i}.bin`, b.length, sha256(b)]));
      // What the API reads from disk: the dashboard's built files and the reference page's assets.
      const page = await fetch(`${api}/dashboard/`);
      expect([page.status, page.headers.get('content-type')]).toEqual([200, expect.stringContaining('text/html')]);
      expect((await fetch(`${api}/docs/swagger-ui-bundle.js`)).status).toBe(200);
      for (const child of children) expect(child.exitCode).toBeNull();
    }, 90_000);
  });
});
