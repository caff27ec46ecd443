// The operator interface (docs/operations.md#the-dev-command), run as an operator would: through pnpm.
import { describe, expect, it } from '@jest/globals';
import { execFile, spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createUserWithKey } from '@ap/accounts';
import { createDb } from '@ap/db';
import { hashApiKey } from '@ap/tokens';
import { startGatedOrigin } from '../test/gated-origin';
import { call, waitForJob } from '../test/helpers';
import { bytesOf, sha256 } from '../test/origin';
import { readZip } from '../test/zip-readers';
import { freePort } from './embedded';

const root = new URL('../', import.meta.url).pathname;

function admin(args: string[]) {
  return spawnSync('pnpm', ['admin', ...args], { cwd: root, env: process.env, encoding: 'utf8' });
}

/** `admin` without blocking, so independent runs go side by side. */
function adminAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile('pnpm', ['admin', ...args], { cwd: root, env: process.env, encoding: 'utf8' }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ status: err ? (err.code as number) : 0, stdout, stderr });
    });
  });
}

describe('pnpm admin users create', () => {
  it('prints exactly one JSON line with user_id and api_key, and stores the user', async () => {
    const email = `operator.${Date.now()}@example.test`;
    const out = admin(['users', 'create', '--email', email, '--password', 'longenough', '--plan', 'pro', '--overage']);
    expect(out.status).toBe(0);
    const lines = out.stdout.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    const parsed = JSON.parse(lines[0]!);
    expect(Object.keys(parsed).sort()).toEqual(['api_key', 'user_id']);
    expect(parsed.api_key).toMatch(/^azk_/);
    const db = createDb(process.env.DATABASE_URL!, 1);
    try {
      const user = await db.user.findUniqueOrThrow({ where: { id: parsed.user_id }, include: { apiKeys: true } });
      expect(user).toMatchObject({ email, plan: 'pro', overageEnabled: true });
      expect(user.passwordHash).toMatch(/^\$2[aby]\$/);
      expect(Buffer.compare(Buffer.from(user.apiKeys[0]!.keyHash), hashApiKey(parsed.api_key))).toBe(0);
    } finally {
      await db.$disconnect();
    }
  });

  it('never gives overage to the free plan, and rejects bad input on stderr with exit 2', async () => {
    const bad = [['users', 'create'], ['users', 'create', '--email', 'nope'], ['users', 'create', '--email', 'a@b.test', '--plan', 'gold'], ['users', 'remove']];
    const [free, ...refused] = await Promise.all([adminAsync(['users', 'create', '--email', `free.${Date.now()}@example.test`, '--overage']), ...bad.map(adminAsync)]);
    expect(free!.status).toBe(0);
    const dup = JSON.parse(free!.stdout);
    expect(dup.user_id).toBeDefined();
    for (const out of refused) {
      expect(out.status).toBe(2);
      expect(out.stdout).toBe('');
      expect(out.stderr).toMatch(/usage|must/);
    }
  });

  it('refuses a second user with the same email', () => {
    const email = `twice.${Date.now()}@example.test`;
    expect(admin(['users', 'create', '--email', email]).status).toBe(0);
    const again = admin(['users', 'create', '--email', email]);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain('already exists');
  });
});

/**
 * `pnpm start` in a terminal (util-linux `script` gives it one), so Ctrl-C is what a user presses.
 * `script` runs its command through $SHELL without job control; `exec` makes pnpm the terminal's
 * process, as under an interactive shell. Without it dash (CI's /bin/sh) dies of the Ctrl-C itself
 * and `script` reports 130 while the stack drains fine. SHELL is pinned so every machine runs this.
 */
