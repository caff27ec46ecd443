import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createFetcher } from '@ap/fetch';
import { newZipFile } from '@ap/zip';
import { UrlFailure, writeArchive } from './archive';

// /broken declares 1 MiB and stops after 1,000 bytes; /next is 32 MiB that streams until the
// reader stops reading. The bin fails on /broken while /next was already opened ahead.
let server: http.Server;
let base = '';
let nextClosedAt: number | null = null;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (req.url === '/broken') {
      res.writeHead(200, { 'content-length': String(1 << 20) });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    res.writeHead(200, { 'content-length': String(32 << 20) });
    res.once('close', () => (nextClosedAt = Date.now()));
    const chunk = Buffer.alloc(64 * 1024);
    const pump = () => {
      while (!res.destroyed && res.write(chunk));
      if (!res.destroyed) res.once('drain', pump);
    };
    pump();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  server.close();
});

it('frees the request it opened ahead when the bin fails before reaching it', async () => {
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 60_000, retries: 0, userAgent: 'ap-packer-test' });
  const zip = newZipFile();
  // Drained as an upload would; the archive is abandoned with the failed bin.
  void pipeline(zip.outputStream, new Writable({ write: (_c, _e, cb) => cb() })).catch(() => undefined);
  const files = ['/broken', '/next'].map((path, position) => ({ position, url: `${base}${path}`, filename: null, size: null, entryName: null }));
  const failedAt = Date.now();
  await expect(
    writeArchive(zip, files, {
      fetcher,
      mtime: new Date(),
      failOnUrlError: true,
      archiveLimit: Infinity,
      signal: new AbortController().signal,
      onBrokenBody: async () => undefined,
    }),
  ).rejects.toBeInstanceOf(UrlFailure);
  // Not left to the 60 s idle timeout: the response is dropped as soon as the bin fails.
  for (let i = 0; i < 100 && nextClosedAt === null; i++) await new Promise((r) => setTimeout(r, 20));
  expect(nextClosedAt).not.toBeNull();
  expect(nextClosedAt! - failedAt).toBeLessThan(2000);
  fetcher.close();
});
