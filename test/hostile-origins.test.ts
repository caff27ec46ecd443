// Hostile origins against the real stack (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): origins
// that trickle, bins that fail with parts uploaded, and the S3 upload area looked at directly
// (a private s3rver, so what is in it is this file's alone).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CANCELLED_BY_FAIL_FAST, sweepExpired } from '@ap/jobs';
import { EMBEDDED_S3_CREDENTIALS, startEmbeddedS3, type EmbeddedS3 } from '../scripts/embedded';
import { call, createUser, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const BUCKET = 'hostile';
let s3Dir: string;
let s3: EmbeddedS3;
let stack: Stack;
let origin: Origin;
let trickle: http.Server;
let trickleUrl: string;

beforeAll(async () => {
  s3Dir = mkdtempSync(path.join(os.tmpdir(), 'ap-hostile-s3-'));
  s3 = await startEmbeddedS3(s3Dir, BUCKET);
  stack = await startStack({
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: BUCKET,
    S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey,
    // 16 KiB per 1.5 s instead of per 30 s: the same rule, in test time.
    FETCH_MIN_RATE_WINDOW_MS: '1500',
    // A lease renewed every 2 s instead of every 10 s: a packer sees a cancel (at its next
    // renewal) well within the time the fail-fast case waits for its upload to go.
    WORKER_LOCK_MS: '6000',
  });
  origin = await startOrigin();
  // One byte a second, for ever, with a declared length (so each cut is continued by range, and retried).
  trickle = http.createServer((req, res) => {
    res.writeHead(req.headers.range ? 206 : 200, {
      'content-length': '100000',
      'accept-ranges': 'bytes',
      etag: '"trickle"',
      ...(req.headers.range ? { 'content-range': `bytes ${/bytes=(\d+)-/.exec(req.headers.range)?.[1] ?? 0}-99999/100000` } : {}),
    });
    if (req.method === 'HEAD') return void res.end();
    const timer = setInterval(() => res.write('x'), 1000);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve));
  trickleUrl = `http://127.0.0.1:${(trickle.address() as AddressInfo).port}`;
});
afterAll(async () => {
  trickle.closeAllConnections();
  trickle.close();
  await stack.close();
  await origin.close();
  await s3.close();
});

/** Multipart uploads s3rver holds (its upload area: one folder per upload id). */
function uploadsInProgress(): string[] {
  const bucketDir = path.join(s3Dir, BUCKET);
  return readdirSync(bucketDir)
    .filter((name) => name.endsWith('uploads'))
    .flatMap((name) => readdirSync(path.join(bucketDir, name)));
}

async function createJob(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return res.body.job_id;
}

describe('origins that trickle', () => {
  it('fail as "origin too slow" in bounded time, while another user\'s job completes in seconds', async () => {
    const slowUser = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const otherUser = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const started = Date.now();
    // Two jobs: both packer slots of the stack.
    const slowJobs = [await createJob(slowUser, { files: [{ url: `${trickleUrl}/a.bin` }] }), await createJob(slowUser, { files: [{ url: `${trickleUrl}/b.bin` }] })];
    await new Promise((r) => setTimeout(r, 300));
    const quick = await createJob(otherUser, { files: [{ url: origin.set('/quick.bin', { body: bytesOf(7, 1000) }) }] });
    const quickDone = await waitForJob(stack.url, otherUser, quick, ['completed', 'failed'], 30_000);
    expect(quickDone.status).toBe('completed');
    expect(Date.now() - started).toBeLessThan(20_000);
    for (const jobId of slowJobs) {
      const job = await waitForJob(stack.url, slowUser, jobId, ['completed', 'failed'], 30_000);
      expect(job.status).toBe('failed');
      expect(JSON.stringify(job.errors)).toContain('origin too slow');
    }
    expect(Date.now() - started).toBeLessThan(30_000);
  });
});

describe("a failed bin's multipart upload", () => {
  it('is aborted when a retry could not resume it (a body of unknown length went in first)', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const jobId = await createJob(key, {
      files: [{ url: origin.set('/unknown-length.bin', { body: bytesOf(11, 12_000_000), chunked: true }) }, { url: origin.set('/gone.bin', { body: Buffer.alloc(0), status: 404 }) }],
    });
    const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 60_000);
    expect(job.status).toBe('failed');
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    expect(zip.uploadId).toBeNull();
    // Aborted, and aborted again once parts in flight have landed (as S3 advises).
    for (let waited = 0; uploadsInProgress().length > 0 && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(uploadsInProgress()).toEqual([]);
  });

  it('of a bin cancelled by fail-fast (another bin of its job failed) is aborted at once', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    // Bin 1: 17 MB stored as parts, then a trickle; bin 2 (past the 100 MiB the split allows at
    // least): a body always cut, so it fails.
    const jobId = await createJob(key, {
      max_zip_size_bytes: 104_857_600,
      files: [
        { url: origin.set('/cancelled-1.bin', { body: bytesOf(13, 17_000_000), etag: '"c1"' }) },
        { url: `${trickleUrl}/cancelled-2.bin` },
        { url: origin.set('/always-cut.bin', { body: bytesOf(14, 90_000_000), truncateAt: 1000 }) },
      ],
    });
    const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 30_000);
    expect(job.status).toBe('failed');
    const zips = await stack.ctx.db.zip.findMany({ where: { jobId }, orderBy: { sequence: 'asc' } });
    expect(zips.map((z) => z.status)).toEqual(['failed', 'failed']);
    expect(zips[0]!.error).toBe(CANCELLED_BY_FAIL_FAST);
    // Its upload goes once the packer sees the cancel (its next lease renewal), long before expiry.
    for (let waited = 0; uploadsInProgress().length > 0 && waited < 10_000; waited += 100) await new Promise((r) => setTimeout(r, 100));
    expect(uploadsInProgress()).toEqual([]);
  });

  it('is kept while a retry from checkpoint would resume it, and aborted when the job expires', async () => {
    const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const jobId = await createJob(key, {
      files: [{ url: origin.set('/known-length.bin', { body: bytesOf(12, 40_000_000), etag: '"k1"' }) }, { url: origin.set('/gone-too.bin', { body: Buffer.alloc(0), status: 404 }) }],
    });
    const job = await waitForJob(stack.url, key, jobId, ['completed', 'failed'], 60_000);
    expect(job.status).toBe('failed');
    const zip = await stack.ctx.db.zip.findFirstOrThrow({ where: { jobId } });
    expect(zip.uploadId).not.toBeNull();
    expect(uploadsInProgress()).toContain(zip.uploadId);
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await sweepExpired(stack.ctx.db, stack.ctx.store, stack.ctx.log, { secrets: stack.ctx.secrets, allowPrivate: stack.ctx.config.ALLOW_PRIVATE_URLS });
    expect(uploadsInProgress()).not.toContain(zip.uploadId);
  });
});
