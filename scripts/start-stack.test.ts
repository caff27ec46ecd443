// `pnpm start` as an operator runs it (docs/operations.md#the-rules): metrics on every service's
// operations port, `pnpm smoke` against it, a crashed packer restarted, SIGTERM while a bin is
// packed (exit 0, no process left, the bin handed back), and the job finished by the next start.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createUserWithKey } from '@ap/accounts';
import { createDb, dropDatabase, ensureDatabase, migrate, type Db } from '@ap/db';
import { startGatedOrigin, type GatedOrigin } from '../test/gated-origin';
import { call, download, waitForJob } from '../test/helpers';
import { bytesOf, sha256 } from '../test/origin';
import { readZip } from '../test/zip-readers';
import { EMBEDDED_S3_CREDENTIALS, freePort, startEmbeddedS3 } from './embedded';

const root = new URL('../', import.meta.url).pathname;
const MB = 1_000_000;

interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<{ code: number | null; signal: string | null }>;
  api: string;
  health: Record<'api' | 'preparer' | 'packer', string>;
  pids: () => number[];
}

let dataDir: string;
let db: Db;
let origin: GatedOrigin;
let port: number;
const prefix = `${process.env.REDIS_PREFIX}-start`;
// A database of its own: the stack's upkeep queues every user's waiting bins, and the run's
// other suites share theirs (their bins would land on this stack's queue).
const databaseUrl = (() => {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_start`;
  return url.toString();
})();

const startEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  PORT: String(port),
  PUBLIC_BASE_URL: '',
  S3_ENDPOINT: '',
  S3_BUCKET: '',
  S3_ACCESS_KEY_ID: '',
  S3_SECRET_ACCESS_KEY: '',
  HEALTH_PORT: '',
  DATA_DIR: dataDir,
  DATABASE_URL: databaseUrl,
  REDIS_PREFIX: prefix,
  ALLOW_PRIVATE_URLS: 'true',
  LOG_LEVEL: 'info',
});

/** `pnpm start` against this run's database and Redis (its own prefix), with embedded S3 in `dataDir`. */
async function pnpmStart(): Promise<Started> {
  const child = spawn('pnpm', ['start'], { cwd: root, env: startEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 120_000;
  while (!/API at http:\/\/localhost:\d+/.test(output)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`stack did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const health = Object.fromEntries([...output.matchAll(/\[start\] (api|preparer|packer) health: (http:\/\/127\.0\.0\.1:\d+)\/healthz/g)].map((m) => [m[1], m[2]])) as Started['health'];
  expect(Object.keys(health).sort()).toEqual(['api', 'packer', 'preparer']);
  const api = `http://127.0.0.1:${port}`;
  for (const base of [api, ...Object.values(health)]) await until(() => fetch(`${base}/readyz`).then((r) => r.ok, () => false), `${base} is ready`, 60_000);
  return { child, output: () => output, exited, api, health, pids: () => [...output.matchAll(/\[start\] \w+ started \(pid (\d+)\)/g)].map((m) => Number(m[1])) };
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** One metric's value (summed over series whose labels include `labels`) from a /metrics text. */
function metric(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) {
      sum += Number(m[3]);
      found = true;
    }
  }
  return found ? sum : Number.NaN;
}

