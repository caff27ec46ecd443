// The operator interface from decisions.md, run as an operator would: through pnpm.
import { describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '@ap/db';
import { hashApiKey } from '@ap/tokens';
import { freePort } from './embedded';

const root = new URL('../', import.meta.url).pathname;

function admin(args: string[]) {
  return spawnSync('pnpm', ['admin', ...args], { cwd: root, env: process.env, encoding: 'utf8' });
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

  it('never gives overage to the free plan, and rejects bad input on stderr with exit 2', () => {
    const free = admin(['users', 'create', '--email', `free.${Date.now()}@example.test`, '--overage']);
    expect(free.status).toBe(0);
    const dup = JSON.parse(free.stdout);
    expect(dup.user_id).toBeDefined();
    for (const args of [['users', 'create'], ['users', 'create', '--email', 'nope'], ['users', 'create', '--email', 'a@b.test', '--plan', 'gold'], ['users', 'remove']]) {
      const out = admin(args);
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

describe('pnpm start', () => {
  it('starts api, preparer and packer, serves health, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const child = spawn('pnpm', ['start'], {
      cwd: root,
      env: { ...process.env, PORT: String(port), PUBLIC_BASE_URL: '', S3_ENDPOINT: '', DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'ap-start-')) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    try {
      const deadline = Date.now() + 60_000;
      while (!/API at http:\/\/localhost:\d+/.test(output)) {
        if (Date.now() > deadline || child.exitCode !== null) throw new Error(`stack did not start:\n${output}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(output).toContain(`API at http://localhost:${port}`);
      expect(output).toMatch(/embedded S3 \(s3rver\) at http:\/\/127\.0\.0\.1:\d+/);
      const workerPorts = [...output.matchAll(/(preparer|packer) health: (http:\/\/127\.0\.0\.1:\d+)\/healthz/g)].map((m) => m[2]);
      expect(workerPorts).toHaveLength(2);
      // Wait until all three answer /readyz.
      for (const base of [`http://127.0.0.1:${port}`, ...workerPorts]) {
        let ready = false;
        while (!ready && Date.now() < deadline) {
          ready = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
          if (!ready) await new Promise((r) => setTimeout(r, 250));
        }
        expect(`${base} ready: ${ready}`).toBe(`${base} ready: true`);
      }
    } finally {
      child.kill('SIGTERM');
      const exit = await new Promise<{ code: number | null; signal: string | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
      // pnpm forwards the signal and then ends by it (or with 0 once its script did).
      expect(exit.code === 0 || exit.signal === 'SIGTERM').toBe(true);
    }
    // Every service shut down on the signal: none of them answers any more.
    await new Promise((r) => setTimeout(r, 3000));
    const bases = [`http://127.0.0.1:${port}`, ...[...output.matchAll(/(?:preparer|packer) health: (http:\/\/127\.0\.0\.1:\d+)\/healthz/g)].map((m) => m[1])];
    for (const base of bases) expect(await fetch(`${base}/healthz`).then(() => 'answers', () => 'gone')).toBe('gone');
    expect(output).not.toMatch(/DOWNLOAD_TOKEN_SECRET|SESSION_SECRET/);
  }, 90_000);

  it('fails fast with one line per bad variable', () => {
    const out = spawnSync('pnpm', ['start'], { cwd: root, env: { ...process.env, PORT: 'x', LOG_LEVEL: 'loud' }, encoding: 'utf8' });
    expect(out.status).toBe(1);
    expect(out.stderr).toContain('PORT must be a port number');
    expect(out.stderr).toContain('LOG_LEVEL must be one of');
  }, 60_000);
});
