// A body of unknown length is stopped at the plan's per-archive limit (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): a real origin that never ends, the real ZIP writer, the real fetcher.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createFetcher } from '@ap/fetch';
import { newZipOutput } from '@ap/zip';
import { ARCHIVE_TOO_LARGE, BinFailure, writeArchive } from './archive';

let server: http.Server;
let base = '';
let sent = 0;
let closed = false;

beforeAll(async () => {
  // No Content-Length, and no end: chunked bytes for as long as they are read.
  server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const chunk = Buffer.alloc(64 * 1024, 1);
    const pump = () => {
      while (!res.destroyed) {
        sent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
    };
    res.on('close', () => (closed = true));
    pump();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
});

it('fails the bin at the limit when a body of unknown length never ends, having read about the limit', async () => {
  const limit = 8 * 1024 * 1024;
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 5000, retries: 0, userAgent: 'ap-limit-test' });
  const zip = newZipOutput(null);
  let archived = 0;
  const drained = pipeline(zip.outputStream, new Writable({ write: (c: Buffer, _e, cb) => ((archived += c.length), cb()) })).catch(() => undefined);
  const failure = await writeArchive(zip, [{ position: 0, url: `${base}/endless`, filename: null, size: null, entryName: null }], {
    fetcher,
    mtime: new Date(),
    failOnUrlError: true,
    archiveLimit: limit,
    signal: new AbortController().signal,
    onBrokenBody: async () => undefined,
    fetchAhead: { concurrency: 2, budgetBytes: 1 << 20 },
  }).then(
    () => null,
    (err: unknown) => err,
  );
  expect(failure).toBeInstanceOf(BinFailure);
  expect((failure as Error).message).toBe(ARCHIVE_TOO_LARGE);
  (zip.outputStream as unknown as Readable).destroy();
  await drained;
  for (let i = 0; i < 100 && !closed; i++) await new Promise((r) => setTimeout(r, 20));
  expect(closed).toBe(true);
  // About the limit: what the archive took, plus the fetch-ahead budget and the sockets' buffers.
  expect(archived).toBeLessThanOrEqual(limit + 256 * 1024);
  expect(sent).toBeLessThan(limit + 16 * 1024 * 1024);
  fetcher.close();
});
