// Faults of the workers: a packer killed mid-bin, a bin delivered twice (one packer per bin),
// work lost from Redis. Every test starts the stacks it needs; the suite's own stack (no
// workers) only holds the user.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { reconcile } from '@ap/jobs';
import { BinBusy, LeaseLost, packBin } from '@ap/packer';
import { prepareJob } from '@ap/preparer';
import { spawnService } from '../scripts/services';
import { closeFaultSuite, postJob, startFaultSuite, until, CAP, MB, type FaultSuite } from './fault-fixtures';
import { call, download, waitForJob } from './helpers';
import { bytesOf, sha256, type Origin } from './origin';
import { writeOriginHead } from './origin-range';
import { RESCUE_STALLED_CHECK_MS, startStack, type Stack } from './stack';
import { readZip } from './zip-readers';
import { endChild } from './private-redis';

let suite: FaultSuite;
let origin: Origin;
let key: string;

beforeAll(async () => {
  suite = await startFaultSuite({ workers: false });
  ({ origin, key } = suite);
});
afterAll(() => closeFaultSuite(suite));

/**
 * POST /jobs, then wait until the API has queued the job's work: it does so just after it
 * answers, and these tests take the bin or drop the queue from under it.
 */
async function createJob(body: Record<string, unknown>, base: string): Promise<string> {
  const jobId = await postJob(body, base, key);
  await until(async () => (await suite.stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId } })).enqueuedAt !== null, 'the API queued the job');
  return jobId;
}

/** The packer service as deployed (its bundle is built by the global setup), on `stack`'s queues. */
const spawnPacker = (stack: Stack) =>
  spawnService('packer', { ...process.env, PUBLIC_BASE_URL: stack.url, REDIS_PREFIX: stack.ctx.config.REDIS_PREFIX, HEALTH_PORT: '0', WORKER_LOCK_MS: '2000' }, { stdio: 'ignore' });

/** The end of a killed-packer test: the child killed (if it is not yet) and gone, its origin and stack closed. */
async function stopAll(child: ReturnType<typeof spawnPacker>, server: http.Server, stack: Stack) {
  await endChild(child, 'SIGKILL');
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await stack.close();
}

