// One archive, many packers (docs/segments.md#the-fleet): a big single-ZIP job is cut into
// segments that several packers write at once; its ZIP is the one-packer ZIP byte for byte,
// whatever happens to the packers on the way.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { binFiles } from '@ap/db';
import { objectKeyFor, reconcile } from '@ap/jobs';
import { createPreparerProcessor } from '@ap/preparer';
import { createWorker } from '@ap/queue';
import { metrics } from '@ap/service-kit';
import { planZip } from '@ap/zip';
import { spawnService } from '../scripts/services';
import { postJob, until } from './fault-fixtures';
import { call, createUser, download, waitForJob } from './helpers';
import { onePackerZip } from './one-packer-zip';
import { bytesOf, sha256 } from './origin';
import { writeOriginHead } from './origin-range';
import { startPackerWorker, startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

jest.setTimeout(240_000);
const MiB = 1024 * 1024;
/** The least segment size there is: a ZIP over 128 MiB is cut. */
const SEGMENT_BYTES = String(64 * MiB);
// A 152 MiB ZIP: three segments, the last body read from its start by the second and from its
// middle by the third.
const bodies = [28, 28, 28, 28, 40].map((mib, i) => bytesOf(900 + i, mib * MiB + 1000 * i));

let stack: Stack;
let origin: http.Server;
let base: string;
/** Bytes per second each connection of the origin is served at; 0: as fast as it goes. */
let rate = 0;
/** GETs of these paths from where the third segment starts in 4.bin answer 404 (their HEADs succeed): that segment's reads only. */
const failing = new Set<string>();
const thirdSegmentIn4 = 2 * 64 * MiB - planZip(bodies.map((b, i) => ({ name: `${i}.bin`, size: b.length })), { mtime: new Date() }).entries[4]!.dataOffset;
/** Body bytes the origin has sent. */
let served = 0;

beforeAll(async () => {
  stack = await startStack({ SEGMENT_BYTES, WORKER_LOCK_MS: '2000' });
  origin = http.createServer((req, res) => {
    const i = Number(/^\/(\d)\.bin$/.exec(req.url ?? '')?.[1] ?? -1);
    const body = bodies[i];
    if (!body) return void res.writeHead(404).end();
    if (req.method === 'GET' && failing.has(req.url!) && Number(/^bytes=(\d+)-/.exec(req.headers.range ?? '')?.[1] ?? 0) >= thirdSegmentIn4) return void res.writeHead(404).end();
    const span = writeOriginHead(req, res, body.length, `"b${i}"`);
    if (!span || req.method === 'HEAD') return void res.end();
    let at = span.start;
    const step = rate > 0 ? Math.ceil(rate / 20) : 1024 * 1024;
    const pump = () => {
      if (res.destroyed) return;
      if (at >= span.end) return void res.end();
      const chunk = body.subarray(at, Math.min(span.end, at + step));
      at += chunk.length;
      served += chunk.length;
      if (rate > 0) return void res.write(chunk, () => setTimeout(pump, 50));
      if (res.write(chunk)) setImmediate(pump);
      else res.once('drain', pump);
    };
    pump();
  });
  await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
});
afterAll(async () => {
  origin.closeAllConnections();
  await new Promise((r) => origin.close(r));
  await stack.close();
});

const files = () => bodies.map((_, i) => ({ url: `${base}/${i}.bin` }));

/** The finished job's ZIP, checked against the one-packer ZIP of the same files and readers. */
async function expectOnePackerZip(stackUrl: string, key: string, jobId: string, { count = bodies.length, readers = false } = {}) {
  const job = await waitForJob(stackUrl, key, jobId, ['completed', 'failed'], 90_000);
  expect(job.status).toBe('completed');
  const zip = (await download(job.download_url ?? job.zips[0].download_url)).body;
  const row = await stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId }, include: { zips: true } });
  const single = await onePackerZip(stack.ctx.fetcher, await binFiles(stack.ctx.db, row.zips[0]!.id), row.createdAt);
  expect(zip.length).toBe(single.length);
  expect(zip.equals(single)).toBe(true);
  // Equal bytes read alike; the readers once, on the first.
  if (readers) expect(await readZip(zip)).toEqual(bodies.slice(0, count).map((b, i) => ({ name: `${i}.bin`, size: b.length, sha256: sha256(b) })));
  else expect(zip.length).toBe(row.zips[0]!.size === null ? -1 : Number(row.zips[0]!.size));
  return job;
}

/** The packer service as deployed, on `on`'s queues. */
const packerEnv = (on: Stack) => ({ ...process.env, PUBLIC_BASE_URL: on.url, REDIS_PREFIX: on.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '2000', SEGMENT_BYTES });

