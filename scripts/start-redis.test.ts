// `pnpm start` where no Redis answers (docs/operations.md#pnpm-start): a private redis-server
// under .data/ serves the stack and ends with it; without the binary, a message says what to do.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { dropDatabase } from '@ap/db';
import { freePort } from './embedded';

const root = new URL('../', import.meta.url).pathname;
let dataDir: string;
const started: ChildProcess[] = [];
const databaseUrl = (() => {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_redis`;
  return url.toString();
})();

function pnpmStart(env: NodeJS.ProcessEnv) {
  const child = spawn('pnpm', ['start'], {
    cwd: root,
    env: { ...process.env, PUBLIC_BASE_URL: '', S3_ENDPOINT: '', S3_BUCKET: '', S3_ACCESS_KEY_ID: '', S3_SECRET_ACCESS_KEY: '', HEALTH_PORT: '', DATA_DIR: dataDir, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  started.push(child);
  return { child, output: () => output, exited };
}

const answers = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => resolve(true));
    socket.once('error', () => resolve(false));
  });

beforeAll(() => {
  dataDir = mkdtempSync(path.join(os.tmpdir(), 'ap-start-redis-'));
});

afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  rmSync(dataDir, { recursive: true, force: true });
  await dropDatabase(databaseUrl);
});

describe('pnpm start without a Redis', () => {
  it('runs a private redis-server on the REDIS_URL port, ready for the services, and stops it with the stack', async () => {
    const [port, redisPort] = [await freePort(), await freePort()];
    expect(await answers(redisPort)).toBe(false);
    const stack = pnpmStart({ PORT: String(port), REDIS_URL: `redis://127.0.0.1:${redisPort}` });
    const deadline = Date.now() + 120_000;
    while (!/API at http:\/\/localhost:\d+/.test(stack.output())) {
      if (Date.now() > deadline || stack.child.exitCode !== null) throw new Error(`stack did not start:\n${stack.output()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(stack.output()).toContain(`private redis-server at redis://127.0.0.1:${redisPort}, working in .data/redis`);
    // The API's readiness includes Redis.
    let ready = false;
    while (!ready && Date.now() < deadline) {
      ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
      if (!ready) await new Promise((r) => setTimeout(r, 200));
    }
    expect(ready).toBe(true);
    stack.child.kill('SIGTERM');
    expect(await stack.exited).toBe(0);
    expect(await answers(redisPort)).toBe(false);
  }, 180_000);

  it('says what to install when no redis-server is on PATH, and exits 1', async () => {
    const bin = path.join(dataDir, 'bin');
    mkdirSync(bin);
    for (const tool of ['node', 'pnpm', 'sh', 'bash']) symlinkSync(execFileSync('bash', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), path.join(bin, tool));
    const stack = pnpmStart({ PORT: String(await freePort()), REDIS_URL: `redis://127.0.0.1:${await freePort()}`, PATH: bin });
    expect(await stack.exited).toBe(1);
    expect(stack.output()).toMatch(/Redis does not answer at redis:\/\/127\.0\.0\.1:\d+ and no redis-server is installed \(\.\/dev start installs it as root\)/);
  }, 120_000);
});
