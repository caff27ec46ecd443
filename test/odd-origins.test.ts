// Hardening, third round (docs/guarantees.md#hardening-third-round-items-7-12): per-file headers
// on the path for unknown sizes, and origins that answer ranges oddly or stop answering.
import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

async function finished(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return waitForJob(stack.url, key, res.body.job_id);
}

describe('hardening 3, item 9: per-file headers on every path', () => {
  it('sends each file its headers in a stream job whose sizes are unknown (no Content-Length)', async () => {
    const required = { 'X-Api-Token': 'item-9-token' };
    const chunked = bytesOf(901, 70_000);
    const known = bytesOf(902, 5_000);
    const job = await finished({
      mode: 'stream',
      files: [
        { url: origin.set('/i9/chunked.bin', { body: chunked, chunked: true, requireHeaders: required }), headers: required },
        { url: origin.set('/i9/known.bin', { body: known, requireHeaders: required }), headers: required },
      ],
    });
    expect(job.status).toBe('completed');
    expect(job.zips[0].size).toBeNull(); // the unknown-size path: written whole as it is sent
    const zip = await download(job.zips[0].download_url);
    expect(zip.status).toBe(200);
    expect((await readZip(zip.body)).map((e) => e.sha256)).toEqual([sha256(chunked), sha256(known)]);
  });
});

describe('hardening 3, item 10: origins that answer ranges oddly', () => {
  it('learns sizes from a plain GET when a range probe gets 416 without Content-Range or 400, in split and stream jobs', async () => {
    const body = bytesOf(1001, 300_000);
    const files = () => [
      // An empty file whose server answers a range with a bare 416 (HEAD says 0: confirmed by a range).
      { url: origin.set('/i10/empty.txt', { body: Buffer.alloc(0), rangeStatus: 416 }) },
      // A gateway that refuses every range with 400, and HEAD with 405.
      { url: origin.set('/i10/gateway.bin', { body, noHead: true, rangeStatus: 400, etag: '"g1"' }) },
    ];
    const split = await finished({ files: files(), max_zip_size_bytes: 104_857_600 });
    expect(split.status).toBe('completed');
    const stream = await finished({ mode: 'stream', files: files() });
    expect(stream.status).toBe('completed');
    expect(Number(stream.zips[0].size)).toBeGreaterThan(body.length);
    for (const job of [split, stream]) {
      const zip = await download(job.zips[0].download_url);
      expect(zip.status).toBe(200);
      expect((await readZip(zip.body)).map((e) => [e.name, e.sha256])).toEqual([['empty.txt', sha256(Buffer.alloc(0))], ['gateway.bin', sha256(body)]]);
    }
    // A range of the stream ZIP from the gateway that refuses ranges: its body skipped into.
    const whole = await download(stream.zips[0].download_url);
    const part = await download(stream.zips[0].download_url, { range: 'bytes=1000-1999' });
    expect(part.status).toBe(206);
    expect(part.body.equals(whole.body.subarray(1000, 2000))).toBe(true);
  });

  it('answers a stream download whose URL stopped answering (an expired signed link) with 502 SOURCE_UNAVAILABLE naming the answer, and logs the cause', async () => {
    const signed = origin.set('/i10/signed.bin', { body: bytesOf(1002, 40_000), etag: '"s1"' }) + '?X-Amz-Signature=secret-signature';
    const job = await finished({ mode: 'stream', files: [{ url: signed }] });
    expect(job.status).toBe('completed');
    origin.files.get('/i10/signed.bin')!.getStatus = 403; // the link expired
    const warn = jest.spyOn(stack.ctx.log, 'warn');
    try {
      const res = await call(stack.url, 'GET', new URL(job.zips[0].download_url).pathname);
      expect(res.status).toBe(502);
      expect(res.body.error.code).toBe('SOURCE_UNAVAILABLE');
      expect(res.body.error.message).toContain(`${origin.url}/i10/signed.bin: `);
      expect(res.body.error.message).toMatch(/403/);
      expect(JSON.stringify(res.body)).not.toContain('secret-signature');
      const logged = warn.mock.calls.map((c) => JSON.stringify(c)).filter((line) => line.includes('/i10/signed.bin'));
      expect(logged.length).toBeGreaterThan(0);
      expect(logged.join('\n')).toMatch(/"status":403/);
      expect(logged.join('\n')).not.toContain('secret-signature');
    } finally {
      warn.mockRestore();
    }
  });

  it('applies If-Range with a date only when it is the exact Last-Modified (RFC 9110 13.1.5)', async () => {
    const job = await finished({ files: [{ url: origin.set('/i10/plain.bin', { body: bytesOf(1003, 20_000) }) }] });
    const url = job.zips[0].download_url;
    const whole = await download(url);
    const lastModified = whole.headers.get('last-modified')!;
    const exact = await download(url, { range: 'bytes=0-9', 'if-range': lastModified });
    expect(exact.status).toBe(206);
    const later = new Date(Date.parse(lastModified) + 60_000).toUTCString();
    const notExact = await download(url, { range: 'bytes=0-9', 'if-range': later });
    expect(notExact.status).toBe(200);
    expect(notExact.body.equals(whole.body)).toBe(true);
  });
});