const segmentsEnded = async (result: 'completed' | 'failed') => (await metrics.segmentsTotal.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
const segmentsCompleted = () => segmentsEnded('completed');

describe('one archive, many packers', () => {
  it('packs a big single-ZIP job in segments at once, with its progress, byte for byte the one-packer ZIP; another user runs meanwhile', async () => {
    const big = await createUser(stack.ctx, { plan: 'pro' });
    const small = await createUser(stack.ctx, { plan: 'pro' });
    rate = 4 * MiB; // per connection: a segment takes a while
    const before = await segmentsCompleted();
    const jobId = await postJob({ files: files() }, stack.url, big.apiKey);
    await until(async () => (await stack.ctx.db.zip.count({ where: { jobId, segmentBytes: { not: null } } })) > 0, 'the bin was cut', 60_000);
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    // The other user's small job, posted once the big one's segments hold both packer slots.
    let runningAtOnce = 0;
    await until(async () => {
      runningAtOnce = Math.max(runningAtOnce, await stack.ctx.db.zipSegment.count({ where: { zipId: zip.id, status: 'processing' } }));
      return runningAtOnce >= 2;
    }, 'two segments run at once');
    const smallJob = await postJob({ files: [{ url: `${base}/0.bin`, filename: 'small.bin' }] }, stack.url, small.apiKey);
    const midway = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key: big.apiKey })).body.job;
    expect(midway.zips[0].expected_size).toBeGreaterThan(128 * MiB);

    // Which job completes first is settled by the time the small one has: the rest of the big
    // one need not be slowed down.
    const other = await waitForJob(stack.url, small.apiKey, smallJob, ['completed'], 60_000);
    rate = 0;
    const done = await expectOnePackerZip(stack.url, big.apiKey, jobId, { readers: true });
    expect(done.zips[0].expected_size).toBe(done.zips[0].size);
    expect((await segmentsCompleted()) - before).toBe(3);
    // Fair share: the small job did not wait for the big one's three segments.
    expect(Date.parse(other.completed_at)).toBeLessThan(Date.parse(done.completed_at));
  });

  it('a URL failing in one segment packs the ZIP without the URL, listed as failed, with fail_on_url_error false', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    failing.add('/4.bin');
    const failedBefore = await segmentsEnded('failed');
    try {
      const jobId = await postJob({ files: files(), fail_on_url_error: false }, stack.url, user.apiKey);
      const job = await expectOnePackerZip(stack.url, user.apiKey, jobId, { count: 4 });
      expect(JSON.stringify(job)).toContain('/4.bin');
      // It was cut (its URLs probe well) before the URL failed in a segment.
      expect(await segmentsEnded('failed')).toBeGreaterThan(failedBefore);
      expect(await stack.ctx.db.jobFile.count({ where: { jobId, error: { not: null } } })).toBe(1);
    } finally {
      failing.clear();
    }
  });

  // One failed job shows both: how it fails, and what its retry fetches again.
  it('a URL failing in one segment fails the job, the URL listed, with fail_on_url_error true; a retry from checkpoint keeps the segments done: their bytes are not fetched again', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    failing.add('/4.bin');
    const failedBefore = await segmentsEnded('failed');
    let jobId: string;
    let kept: Array<{ index: number }>;
    let zip: { id: string; segmentBytes: bigint | null };
    try {
      jobId = await postJob({ files: files(), fail_on_url_error: true }, stack.url, user.apiKey);
      const job = await waitForJob(stack.url, user.apiKey, jobId, ['completed', 'failed'], 90_000);
      expect(job.status).toBe('failed');
      expect(job.errors).toEqual([{ url: `${base}/4.bin`, error: expect.stringContaining('404') }]);
      // It was cut (its URLs probe well) before the URL failed in a segment.
      expect(await segmentsEnded('failed')).toBeGreaterThan(failedBefore);
      expect(await stack.ctx.db.jobFile.count({ where: { jobId, error: { not: null } } })).toBe(1);
      zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
      kept = await stack.ctx.db.zipSegment.findMany({ where: { zipId: zip.id, status: 'completed' } });
      // Two packer slots: a segment was done before the third, whose reads fail, started.
      expect(kept.length).toBeGreaterThan(0);
    } finally {
      failing.clear();
    }
    const before = served;
    expect((await call(stack.url, 'POST', `/jobs/${jobId}/retry`, { key: user.apiKey, body: {} })).status).toBe(200);
    await waitForJob(stack.url, user.apiKey, jobId, ['completed', 'failed'], 90_000);
    const fetchedAgain = served - before;
    await expectOnePackerZip(stack.url, user.apiKey, jobId);
    const inputs = bodies.reduce((n, b) => n + b.length, 0);
    const plan = Number(zip.segmentBytes);
    // Fetched again: at most the segments not done, and the finishing step's slices (a part per boundary).
    expect(fetchedAgain).toBeLessThan(inputs - kept.length * plan + 4 * 8 * MiB);
  });

  it('a segmented bin whose multipart upload is gone (aborted, expired) starts a new one instead of failing', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    rate = 8 * MiB; // per connection: a segment outlasts its first part by seconds
    try {
      const jobId = await postJob({ files: files() }, stack.url, user.apiKey);
      await until(async () => {
        const zip = await stack.ctx.db.zip.findFirst({ where: { jobId } });
        return !!zip?.uploadId && (await stack.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 1;
      }, 'a part stored', 60_000);
      const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
      // The store drops the upload (S3: NoSuchUpload from then on for its parts and completion).
      await stack.ctx.store.abortUpload(objectKeyFor(jobId, zip.id), zip.uploadId!);
      await until(async () => (await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } })).uploadId !== zip.uploadId, 'a new upload', 60_000);
      rate = 0;
      await expectOnePackerZip(stack.url, user.apiKey, jobId);
      // The same attempt: no retry was spent on it.
      expect((await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } })).attempt).toBe(zip.attempt);
    } finally {
      rate = 0;
    }
  });

  it("a split job's big bin is cut too; its segments, lost from Redis with their packer, are queued again by upkeep", async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    const bare = await startStack({ SEGMENT_BYTES, WORKER_LOCK_MS: '2000' }, { workers: false });
    const { ctx } = bare;
    const preparer = createWorker('prepare', createPreparerProcessor(ctx, ctx.queues), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency: 1, log: ctx.log });
    const child = spawnService('packer', { ...packerEnv(bare), PACKER_CONCURRENCY: '2' }, { stdio: 'ignore' });
    const exited = new Promise((r) => child.once('exit', r));
    let packer: ReturnType<typeof startPackerWorker> | undefined;
    rate = 1 * MiB;
    try {
      const jobId = await postJob({ files: files(), max_zip_size_bytes: 400 * MiB }, bare.url, user.apiKey);
      await until(async () => (await ctx.db.zip.count({ where: { jobId, segmentBytes: { not: null } } })) > 0, 'the bin was cut', 60_000);
      // The packer dies and Redis loses the queue, the segments' messages with it.
      child.kill('SIGKILL');
      await exited;
      await ctx.queues.pack.obliterate({ force: true });
      rate = 0;
      expect((await reconcile(ctx.db, ctx.queues, new Date(), { jobIds: [jobId] })).packs).toBe(3);
      packer = startPackerWorker(ctx, 2);
      await expectOnePackerZip(bare.url, user.apiKey, jobId);
    } finally {
      rate = 0;
      child.kill('SIGKILL');
      await exited;
      await packer?.close(true);
      await preparer.close(true);
      await bare.close();
    }
  });

  it('a packer killed with -9 and another stopped with SIGTERM mid-segment: a third resumes both, the ZIP is the same', async () => {
    const user = await createUser(stack.ctx, { plan: 'pro' });
    const bare = await startStack({ SEGMENT_BYTES, WORKER_LOCK_MS: '2000' }, { workers: false });
    const spawnPacker = () => spawnService('packer', { ...packerEnv(bare), PACKER_CONCURRENCY: '1' }, { stdio: 'ignore' });
    // Two packers of one slot each: they take the first two segments (the first ranked first).
    const packers = [spawnPacker(), spawnPacker()];
    const exits = () => packers.map((p) => new Promise((r) => (p.exitCode ?? p.signalCode) !== null ? r(null) : p.once('exit', r)));
    rate = 4 * MiB; // per connection: a segment outlasts its first part by seconds
    try {
      const jobId = await postJob({ files: files() }, bare.url, user.apiKey);
      await until(async () => {
        const zip = await stack.ctx.db.zip.findFirst({ where: { jobId } });
        return !!zip && (await stack.ctx.db.zipSegment.count({ where: { zipId: zip.id, status: 'processing', index: { in: [0, 1] } } })) === 2 && (await stack.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 1;
      }, 'both segments under way, parts stored', 60_000);
      packers[0]!.kill('SIGKILL');
      packers[1]!.kill('SIGTERM');
      await Promise.all(exits());
      rate = 0;
      packers.push(spawnPacker());
      await expectOnePackerZip(bare.url, user.apiKey, jobId);
    } finally {
      rate = 0;
      for (const p of packers) p.kill('SIGKILL');
      await Promise.all(exits());
      await bare.close();
    }
  });
});
