// A stored AES-256 bin whose packer is killed mid-entry, and whose origin then changes bytes
// already in the stored parts without changing its validators: the resume finds the change
// (the digests of the blocks the first attempt encrypted) and packs the bin from its start,
// never completing an archive whose MAC covers other bytes than its stored parts hold
// (docs/archive-options.md#changed-origins).
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { readAesZip } from '../packages/zip/src/testing-aes';
import { spawnService } from '../scripts/services';
import { call, createUser, download, until, waitForJob } from './helpers';
import { bytesOf, sha256 } from './origin';
import { startGatedOrigin } from './gated-origin';
import { RESCUE_STALLED_CHECK_MS, startStack, type Stack } from './stack';

const MB = 1_000_000;
const PASSWORD = 'stored-resume-password';
let key: string;
let noWorkers: Stack;

beforeAll(async () => {
  noWorkers = await startStack({}, { workers: false });
  key = (await createUser(noWorkers.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await noWorkers.close();
});

it('a resumed AES bin whose cut entry changed in its stored prefix is packed again from its start: a valid ZIP of the new bytes', async () => {
  const bodies = [bytesOf(81, 3 * MB), bytesOf(82, 16 * MB)];
  // The second body waits at 14 MB: the parts stored before it hold its first ~7 MB.
  const gated = await startGatedOrigin({ '/0.bin': bodies[0]!, '/1.bin': bodies[1]! }, { '/1.bin': 14 * MB });
  const child = spawnService('packer', { ...process.env, PUBLIC_BASE_URL: noWorkers.url, REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '2000' }, { stdio: 'ignore' });
  try {
    const res = await call(noWorkers.url, 'POST', '/jobs', { key, body: { files: [{ url: `${gated.url}/0.bin` }, { url: `${gated.url}/1.bin` }], encryption: { method: 'aes-256', password: PASSWORD } } });
    expect(res.status).toBe(201);
    const jobId = res.body.job_id as string;
    const zip = await noWorkers.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    await until(() => (gated.served.get('/1.bin') ?? 0) >= 14 * MB, 'the packer reached the held body');
    await until(async () => (await noWorkers.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 2, 'two parts stored');
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    // Same length, same ETag: only the bytes differ, inside the stored parts.
    bodies[1]!.fill(0x5a, 100, 200);
    gated.open();

    const rescue = await startStack({ WORKER_LOCK_MS: '2000', REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX }, { stalledCheckMs: RESCUE_STALLED_CHECK_MS });
    try {
      const job = await waitForJob(rescue.url, key, jobId, ['completed', 'failed'], 90_000);
      expect(job.status).toBe('completed');
      const bytes = (await download(job.zips[0].download_url)).body;
      // Every MAC holds (a resume over the stored parts would have an entry whose MAC does not).
      expect(readAesZip(bytes, PASSWORD).map((e) => sha256(e.data))).toEqual(bodies.map(sha256));
    } finally {
      await rescue.close();
    }
  } finally {
    child.kill('SIGKILL');
    await gated.close();
  }
}, 120_000);