function startInTerminal(env: NodeJS.ProcessEnv): { child: ChildProcessWithoutNullStreams; output: () => string; ctrlC: () => void; exited: Promise<number | null> } {
  const child = spawn('script', ['-qefc', 'exec pnpm start', '/dev/null'], { cwd: root, env: { ...env, SHELL: '/bin/sh' }, stdio: 'pipe' });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, ctrlC: () => child.stdin.write('\x03'), exited };
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const answers = (url: string) => fetch(url).then(() => true, () => false);
const pidsOf = (output: string) => [...output.matchAll(/\[start\] \w+ started \(pid (\d+)\)/g)].map((m) => Number(m[1]));
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('pnpm smoke', () => {
  it('takes the key as --api-key (docs/operations.md#smoke-test) or from ARCHIVE_API_KEY, says why a stack does not answer, and exits 2 without a key', async () => {
    const smoke = (args: string[], env: NodeJS.ProcessEnv) => spawnSync('pnpm', ['smoke', ...args], { cwd: root, env: { ...process.env, ARCHIVE_API_KEY: '', ...env }, encoding: 'utf8' });
    const closed = `http://127.0.0.1:${await freePort()}`;
    const nowhere = ['--base-url', closed, '--timeout', '5'];
    for (const out of [smoke([...nowhere, '--api-key', 'azk_flag'], {}), smoke(nowhere, { ARCHIVE_API_KEY: 'azk_env' })]) {
      expect(out.status).toBe(1);
      expect(out.stdout).toContain(`FAIL health: GET ${closed}/readyz got no answer: ECONNREFUSED`);
    }
    const keyless = smoke(nowhere, {});
    expect(keyless.status).toBe(2);
    expect(keyless.stderr).toContain('usage: ARCHIVE_API_KEY=KEY pnpm smoke --base-url URL');
  }, 60_000);
});

