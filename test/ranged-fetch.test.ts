// A large file fetched as several ranges at once (packages/fetch/src/body.ts, ranged mode) whose
// origin changes it between ranges: the URL fails with the "changed" message (or the job, with
// fail_on_url_error), and no ZIP with spliced bytes is served.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256 } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

let stack: Stack;
let key: string;
let server: http.Server;
let base: string;
const requests: { path: string; range?: string; ifMatch?: string }[] = [];

const BIG = 8 * 1024 * 1024;
const SMALL = bytesOf(31, 20_000);
/** Paths whose file became another version when the first range after byte 0 was asked. */
const changed = new Set<string>();

/**
 * /<name>/big.bin: 8 MiB with a strong ETag and Range, each response paced to 4 MB/s (a
 * capped, distant origin), so the packer splits it; the first ranged GET after byte 0 finds a
 * new version (other bytes, other ETag). /<name>/small.bin: a small file that never changes.
 */
function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
  const path = req.url ?? '/';
  requests.push({ path, ...(req.headers.range ? { range: req.headers.range } : {}), ...(req.headers['if-match'] ? { ifMatch: req.headers['if-match'] } : {}) });
  if (path.endsWith('/small.bin')) {
    res.writeHead(200, { 'content-length': SMALL.length, etag: '"small"', 'accept-ranges': 'bytes' });
    return void res.end(req.method === 'HEAD' ? undefined : SMALL);
  }
  const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
  if (range && Number(range[1]) > 0) changed.add(path);
  const version = changed.has(path) ? 2 : 1;
  const body = bytesOf(version === 1 ? 1 : 2, BIG);
  const etag = `"big-v${version}"`;
  const ifMatch = req.headers['if-match'];
  if (ifMatch !== undefined && ifMatch !== etag) return void res.writeHead(412).end();
  const start = range ? Number(range[1]) : 0;
  const end = range ? Number(range[2]) + 1 : BIG;
  const headers: Record<string, string | number> = { 'content-length': end - start, etag, 'accept-ranges': 'bytes' };
  if (range) headers['content-range'] = `bytes ${start}-${end - 1}/${BIG}`;
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === 'HEAD') return void res.end();
  let at = start;
  const send = () => {
    if (res.destroyed) return;
    const piece = body.subarray(at, Math.min(end, at + 16 * 1024));
    at += piece.length;
    if (at >= end) return void res.end(piece);
    res.write(piece);
    setTimeout(send, 4);
  };
  send();
}

beforeAll(async () => {
  // 4 connections and a 2 MiB budget: segments of 512 KiB.
  stack = await startStack({ FETCH_CONCURRENCY: '4', FETCH_BUDGET_BYTES: String(2 * 1024 * 1024) });
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  server = http.createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await stack.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

async function runJob(body: Record<string, unknown>): Promise<any> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return waitForJob(stack.url, key, res.body.job_id, ['completed', 'failed'], 90_000);
}

describe('a big file changed between its ranges', () => {
  it('fails the job with the "changed" message when fail_on_url_error is true', async () => {
    const big = `${base}/strict/big.bin`;
    const job = await runJob({ files: [{ url: `${base}/strict/small.bin` }, { url: big }], fail_on_url_error: true });
    expect(job.status).toBe('failed');
    expect(job.download_url).toBeNull();
    expect(job.zips[0]).toMatchObject({ status: 'failed', download_url: null, size: null });
    expect(job.errors).toEqual([{ url: big, error: expect.stringMatching(/^file changed while it was fetched/) }]);
    // It was split: ranges after byte 0, each on the validator of the first response.
    const ranged = requests.filter((r) => r.path === '/strict/big.bin' && r.range && !r.range.startsWith('bytes=0-'));
    expect(ranged.length).toBeGreaterThanOrEqual(1);
    expect(ranged.every((r) => r.ifMatch === '"big-v1"')).toBe(true);
  });

  it('leaves the URL out with the "changed" message when fail_on_url_error is false: the ZIP holds the rest, whole', async () => {
    const big = `${base}/lenient/big.bin`;
    const job = await runJob({ files: [{ url: `${base}/lenient/small.bin` }, { url: big }], fail_on_url_error: false });
    expect(job.status).toBe('completed');
    expect(job.file_count).toBe(1);
    expect(job.errors).toEqual([{ url: big, error: expect.stringMatching(/^file changed while it was fetched/) }]);
    const zip = await download(job.download_url);
    expect(zip.status).toBe(200);
    expect(await readZip(zip.body)).toEqual([{ name: 'small.bin', size: SMALL.length, sha256: sha256(SMALL) }]);
  });
});
