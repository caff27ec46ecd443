// A ZIP built from an HTTP/2 origin (docs/engine.md#http2) is byte for byte the one built from
// the same files over HTTP/1.1, and its many files came as streams of one connection; a stored
// job and a stream download from an h2 origin on the real stack.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createFetcher, type Fetcher } from '@ap/fetch';
import type { BinFile } from '@ap/archive';
import { fetcherOptions } from '@ap/service-kit';
import { call, createUser, download, waitForJob } from './helpers';
import { startStack, type Stack } from './stack';
import { bytesOf, sha256 } from './origin';
import { onePackerZip } from './one-packer-zip';
import { readZip } from './zip-readers';
import { tableLookup } from '../packages/fetch/src/testing-fetcher';
import { filesHandler, makeTestCa, startTlsOrigin, type TlsOrigin } from '../packages/fetch/src/testing-tls';

const MiB = 1024 * 1024;
const mtime = new Date('2026-03-01T10:00:00Z');
// Small files mostly, an empty one, and two that span several reads (and ranges).
const sizes = [...Array.from({ length: 120 }, (_, i) => 3000 + i * 211), 0, 3 * MiB + 7, 9 * MiB + 1];
const bodies = sizes.map((size, i) => bytesOf(i + 3, size));

const tlsCa = makeTestCa(['files.test', 'localhost']);
let h2: TlsOrigin;
let h1: TlsOrigin;
let fetcher: Fetcher;
beforeAll(async () => {
  h2 = await startTlsOrigin(tlsCa, 'h2', filesHandler(bodies));
  h1 = await startTlsOrigin(tlsCa, 'http/1.1', filesHandler(bodies));
  fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 5000, idleTimeoutMs: 10_000, userAgent: 'ap-test', lookup: tableLookup({ 'files.test': '127.0.0.1' }), extraCa: [tlsCa.ca] });
});
afterAll(async () => {
  fetcher.close();
  await Promise.all([h2.close(), h1.close()]);
});

const binFiles = (port: number): BinFile[] =>
  bodies.map((body, position) => ({ position, url: `https://files.test:${port}/${position}`, filename: null, size: BigInt(body.length), etag: null, lastModified: null, entryName: `f-${position}.bin`, crc32: null, crcPrefix: null, crcPrefixLen: null, aesMac: null, headers: null, sourceId: null }));

it('packs the same bytes from an h2 origin as from an HTTP/1.1 one, over one connection', async () => {
  const overH2 = await onePackerZip(fetcher, binFiles(h2.port), mtime);
  const overH1 = await onePackerZip(fetcher, binFiles(h1.port), mtime);
  expect(overH2.equals(overH1)).toBe(true);
  const entries = await readZip(overH2);
  expect(entries.map((e) => e.sha256)).toEqual(bodies.map((b) => sha256(b)));
  expect(new Set(h2.requests.map((r) => r.httpVersion))).toEqual(new Set(['2.0']));
  expect(new Set(h1.requests.map((r) => r.httpVersion))).toEqual(new Set(['1.1']));
  expect(h2.requests.length).toBeGreaterThanOrEqual(bodies.length);
  expect(h2.connections).toBe(1);
  expect(h1.connections).toBeGreaterThan(1);
});

describe('jobs from an h2 origin on the stack', () => {
  let stack: Stack;
  let origin: TlsOrigin;
  let key: string;
  const few = bodies.slice(0, 40);
  beforeAll(async () => {
    origin = await startTlsOrigin(tlsCa, 'h2', filesHandler(few));
    stack = await startStack({}, { fetcher: createFetcher({ ...fetcherOptions({ ALLOW_PRIVATE_URLS: true }), extraCa: [tlsCa.ca] }) });
    key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  });
  afterAll(async () => {
    await stack.close();
    await origin.close();
  });

  it.each(['stored', 'stream'])('a %s job: probes and bodies as streams of one connection', async (mode) => {
    const files = few.map((_, i) => ({ url: `https://localhost:${origin.port}/${i}`, filename: `f-${i}.bin` }));
    const res = await call(stack.url, 'POST', '/jobs', { key, body: { files, mode } });
    expect(res.status).toBe(201);
    const job = await waitForJob(stack.url, key, res.body.job_id);
    expect(job.status).toBe('completed');
    const zip = await download(job.download_url);
    expect(zip.status).toBe(200);
    expect((await readZip(zip.body)).map((e) => e.sha256)).toEqual(few.map((b) => sha256(b)));
    expect(new Set(origin.requests.map((r) => r.httpVersion))).toEqual(new Set(['2.0']));
    expect(origin.connections).toBe(1);
  });
});