describe('pnpm start', () => {
  it('Ctrl-C drains: a download in flight finishes, nothing new is accepted, exit 0; a second Ctrl-C kills at once', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-'));
    const body = bytesOf(101, 3_000_000);
    const origin = await startGatedOrigin({ '/held.bin': body }, { '/held.bin': 1_000_000 });
    const db = createDb(process.env.DATABASE_URL!, 1);
    const port = await freePort();
    const env = { ...process.env, PORT: String(port), PUBLIC_BASE_URL: '', S3_ENDPOINT: '', S3_BUCKET: '', S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '', DATA_DIR: dataDir, REDIS_PREFIX: `${process.env.REDIS_PREFIX}-ctrlc`, ALLOW_PRIVATE_URLS: 'true', LOG_LEVEL: 'warn' };
    const api = `http://127.0.0.1:${port}`;
    const { apiKey } = await createUserWithKey(db, { email: `ctrlc.${Date.now()}@example.test`, plan: 'pro', overage: false });
    let stack = startInTerminal(env);
    try {
      await until(() => /API at http:\/\/localhost:\d+/.test(stack.output()), 'the stack started', 120_000);
      await until(() => fetch(`${api}/readyz`).then((r) => r.ok, () => false), 'the API is ready', 60_000);
      const healthPorts = [...stack.output().matchAll(/(?:api|preparer|packer) health: (http:\/\/127\.0\.0\.1:\d+)\/healthz/g)].map((m) => m[1]!);
      expect(healthPorts).toHaveLength(3);
      const created = await call(api, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: `${origin.url}/held.bin` }], mode: 'stream' } });
      expect(created.status).toBe(201);
      const job = await waitForJob(api, apiKey, created.body.job_id, ['completed', 'failed'], 60_000);
      expect(job.status).toBe('completed');

      // A download in flight: its origin holds the body after 1 MB.
      const inFlight = fetch(job.download_url).then(async (res) => Buffer.from(await res.arrayBuffer()));
      await until(() => (origin.served.get('/held.bin') ?? 0) >= 1_000_000, 'the download is under way', 30_000);

      const pids = pidsOf(stack.output());
      stack.ctrlC();
      await until(() => stack.output().includes('[start] SIGINT: stopping the services'), 'the stack says it stops', 10_000);
      // One signal path: each service is told once, nobody exits at once.
      await until(async () => !(await answers(`${api}/healthz`)), 'the API stops accepting connections', 10_000);
      expect(stack.output()).not.toMatch(/exited \(|SIGINT again/);
      // While it drains, its operations port says it is not ready.
      const apiHealth = /api health: (http:\/\/127\.0\.0\.1:\d+)\/healthz/.exec(stack.output())![1];
      const readiness = await fetch(`${apiHealth}/readyz`);
      expect([readiness.status, await readiness.json()]).toEqual([503, { success: false, status: 'unavailable', failing: ['draining'] }]);
      origin.open();
      const bytes = await inFlight;
      expect(bytes.length).toBe(job.zips[0].size);
      expect(await readZip(bytes)).toEqual([{ name: 'held.bin', size: body.length, sha256: sha256(body) }]);
      expect(await stack.exited).toBe(0);
      expect(stack.output()).toContain('[start] stopped');
      for (const pid of pids) expect(`${pid} alive: ${alive(pid)}`).toBe(`${pid} alive: false`);
      for (const base of healthPorts) expect(await answers(`${base}/healthz`)).toBe(false);

      // Again, and this time a second Ctrl-C while the API waits on a held download.
      const origin2 = await startGatedOrigin({ '/held.bin': body }, { '/held.bin': 1_000_000 });
      try {
        stack = startInTerminal(env);
        await until(() => /API at http:\/\/localhost:\d+/.test(stack.output()), 'the stack started again', 120_000);
        await until(() => fetch(`${api}/readyz`).then((r) => r.ok, () => false), 'the API is ready again', 60_000);
        const again = await call(api, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: `${origin2.url}/held.bin` }], mode: 'stream' } });
        const job2 = await waitForJob(api, apiKey, again.body.job_id, ['completed', 'failed'], 60_000);
        const held = fetch(job2.download_url).then(async (res) => Buffer.from(await res.arrayBuffer())).catch((err: Error) => err);
        await until(() => (origin2.served.get('/held.bin') ?? 0) >= 1_000_000, 'the second download is under way', 30_000);
        const pids2 = pidsOf(stack.output());
        stack.ctrlC();
        await until(() => stack.output().includes('[start] SIGINT: stopping the services'), 'the stack says it stops', 10_000);
        await new Promise((r) => setTimeout(r, 1500));
        const forced = Date.now();
        stack.ctrlC();
        expect(await stack.exited).toBe(1);
        expect(Date.now() - forced).toBeLessThan(5_000);
        // pnpm answers a second Ctrl-C by sending its script SIGTERM, racing the terminal's SIGINT.
        expect(stack.output()).toMatch(/(SIGINT|SIGTERM) again: killing the services/);
        for (const pid of pids2) expect(`${pid} alive: ${alive(pid)}`).toBe(`${pid} alive: false`);
        // The held download was cut, as the user asked.
        const cut = await held;
        expect(Buffer.isBuffer(cut)).toBe(false);
        expect((cut as Error).message).toMatch(/\S/);
      } finally {
        await origin2.close();
      }
    } finally {
      if (stack.child.exitCode === null) {
        stack.child.kill('SIGKILL');
        for (const pid of pidsOf(stack.output())) if (alive(pid)) process.kill(pid, 'SIGKILL');
      }
      await origin.close();
      await db.$disconnect();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 300_000);

  it('fails fast with one line per bad variable', () => {
    const out = spawnSync('pnpm', ['start'], { cwd: root, env: { ...process.env, PORT: 'x', LOG_LEVEL: 'loud' }, encoding: 'utf8' });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('PORT must be a port number');
    expect(out.stderr).toContain('LOG_LEVEL must be one of');
  }, 60_000);

  it('says clearly that DATABASE_URL does not answer, without a stack trace, and keeps .data/runtime.json', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-'));
    try {
      const runtimeFile = path.join(dataDir, 'runtime.json');
      writeFileSync(runtimeFile, JSON.stringify({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/known_good' }));
      const unreachable = `postgresql://postgres:hunter2secret@127.0.0.1:${1}/nowhere`;
      const out = spawnSync('pnpm', ['start'], { cwd: root, env: { ...process.env, DATABASE_URL: unreachable, DATA_DIR: dataDir, PORT: '0' }, encoding: 'utf8' });
      expect(out.status).toBe(1);
      expect(out.stderr).toContain('PostgreSQL does not answer at DATABASE_URL (postgresql://postgres:***@127.0.0.1:1/nowhere): ECONNREFUSED');
      expect(out.stderr + out.stdout).not.toMatch(/\n\s+at \S+ \(|hunter2secret/);
      expect(JSON.parse(readFileSync(runtimeFile, 'utf8'))).toEqual({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/known_good' });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
