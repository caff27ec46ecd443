// Fair share under load (docs/fair-share.md#fair-share-under-load): packers take bins round-robin by user, running bins per
// user are capped by plan, a killed packer frees its slot, and a Redis loss keeps both.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Redis } from 'ioredis';
import { reconcile } from '@ap/jobs';
import { createPackerProcessor } from '@ap/packer';
import { createWorker, type Worker } from '@ap/queue';
import { spawnService } from '../scripts/services';
import { startGatedOrigin, type GatedOrigin } from './gated-origin';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf } from './origin';
import { startStack, type Stack } from './stack';
import { endChild } from './private-redis';

const MB = 1_000_000;
let stack: Stack;
let origin: GatedOrigin;

beforeAll(async () => {
  // No workers of its own: each test starts the packers it needs, after queueing.
  stack = await startStack({ WORKER_LOCK_MS: '3000' }, { workers: false });
  origin = await startGatedOrigin({ '/small.bin': bytesOf(1, 2000), '/held.bin': bytesOf(2, 200_000), '/big.bin': bytesOf(3, 9 * MB), '/tail.bin': bytesOf(4, 2 * MB) }, { '/held.bin': 100_000, '/tail.bin': MB });
});
afterAll(async () => {
  await origin.close();
  await stack.close();
});

function packer(concurrency: number): Worker {
  const { ctx } = stack;
  return createWorker('pack', createPackerProcessor(ctx, { queues: ctx.queues }), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency, lockDuration: 3000, stalledInterval: 1000, log: ctx.log });
}

async function createJob(key: string, path: string): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: origin.url + path }] } });
  expect(res.status).toBe(201);
  return res.body.job_id;
}


/** Bins of these jobs in the order they completed, as the users who own them. */
async function completionOrder(jobs: Map<string, string>): Promise<string[]> {
  const zips = await stack.ctx.db.zip.findMany({ where: { jobId: { in: [...jobs.keys()] }, status: 'completed' }, orderBy: { completedAt: 'asc' }, select: { jobId: true } });
  return zips.map((z) => jobs.get(z.jobId)!);
}

/** Samples how many bins of `userId` are processing at once until `done` settles; returns the most seen. */
function watchRunning(userId: string) {
  let most = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const running = await stack.ctx.db.zip.count({ where: { status: 'processing', job: { userId } } });
      most = Math.max(most, running);
      await new Promise((r) => setTimeout(r, 10));
    }
  })();
  return async () => {
    stopped = true;
    await loop;
    return most;
  };
}