const scrape = async (base: string) => (await fetch(`${base}/metrics`)).text();

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-'));
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl);
  db = createDb(databaseUrl, 2);
  port = await freePort();
});
afterAll(async () => {
  await db.$disconnect();
  await dropDatabase(databaseUrl);
  await origin?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('pnpm start', () => {
  it('serves metrics, passes pnpm smoke, restarts a crashed packer, and drains on SIGTERM mid-bin; the next start completes the bin', async () => {
    const { apiKey } = await createUserWithKey(db, { email: `start.${Date.now()}@example.test`, plan: 'pro', overage: false });
    const bodies = { '/big.bin': bytesOf(91, 20 * MB), '/small.bin': bytesOf(92, 1 * MB) };
    origin = await startGatedOrigin(bodies, { '/big.bin': 12 * MB });

    let stack = await pnpmStart();
    try {
      // Metrics are on the operations ports only.
      expect((await fetch(`${stack.api}/metrics`)).status).toBe(404);
      const before = Object.fromEntries(await Promise.all(Object.entries(stack.health).map(async ([name, base]) => [name, await scrape(base)] as const)));
      for (const text of Object.values(before)) {
        expect(metric(text, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
        expect(metric(text, 'archive_queue_jobs', { queue: 'pack', state: 'waiting' })).toBe(0);
      }

      // pnpm smoke: a stored job, a split job, a stream download resumed with Range, a prefix job into a destination bucket.
      // The customer's bucket service is an S3 of its own: the stack's store is refused as a
      // source or destination (docs/guarantees.md#hardening-third-round-items-1-6).
      const customerDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-customer-'));
      const customer = await startEmbeddedS3(customerDir, 'smoke-customer');
      const smoke = spawn('pnpm', ['smoke', '--base-url', stack.api, '--s3-endpoint', customer.endpoint], {
        cwd: root,
        env: { ...process.env, ARCHIVE_API_KEY: apiKey, SMOKE_S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId, SMOKE_S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let smokeOut = '';
      smoke.stdout.on('data', (d) => (smokeOut += d));
      smoke.stderr.on('data', (d) => (smokeOut += d));
      const smokeExit = await new Promise<number | null>((resolve) => smoke.once('exit', (code) => resolve(code)));
      await customer.close();
      rmSync(customerDir, { recursive: true, force: true });
      expect({ smokeExit, smokeOut }).toEqual({ smokeExit: 0, smokeOut: expect.stringContaining('[smoke] all checks passed') });
      expect(smokeOut).toMatch(/\[smoke\] ok {3}prefix job into a destination bucket: job \S+, prefix of 3 objects to s3:\/\/smoke-customer\/smoke-[0-9a-f]+\/out\/prefix\.zip/);
      expect(smokeOut).not.toContain(apiKey);

      // Another checkout's `pnpm start` on the same database and Redis prefix is refused, naming this one.
      const otherDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-other-'));
      try {
        const other = spawn('pnpm', ['start'], { cwd: root, env: { ...startEnv(), PORT: String(await freePort()), DATA_DIR: otherDir }, stdio: ['ignore', 'pipe', 'pipe'] });
        let otherOut = '';
        other.stdout.on('data', (d) => (otherOut += d));
        other.stderr.on('data', (d) => (otherOut += d));
        const otherExit = await new Promise<number | null>((resolve) => other.once('exit', (code) => resolve(code)));
        expect({ otherExit, otherOut }).toEqual({ otherExit: 1, otherOut: expect.stringContaining(`is in use by another pnpm start of ${dataDir} (pid `) });
      } finally {
        rmSync(otherDir, { recursive: true, force: true });
      }

      expect((await fetch(`${stack.api}/no/such/route-1234`)).status).toBe(404);
      const after = Object.fromEntries(await Promise.all(Object.entries(stack.health).map(async ([name, base]) => [name, await scrape(base)] as const)));
      const moved = (service: string, name: string, labels: Record<string, string> = {}) => (metric(after[service]!, name, labels) || 0) - (metric(before[service]!, name, labels) || 0);
      expect(moved('api', 'archive_jobs_created_total', { mode: 'stored' })).toBe(3);
      expect(moved('api', 'archive_jobs_created_total', { mode: 'stream' })).toBe(1);
      expect(moved('api', 'archive_http_requests_total', { method: 'POST', route: '/jobs', status: '201' })).toBe(4);
      expect(moved('api', 'archive_http_requests_total', { method: 'GET', route: '/jobs/:id', status: '200' })).toBeGreaterThanOrEqual(3);
      expect(moved('api', 'archive_http_requests_total', { method: 'GET', route: '/download/:token', status: '206' })).toBe(2);
      expect(moved('api', 'archive_http_request_duration_seconds_count', { route: '/download/:token' })).toBe(6);
      // Route labels are patterns: no id or token ever becomes a label; unknown paths share one.
      expect(after.api).not.toMatch(/route="\/(jobs|download)\/[^:"]/);
      expect(moved('api', 'archive_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
      expect(after.api).not.toContain('route-1234');
      expect(moved('api', 'archive_stream_bytes_sent_total')).toBeGreaterThan(7 * MB);
      expect(moved('api', 'archive_bytes_fetched_total', { service: 'api' })).toBeGreaterThanOrEqual(7 * MB);
      expect(moved('packer', 'archive_bins_total', { result: 'completed' })).toBe(4);
      expect(moved('packer', 'archive_bin_duration_seconds_count')).toBe(4);
      expect(moved('packer', 'archive_bytes_fetched_total', { service: 'packer' })).toBeGreaterThanOrEqual(123 * MB);
      expect(moved('packer', 'archive_bytes_uploaded_total')).toBeGreaterThanOrEqual(123 * MB);
      for (const name of ['archive_fetch_errors_total', 'archive_webhook_deliveries_total']) expect(after.packer).toContain(`# TYPE ${name} counter`);

      // A packer killed with -9 is restarted, and the log says so.
      const packerPid = Number(/\[start\] packer started \(pid (\d+)\)/.exec(stack.output())![1]);
      process.kill(packerPid, 'SIGKILL');
      await until(() => /packer exited \(SIGKILL\); restarting it in \d+ s/.test(stack.output()), 'the log says the packer is restarted', 10_000);
      await until(() => (stack.output().match(/\[start\] packer started/g) ?? []).length === 2, 'a new packer started', 15_000);
      await until(() => fetch(`${stack.health.packer}/readyz`).then((r) => r.ok, () => false), 'the new packer is ready', 60_000);
      expect(alive(stack.child.pid!)).toBe(true);
      expect((await fetch(`${stack.api}/healthz`)).status).toBe(200);

      // SIGTERM while a bin is being packed (its first file held at 12 MB: one part stored).
      const created = await call(stack.api, 'POST', '/jobs', { key: apiKey, body: { files: Object.keys(bodies).map((p) => ({ url: origin.url + p })) } });
      expect(created.status).toBe(201);
      const jobId: string = created.body.job_id;
      const zip = await db.zip.findFirstOrThrow({ where: { jobId } });
      await until(async () => (await db.zipPart.count({ where: { zipId: zip.id } })) >= 1, 'a part of the bin is stored', 60_000);
      const pids = stack.pids();
      const signalled = Date.now();
      stack.child.kill('SIGTERM');
      const exit = await stack.exited;
      expect(exit).toEqual({ code: 0, signal: null });
      expect(Date.now() - signalled).toBeLessThan(30_000);
      expect(stack.output()).toContain('[start] stopped');
      expect(stack.output()).toContain('bin handed back for another packer');
      for (const pid of pids) expect(`${pid} alive: ${alive(pid)}`).toBe(`${pid} alive: false`);
      for (const base of [stack.api, ...Object.values(stack.health)]) expect(await fetch(`${base}/healthz`).then(() => 'answers', () => 'gone')).toBe('gone');
      const handedBack = await db.zip.findUniqueOrThrow({ where: { id: zip.id } });
      expect(handedBack).toMatchObject({ status: 'processing', leaseOwner: null });
      expect(await db.zipPart.count({ where: { zipId: zip.id } })).toBeGreaterThanOrEqual(1);
      // No SDK notice at start, no secret anywhere in the output.
      expect(stack.output()).not.toMatch(/NodeVersionSupportWarning|DOWNLOAD_TOKEN_SECRET|SESSION_SECRET|SECRETS_KEY/);

      // The next start finishes the bin within 30 s.
      origin.open();
      stack = await pnpmStart();
      const job = await waitForJob(stack.api, apiKey, jobId, ['completed', 'failed'], 30_000);
      expect(job.status).toBe('completed');
      const entries = await readZip((await download(job.download_url)).body);
      expect(entries).toEqual(Object.entries(bodies).map(([p, b]) => ({ name: p.slice(1), size: b.length, sha256: sha256(b) })));
    } finally {
      if (stack.child.exitCode === null && stack.child.signalCode === null) {
        stack.child.kill('SIGTERM');
        const exit = await stack.exited;
        expect(exit).toEqual({ code: 0, signal: null });
      }
      for (const pid of stack.pids()) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }, 420_000);
});
