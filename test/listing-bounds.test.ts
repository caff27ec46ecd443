// Hardening 3, item 1 (docs/guarantees.md#hardening-third-round-items-1-6): a prefix entry's
// listing is bounded whatever the user's endpoint answers: PREFIX_LIST_PAGES, a cap of listed
// keys (folder markers included), the preparing deadline, and "listing did not progress" on a
// truncated page that brings nothing new. Meanwhile other users' jobs keep moving.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, createUser, waitForJob } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const PREPARE_TIMEOUT_MS = 4_000;
const PAGES = 30;

/** A stand-in S3 endpoint whose ListObjectsV2 answers never end; its bucket name picks how. */
interface HostileS3 {
  url: string;
  /** List requests per bucket. */
  pages: Map<string, number>;
  close(): Promise<void>;
}

function page(bucket: string, keys: string[], truncated: boolean, token: string | undefined): string {
  const contents = keys.map((k) => `<Contents><Key>${k}</Key><Size>1</Size><ETag>"e"</ETag><LastModified>2026-01-01T00:00:00.000Z</LastModified></Contents>`).join('');
  return `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>${bucket}</Name><Prefix>p/</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>${truncated}</IsTruncated>${token === undefined ? '' : `<NextContinuationToken>${token}</NextContinuationToken>`}${contents}</ListBucketResult>`;
}

async function startHostileS3(): Promise<HostileS3> {
  const pages = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const bucket = url.pathname.split('/')[1] ?? '';
    const n = (pages.get(bucket) ?? 0) + 1;
    pages.set(bucket, n);
    const answer = (body: string) => res.writeHead(200, { 'content-type': 'application/xml' }).end(body);
    switch (bucket) {
      case 'repeated-token': return answer(page(bucket, [`p/f${n}`], true, 'same'));
      case 'missing-token': return answer(page(bucket, [`p/f${n}`], true, undefined));
      case 'empty-pages': return answer(page(bucket, [], true, `t${n}`));
      case 'only-markers': return answer(page(bucket, Array.from({ length: 1000 }, (_, i) => `p/d${n}-${i}/`), true, `t${n}`));
      case 'endless': return answer(page(bucket, [`p/f${n}`], true, `t${n}`));
      case 'slow': return void setTimeout(() => answer(page(bucket, [`p/f${n}`], true, `t${n}`)), 250);
      default: return void res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    pages,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let stack: Stack;
let hostile: HostileS3;
let origin: Origin;

beforeAll(async () => {
  hostile = await startHostileS3();
  origin = await startOrigin();
  stack = await startStack({ PREPARE_TIMEOUT_MS: String(PREPARE_TIMEOUT_MS), PREFIX_LIST_PAGES: String(PAGES) });
});
afterAll(async () => {
  await stack.close();
  await Promise.all([hostile.close(), origin.close()]);
});

/** A user (free plan: 100 files a job) with a source on the hostile endpoint, and a job of one prefix entry in `bucket`. */
async function listingJob(bucket: string): Promise<{ key: string; id: string }> {
  const { apiKey } = await createUser(stack.ctx);
  const source = await call(stack.url, 'POST', '/sources', {
    key: apiKey,
    body: { name: 'hostile', type: 's3', region: 'us-east-1', endpoint: hostile.url, force_path_style: true, access_key_id: 'AKIAHOSTILE', secret_access_key: 'hostile-secret' },
  });
  expect(source.status).toBe(201);
  const created = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: `s3://${bucket}/p/`, source: 'hostile' }] } });
  expect(created.status).toBe(201);
  return { key: apiKey, id: created.body.job_id };
}

describe('hardening 3, item 1: listing is bounded', () => {
  it('a truncated page that brings nothing new (repeated or missing token, no keys) ends the job "listing did not progress" at once', async () => {
    for (const bucket of ['repeated-token', 'missing-token', 'empty-pages']) {
      const { key, id } = await listingJob(bucket);
      const job = await waitForJob(stack.url, key, id, ['completed', 'failed'], 15_000);
      expect({ bucket, status: job.status, errors: job.errors }).toEqual({ bucket, status: 'failed', errors: [{ url: '', error: 'listing did not progress' }] });
      expect(hostile.pages.get(bucket)).toBeLessThanOrEqual(2);
    }
  }, 60_000);

  it('folder markers count toward a cap of listed keys; PREFIX_LIST_PAGES caps the pages', async () => {
    const markers = await listingJob('only-markers');
    const endless = await listingJob('endless');
    const byMarkers = await waitForJob(stack.url, markers.key, markers.id, ['completed', 'failed'], 15_000);
    expect({ status: byMarkers.status, errors: byMarkers.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: 'listing did not progress (more than 1200 keys listed, 0 of them files)' }] });
    expect(hostile.pages.get('only-markers')).toBe(2);
    const byPages = await waitForJob(stack.url, endless.key, endless.id, ['completed', 'failed'], 15_000);
    expect({ status: byPages.status, errors: byPages.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: `listing did not progress (stopped after ${PAGES} pages, PREFIX_LIST_PAGES)` }] });
    expect(hostile.pages.get('endless')).toBe(PAGES);
  }, 60_000);

  it('an endpoint answering IsTruncated=true forever holds no preparer slot past the deadline, while other users\' split and stream jobs complete', async () => {
    const slow = await listingJob('slow');
    const started = Date.now();
    const other = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const files = [{ url: origin.set('/o1.bin', { body: Buffer.alloc(5000, 1) }) }, { url: origin.set('/o2.bin', { body: Buffer.alloc(7000, 2) }) }];
    const ends: Record<string, number> = {};
    await Promise.all(
      [{ max_zip_size_bytes: 104_857_600 }, { mode: 'stream' }].map(async (extra) => {
        const created = await call(stack.url, 'POST', '/jobs', { key: other, body: { files, ...extra } });
        expect(created.status).toBe(201);
        const done = await waitForJob(stack.url, other, created.body.job_id, ['completed', 'failed'], 15_000);
        expect(done.status).toBe('completed');
        ends[JSON.stringify(extra)] = Date.now();
      }),
    );
    const job = await waitForJob(stack.url, slow.key, slow.id, ['completed', 'failed'], 3 * PREPARE_TIMEOUT_MS);
    const failedAfter = Date.now() - started;
    expect({ status: job.status, errors: job.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: 'preparing took too long' }] });
    expect(failedAfter).toBeLessThan(PREPARE_TIMEOUT_MS + 3_000);
    for (const end of Object.values(ends)) expect(end - started).toBeLessThan(PREPARE_TIMEOUT_MS);
    // The listing stopped with the deadline: no page is asked for afterwards.
    const asked = hostile.pages.get('slow')!;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(hostile.pages.get('slow')).toBe(asked);
  }, 60_000);
});