describe('fair share of packers', () => {
  it('serves three users round-robin, whatever order their bins were queued in', async () => {
    const users = await Promise.all(['a', 'b', 'c'].map(async (name) => ({ name, ...(await createUser(stack.ctx, { plan: 'pro' })) })));
    const jobs = new Map<string, string>();
    // A queues all three of its jobs first, then B, then C: first-in-first-out would run A's three first.
    for (const user of users) for (let i = 0; i < 3; i++) jobs.set(await createJob(user.apiKey, '/small.bin'), user.name);
    const worker = packer(1);
    try {
      for (const jobId of jobs.keys()) await waitForJob(stack.url, users.find((u) => u.name === jobs.get(jobId))!.apiKey, jobId, ['completed'], 30_000);
    } finally {
      await worker.close();
    }
    expect(await completionOrder(jobs)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
  }, 60_000);

  it('never runs two bins of a free user at once, and its waiting bins hold no packer', async () => {
    origin.open(); // no holding here: the bins just take a moment each
    const free = await createUser(stack.ctx, { plan: 'free' });
    const other = await createUser(stack.ctx, { plan: 'free' });
    const freeJobs = [];
    for (let i = 0; i < 4; i++) freeJobs.push(await createJob(free.apiKey, '/held.bin'));
    // Only one of the four is on the queue: the others wait in Postgres for the user's slot.
    expect(await stack.ctx.db.zip.count({ where: { jobId: { in: freeJobs }, admittedAt: { not: null } } })).toBe(1);
    const otherJob = await createJob(other.apiKey, '/small.bin');
    const stop = watchRunning(free.userId);
    const worker = packer(4);
    try {
      // The other user's bin is not stuck behind the free user's three waiting bins.
      await waitForJob(stack.url, other.apiKey, otherJob, ['completed'], 30_000);
      for (const jobId of freeJobs) expect((await waitForJob(stack.url, free.apiKey, jobId, ['completed', 'failed'], 30_000)).status).toBe('completed');
    } finally {
      await worker.close();
    }
    expect(await stop()).toBe(1);
  }, 60_000);
});

describe('a packer killed while running a capped user', () => {
  it('gives the slot back: the bin resumes from its recorded part, then the next bin runs', async () => {
    const gated = await startGatedOrigin({ '/big.bin': bytesOf(3, 9 * MB), '/tail.bin': bytesOf(4, 2 * MB) }, { '/tail.bin': MB });
    const free = await createUser(stack.ctx, { plan: 'free' });
    const child = spawnService('packer', { ...process.env, PUBLIC_BASE_URL: stack.url, REDIS_PREFIX: stack.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '3000' }, { stdio: 'ignore' });
    let worker: Worker | undefined;
    try {
      const files = [{ url: `${gated.url}/big.bin` }, { url: `${gated.url}/tail.bin` }];
      const first = (await call(stack.url, 'POST', '/jobs', { key: free.apiKey, body: { files } })).body.job_id as string;
      const second = (await call(stack.url, 'POST', '/jobs', { key: free.apiKey, body: { files: [{ url: `${gated.url}/big.bin` }] } })).body.job_id as string;
      const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId: first } });
      await until(async () => (await stack.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 1, 'the first part is stored');
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
      const fetchedBefore = gated.served.get('/big.bin') ?? 0;
      gated.open();

      const stop = watchRunning(free.userId);
      worker = packer(2);
      expect((await waitForJob(stack.url, free.apiKey, first, ['completed', 'failed'], 30_000)).status).toBe('completed');
      expect((await waitForJob(stack.url, free.apiKey, second, ['completed', 'failed'], 30_000)).status).toBe('completed');
      expect(await stop()).toBe(1);
      // Resumed after the recorded 8 MiB part: only the rest of the first file was fetched again
      // for this bin (the second job's bin fetched it whole).
      const refetched = (gated.served.get('/big.bin') ?? 0) - fetchedBefore - 9 * MB;
      expect(refetched).toBeLessThan(2 * MB);
      const bins = await stack.ctx.db.zip.findMany({ where: { jobId: { in: [first, second] } }, orderBy: { completedAt: 'asc' } });
      expect(bins.map((b) => b.jobId)).toEqual([first, second]);
    } finally {
      await endChild(child, 'SIGKILL');
      await worker?.close();
      await gated.close();
    }
  }, 60_000);
});

describe('Redis losing its data', () => {
  it('loses no bin: upkeep queues the admitted bins again within the caps, ranked by user', async () => {
    const free = await createUser(stack.ctx, { plan: 'free' });
    const pro = await createUser(stack.ctx, { plan: 'pro' });
    const jobs = new Map<string, string>();
    for (let i = 0; i < 3; i++) jobs.set(await createJob(free.apiKey, '/small.bin'), 'free');
    for (let i = 0; i < 2; i++) jobs.set(await createJob(pro.apiKey, '/small.bin'), 'pro');

    const redis = new Redis(process.env.REDIS_URL!);
    const keys = await redis.keys(`${stack.ctx.config.REDIS_PREFIX}:*`);
    expect(keys.length).toBeGreaterThan(0);
    await redis.del(...keys);
    await redis.quit();
    expect(await stack.ctx.queues.pack.getJobCountByTypes('waiting', 'prioritized')).toBe(0);

    const report = await reconcile(stack.ctx.db, stack.ctx.queues, new Date(), { jobIds: [...jobs.keys()] });
    // The free user's one admitted bin and the pro user's two: no more than the caps.
    expect(report.packs).toBe(3);
    const queued = await stack.ctx.queues.pack.getJobs(['prioritized', 'waiting']);
    expect(queued.map((m) => jobs.get(m.data.jobId)).sort()).toEqual(['free', 'pro', 'pro']);

    const stop = watchRunning(free.userId);
    const worker = packer(1);
    try {
      for (const [jobId, who] of jobs) await waitForJob(stack.url, who === 'free' ? free.apiKey : pro.apiKey, jobId, ['completed'], 30_000);
    } finally {
      await worker.close();
    }
    expect(await stop()).toBe(1);
    // Round-robin again: the first two bins packed were one of each user's.
    expect((await completionOrder(jobs)).slice(0, 2).sort()).toEqual(['free', 'pro']);
  }, 60_000);
});
