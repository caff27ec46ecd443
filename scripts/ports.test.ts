// A port another process holds: every service, and `pnpm start` before it starts anything,
// exits non-zero saying "port N is in use" instead of running without serving.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import { spawnService, SERVICES, type ServiceName } from './services';

const root = new URL('../', import.meta.url).pathname;
let holder: net.Server;
let taken: number;

beforeAll(async () => {
  holder = net.createServer();
  await new Promise<void>((resolve) => holder.listen(0, () => resolve()));
  taken = (holder.address() as net.AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => holder.close(() => resolve())));

/** Runs a built service; resolves with its exit code and stderr, or null if it still runs after 20 s. */
function runService(name: ServiceName, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string } | null> {
  const child = spawnService(name, { ...process.env, ...env }, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe('a port in use', () => {
  it('ends the API when its public port is taken', async () => {
    const out = await runService('api', { PORT: String(taken), HEALTH_PORT: '0' });
    expect(out).not.toBeNull();
    expect(out!.code).toBe(1);
    expect(out!.stderr).toContain(`port ${taken} is in use`);
  }, 30_000);

  it('ends every service when its operations port is taken', async () => {
    const outs = await Promise.all(SERVICES.map((name) => runService(name, { PORT: '0', HEALTH_PORT: String(taken) })));
    for (const out of outs) {
      expect(out).not.toBeNull();
      expect(out!.code).toBe(1);
      expect(out!.stderr).toContain(`port ${taken} is in use`);
    }
  }, 30_000);

  it('stops `pnpm start` before it builds or starts anything, for PORT and for the operations ports', () => {
    const start = (env: NodeJS.ProcessEnv) => spawnSync('pnpm', ['start'], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 });
    const api = start({ PORT: String(taken), HEALTH_PORT: '' });
    expect(api.status).toBe(1);
    expect(api.stderr).toContain(`port ${taken} is in use (PORT, the API)`);
    expect(api.stdout).not.toContain('started (pid');
    // HEALTH_PORT=N gives the preparer N+1: hold that one.
    const ops = start({ PORT: '0', HEALTH_PORT: String(taken - 1) });
    expect(ops.status).toBe(1);
    expect(ops.stderr).toContain(`port ${taken} is in use (HEALTH_PORT + 1, the preparer's operations port)`);
    expect(ops.stdout).not.toContain('started (pid');
  }, 60_000);
});
