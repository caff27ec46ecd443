// A worker's own errors (BullMQ's lock renewals after a Redis flush) go to the JSON log, not to
// stderr as bare stack traces.
import { describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ROOT } from '../scripts/services';

function run(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('queue worker errors', () => {
  it('after a Redis flush, "could not renew lock" is a JSON log line, with nothing on stderr', async () => {
    const prefix = `${process.env.REDIS_PREFIX ?? 'ap-test'}-flush-${randomBytes(4).toString('hex')}`;
    const { code, stdout, stderr } = await run('test/fixtures/flushed-worker.ts', { ...process.env, REDIS_PREFIX: prefix, NODE_OPTIONS: '' });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const lines = stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { level: number; msg: string; queue?: string; err?: { message: string } });
    const lockLost = lines.filter((l) => l.err?.message.startsWith('could not renew lock for job'));
    expect(lockLost.length).toBeGreaterThanOrEqual(1);
    expect(lockLost[0]).toMatchObject({ level: 40, queue: 'pack', msg: 'queue worker lost a job lock; the job will be delivered again' });
  }, 30_000);
});
