// Hardening 3, item 12 (docs/guarantees.md#hardening-third-round-items-7-12): AES key
// derivations wait in one queue per user and are served in turns, on workers of their own.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { pbkdf2Sync } from 'node:crypto';
import { closeSync, constants, mkdtempSync, openSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import path from 'node:path';
import { AesKeyStore } from './aes-keys';
import { KeyDerivationPool } from './key-pool';

const salt = (i: number) => Buffer.from(`salt-${String(i).padStart(10, '0')}`);

describe('hardening 3, item 12: encrypted downloads starve nobody', () => {
  it("derives one user's key after at most a few of another user's 300 queued ones", async () => {
    const store = new AesKeyStore();
    const tag = store.passwordTag('pw');
    const finished: string[] = [];
    const heavy = Array.from({ length: 300 }, (_, i) => store.ready(tag, 'pw', salt(i), 'user-a').then(() => finished.push('a')));
    const light = store.ready(tag, 'pw', salt(1_000_000), 'user-b').then(() => finished.push('b'));
    await Promise.all([...heavy, light]);
    // In turns: user B's key comes after at most one of A's per worker (plus the one each worker had started).
    expect(finished.indexOf('b')).toBeLessThanOrEqual(2 * Math.max(1, Math.floor(availableParallelism() / 2)));
    expect(finished).toHaveLength(301);
  });

  it("needs none of libuv's threads, which logins (bcrypt) and file I/O use: keys are derived while all of them are held", async () => {
    // Each open of a FIFO with no writer holds one libuv thread until a writer comes.
    const dir = mkdtempSync(path.join(tmpdir(), 'ap-fifo-'));
    const threads = Number(process.env.UV_THREADPOOL_SIZE ?? 4);
    const fifos = Array.from({ length: threads }, (_, i) => path.join(dir, `f${i}`));
    for (const fifo of fifos) execFileSync('mkfifo', [fifo]);
    const held = fifos.map((fifo) => open(fifo, 'r'));
    try {
      const store = new AesKeyStore();
      const tag = store.passwordTag('pw');
      const derived = Promise.all(Array.from({ length: 20 }, (_, i) => store.ready(tag, 'pw', salt(2_000_000 + i), 'user-c'))).then(() => 'derived');
      const waited = new Promise((resolve) => setTimeout(() => resolve('stuck behind the thread pool'), 5_000).unref());
      expect(await Promise.race([derived, waited])).toBe('derived');
    } finally {
      for (const fifo of fifos) closeSync(openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK));
      for (const h of held) await (await h).close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('derives the same keys as PBKDF2 on the spot, on a bounded number of worker threads', async () => {
    const pool = new KeyDerivationPool(2);
    const tasks = Array.from({ length: 20 }, (_, i) => ({ password: `p${i}`, salt: salt(i), iterations: 1000, bytes: 66 }));
    const keys = await Promise.all(tasks.map((t, i) => pool.derive(`u${i % 3}`, t)));
    keys.forEach((key, i) => expect(key.equals(pbkdf2Sync(tasks[i]!.password, tasks[i]!.salt, 1000, 66, 'sha1'))).toBe(true));
    expect(pool.backlog).toBe(0);
  });
});