describe('worker faults', () => {
  it('a packer killed mid-bin: the bin is picked up again and the job completes with a correct ZIP', async () => {
    // A slow origin keeps the bin in flight long enough to kill the worker.
    const body = bytesOf(51, 8 * MB);
    let served = 0;
    const slow = http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': String(body.length) });
      if (req.method === 'HEAD') return void res.end();
      let offset = 0;
      const tick = setInterval(() => {
        if (offset >= body.length || res.destroyed) {
          clearInterval(tick);
          served++;
          return void res.end();
        }
        res.write(body.subarray(offset, offset + 256 * 1024));
        offset += 256 * 1024;
      }, 20);
    });
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow.bin`;

    // Only the child process packs at first.
    const noWorkers = await startStack({}, { workers: false });
    const child = spawnPacker(noWorkers);
    try {
      const jobId = await createJob({ files: [{ url }] }, noWorkers.url);
      await waitForJob(noWorkers.url, key, jobId, ['processing'], 30_000);
      await new Promise((r) => setTimeout(r, 500));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const midway = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
      expect(midway.status).toBe('processing');

      const rescue = await startStack({ WORKER_LOCK_MS: '2000', REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX }, { stalledCheckMs: RESCUE_STALLED_CHECK_MS });
      try {
        const job = await waitForJob(rescue.url, key, jobId, ['completed', 'failed'], 60_000);
        expect(job.status).toBe('completed');
        const entries = await readZip((await download(job.download_url)).body);
        expect(entries).toEqual([{ name: 'slow.bin', size: body.length, sha256: sha256(body) }]);
      } finally {
        await rescue.close();
      }
    } finally {
      await stopAll(child, slow, noWorkers);
    }
  }, 120_000);

  it.each([
    ['of a split job resumes its multipart upload after the last recorded part', { split: true, uploadLost: false }],
    ['of a single-ZIP job resumes its multipart upload after the last recorded part', { split: false, uploadLost: false }],
    ['whose upload the store no longer holds is packed again from its start', { split: true, uploadLost: true }],
  ])('a packer killed mid-bin %s', async (_, { split, uploadLost }) => {
    // Three files; the second one's body stops at its middle until released, so the packer is
    // killed with parts 1-2 (16 MiB) stored and part 3 half built.
    const bodies = [bytesOf(61, 12 * MB), bytesOf(62, 20 * MB), bytesOf(63, 6 * MB)];
    const served = [0, 0, 0];
    /** First byte of each request the rescue made, per file. */
    const rescueStarts: number[][] = [[], [], []];
    let gateOpen = false;
    const held = new Set<() => void>();
    const gated = http.createServer((req, res) => {
      const i = Number(req.url!.slice(1, 2));
      const body = bodies[i]!;
      const span = writeOriginHead(req, res, body.length, `"v${i}"`);
      if (!span || req.method === 'HEAD') return void res.end();
      if (gateOpen) rescueStarts[i]!.push(span.start);
      const stop = i === 1 && !gateOpen ? Math.max(span.start, 10 * MB) : span.end;
      let at = span.start;
      const pump = () => {
        while (at < stop) {
          const chunk = body.subarray(at, Math.min(stop, at + 64 * 1024));
          at += chunk.length;
          served[i]! += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (at === span.end) return void res.end();
        // Held: carries on once the gate opens (the first packer is dead by then).
        held.add(() => {
          if (!res.destroyed) res.end();
        });
      };
      pump();
    });
    await new Promise<void>((r) => gated.listen(0, '127.0.0.1', () => r()));
    const base = `http://127.0.0.1:${(gated.address() as AddressInfo).port}`;

    const noWorkers = await startStack({}, { workers: false });
    const child = spawnPacker(noWorkers);
    try {
      const files = bodies.map((_, i) => ({ url: `${base}/${i}.bin` }));
      const jobId = await createJob({ files, ...(split ? { max_zip_size_bytes: CAP } : {}) }, noWorkers.url);
      if (split) await prepareJob(noWorkers.ctx, noWorkers.ctx.queues, { jobId, attempt: 0 });
      const zip = await noWorkers.ctx.db.zip.findFirstOrThrow({ where: { jobId } });

      // Wait for parts 1 and 2, then kill the packer.
      await until(async () => (await noWorkers.ctx.db.zipPart.count({ where: { zipId: zip.id } })) >= 2, 'the packer stored two parts', 30_000);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      const recorded = await noWorkers.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } });
      expect(recorded.uploadId).not.toBeNull();
      expect(recorded.uploadLayout).not.toBeNull();
      const firstCrc = await noWorkers.ctx.db.jobFile.findFirstOrThrow({ where: { jobId, position: 0 } });
      expect(firstCrc.crc32).not.toBeNull();
      if (uploadLost) {
        // As if the store dropped it (an abort, a lifecycle rule): the store answers NoSuchUpload.
        await noWorkers.ctx.db.$executeRaw`UPDATE zip_parts SET upload_id = 'lost-upload' WHERE zip_id = ${zip.id}`;
        await noWorkers.ctx.db.zip.update({ where: { id: zip.id }, data: { uploadId: 'lost-upload' } });
      }
      const before = [...served];
      gateOpen = true;
      for (const release of held) release();

      const rescue = await startStack({ WORKER_LOCK_MS: '2000', REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX }, { stalledCheckMs: RESCUE_STALLED_CHECK_MS });
      try {
        const job = await waitForJob(rescue.url, key, jobId, ['completed', 'failed'], 60_000);
        expect(job.status).toBe('completed');
        const entries = await readZip((await download(job.zips[0].download_url)).body);
        expect(entries).toEqual(bodies.map((b, i) => ({ name: `${i}.bin`, size: b.length, sha256: sha256(b) })));
        const again = served.map((n, i) => n - before[i]!);
        // Packed again from the start: the first file asked for from its first byte and fetched
        // whole again (more than once if the rescue's own 2 s lease lapsed under load and the
        // bin started over once more; the ZIP is the same).
        if (uploadLost) {
          expect(rescueStarts[0]).toContain(0);
          expect(again[0]).toBeGreaterThanOrEqual(bodies[0]!.length);
        } else {
          // The resume fetched nothing of the first file (in the stored parts, its CRC recorded),
          // the second from about where part 2 ended, and the third whole (a single-ZIP job
          // probes it first, as the preparer would, to lay out the rest).
          // The second file is asked for from no earlier than where part 2 ended (16 MiB of ZIP,
          // ~4.7 MB into it); what it served in all may be a little more than the rest of it,
          // as ranges fetched ahead can be cut and continued.
          expect(again[0]).toBe(0);
          expect(again[1]).toBeGreaterThan(0);
          expect(Math.min(...rescueStarts[1]!)).toBeGreaterThan(4 * MB);
          expect(again[1]).toBeLessThan(bodies[1]!.length);
          expect(again[2]).toBe(bodies[2]!.length);
        }
        // The bin's record is cleared once it completed.
        const done = await rescue.ctx.db.zip.findUniqueOrThrow({ where: { id: zip.id } });
        expect(done).toMatchObject({ uploadId: null, uploadLayout: null });
        expect(await rescue.ctx.db.zipPart.count({ where: { zipId: zip.id } })).toBe(0);
      } finally {
        await rescue.close();
      }
    } finally {
      await stopAll(child, gated, noWorkers);
    }
  }, 120_000);

  describe('one packer per bin (lease)', () => {
    // The last file's body is held until released, so a packer stays on the bin meanwhile.
    const bodies = [bytesOf(53, 300_000), bytesOf(54, 7), bytesOf(55, 40_000)];
    let gets: number[];
    let held: (() => void)[];
    let gateOpen: boolean;
    let holder: http.Server;
    let base: string;
    beforeAll(async () => {
      holder = http.createServer((req, res) => {
        const i = Number(req.url!.slice(1, 2));
        res.writeHead(200, { 'content-length': String(bodies[i]!.length) });
        if (req.method === 'HEAD') return void res.end();
        gets[i]!++;
        if (i < 2 || gateOpen) return void res.end(bodies[i]);
        res.write(bodies[i]!.subarray(0, 1000));
        held.push(() => res.end(bodies[i]!.subarray(1000)));
      });
      await new Promise<void>((r) => holder.listen(0, '127.0.0.1', () => r()));
      base = `http://127.0.0.1:${(holder.address() as AddressInfo).port}`;
    });
    afterAll(() => {
      holder.closeAllConnections();
      holder.close();
    });
    beforeEach(() => {
      gets = [0, 0, 0];
      held = [];
      gateOpen = false;
    });
    const openGate = () => {
      gateOpen = true;
      for (const release of held.splice(0)) release();
    };
    async function heldBin(stack: Stack) {
      const jobId = await createJob({ files: bodies.map((_, i) => ({ url: `${base}/${i}.bin` })) }, stack.url);
      const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
      return { jobId, zipId: zip.id, payload: { jobId, zipId: zip.id, attempt: zip.attempt } };
    }

    it('a bin delivered twice at once is packed once; the second delivery is told to come back', async () => {
      const noWorkers = await startStack({ WORKER_LOCK_MS: '3000' }, { workers: false });
      try {
        const { jobId, zipId, payload } = await heldBin(noWorkers);
        const first = packBin(noWorkers.ctx, payload);
        await until(() => held.length > 0, 'the first packer holds the bin');
        const second = await packBin(noWorkers.ctx, payload).then(
          () => null,
          (err: unknown) => err,
        );
        expect(second).toBeInstanceOf(BinBusy);
        expect((second as BinBusy).retryInMs).toBeGreaterThan(250);
        expect((second as BinBusy).retryInMs).toBeLessThanOrEqual(3000 + 250);
        openGate();
        await first;
        expect(gets).toEqual([1, 1, 1]); // nothing fetched twice
        const job = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
        expect(job).toMatchObject({ status: 'completed', file_count: 3, zip_count: 1 });
        expect(job.zips[0]).toMatchObject({ status: 'completed', file_count: 3 });
        const zipBytes = await download(job.download_url);
        expect(zipBytes.body.length).toBe(job.zips[0].size);
        expect((await readZip(zipBytes.body)).map((e) => e.sha256)).toEqual(bodies.map(sha256));
        expect(await noWorkers.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId } })).toMatchObject({ leaseOwner: null, leaseExpiresAt: null });
        // A late delivery changes nothing.
        await packBin(noWorkers.ctx, payload);
        const again = (await call(noWorkers.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
        expect(again.zips[0]).toEqual(job.zips[0]);
        expect((await download(again.download_url)).body.equals(zipBytes.body)).toBe(true);
        expect(gets).toEqual([1, 1, 1]);
      } finally {
        openGate();
        await noWorkers.close();
      }
    }, 60_000);

    it('a packer whose lease was taken over stops and leaves the bin to the new holder', async () => {
      // WORKER_LOCK_MS 1500: the holder renews its lease every 500 ms.
      const noWorkers = await startStack({ WORKER_LOCK_MS: '1500' }, { workers: false });
      try {
        const { zipId, payload } = await heldBin(noWorkers);
        const stalled = packBin(noWorkers.ctx, payload).then(
          () => null,
          (err: unknown) => err,
        );
        await until(() => held.length > 0, 'the packer holds the bin');
        // As if its lease had run out while it stalled and another packer took the bin.
        const takenUntil = new Date(Date.now() + 60_000);
        await noWorkers.ctx.db.zip.update({ where: { id: zipId }, data: { leaseOwner: 'another-packer', leaseExpiresAt: takenUntil } });
        expect(await stalled).toBeInstanceOf(LeaseLost);
        const row = await noWorkers.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId } });
        expect(row).toMatchObject({ status: 'processing', leaseOwner: 'another-packer', completedAt: null, objectKey: null });
      } finally {
        openGate();
        await noWorkers.close();
      }
    }, 60_000);

    it('a queue worker finding the bin held waits for the lease to run out, then packs it', async () => {
      const noWorkers = await startStack({}, { workers: false });
      try {
        openGate();
        const { jobId, zipId } = await heldBin(noWorkers);
        // A packer that died holding the bin: its lease runs for 1.5 s more.
        const expires = new Date(Date.now() + 1500);
        await noWorkers.ctx.db.zip.update({ where: { id: zipId }, data: { status: 'processing', leaseOwner: 'dead-packer', leaseExpiresAt: expires } });
        const workers = await startStack({ REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX });
        try {
          const job = await waitForJob(workers.url, key, jobId, ['completed', 'failed'], 30_000);
          expect(job.status).toBe('completed');
          const row = await workers.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId } });
          expect(row.completedAt!.getTime()).toBeGreaterThanOrEqual(expires.getTime());
          expect(gets).toEqual([1, 1, 1]);
          expect((await readZip((await download(job.download_url)).body)).map((e) => e.sha256)).toEqual(bodies.map(sha256));
        } finally {
          await workers.close();
        }
      } finally {
        await noWorkers.close();
      }
    }, 60_000);
  });

  it('work lost from Redis is put back by the reconciler from Postgres', async () => {
    const noWorkers = await startStack({}, { workers: false });
    try {
      const body = bytesOf(52, 1234);
      const jobId = await createJob({ files: [{ url: origin.set('/lost.bin', { body }) }] }, noWorkers.url);
      // Simulate a Redis restart that lost the queue: drop every waiting message.
      await noWorkers.ctx.queues.pack.obliterate({ force: true });
      await noWorkers.ctx.db.zip.updateMany({ where: { jobId }, data: { updatedAt: new Date(Date.now() - 10 * 60_000) } });
      expect(await noWorkers.ctx.queues.pack.count()).toBe(0);
      // Only this job: other test files' stacks share the database, not the queues.
      const report = await reconcile(noWorkers.ctx.db, noWorkers.ctx.queues, new Date(), { jobIds: [jobId] });
      expect(report.packs).toBe(1);
      // Workers on the same queues now find the work again.
      const workers = await startStack({ REDIS_PREFIX: noWorkers.ctx.config.REDIS_PREFIX });
      try {
        const job = await waitForJob(workers.url, key, jobId);
        expect(job.status).toBe('completed');
        expect((await readZip((await download(job.download_url)).body))[0]!.sha256).toBe(sha256(body));
      } finally {
        await workers.close();
      }
    } finally {
      await noWorkers.close();
    }
  }, 60_000);
});
