import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createFetcher, type Fetcher } from '@ap/fetch';
import { newZipOutput, type ZipOutput } from '@ap/zip';
import { UrlFailure, writeArchive } from './archive';

// /broken declares 1 MiB and stops after 1,000 bytes; /slow sends 256 KiB in 64 KiB pieces
// 150 ms apart; any other path is 32 MiB, sent as fast as it is read.
let server: http.Server;
let base = '';
let nextClosedAt: number | null = null;
let aheadSentAt: number | null = null;
const requested = new Map<string, number>();

beforeAll(async () => {
  server = http.createServer((req, res) => {
    requested.set(req.url!, (requested.get(req.url!) ?? 0) + 1);
    if (req.url === '/broken') {
      res.writeHead(200, { 'content-length': String(1 << 20) });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    }
    if (req.url === '/slow') {
      res.writeHead(200, { 'content-length': String(256 * 1024) }).flushHeaders();
      let sent = 0;
      const timer = setInterval(() => {
        res.write(Buffer.alloc(64 * 1024));
        if ((sent += 64 * 1024) === 256 * 1024) clearInterval(timer), res.end();
      }, 150);
      return;
    }
    res.writeHead(200, { 'content-length': String(32 << 20) });
    if (req.url === '/next') res.once('close', () => (nextClosedAt = Date.now()));
    if (req.url === '/ahead') res.once('finish', () => (aheadSentAt = Date.now()));
    const chunk = Buffer.alloc(64 * 1024);
    let left = 32 << 20;
    const pump = () => {
      while (left > 0 && !res.destroyed) {
        left -= chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
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

/** Packs these paths of the test origin, in order, with fail_on_url_error true. */
function pack(fetcher: Fetcher, zip: ZipOutput, paths: string[]) {
  const files = paths.map((path, position) => ({ position, url: `${base}${path}`, filename: null, size: null, entryName: null }));
  return writeArchive(zip, files, {
    fetcher,
    mtime: new Date(),
    failOnUrlError: true,
    archiveLimit: Infinity,
    signal: new AbortController().signal,
    onBrokenBody: async () => undefined,
    // A small budget: /big fills its slice (512 KiB) long before its turn.
    fetchAhead: { concurrency: 2, budgetBytes: 1 << 20 },
  });
}

it('frees the request it opened ahead when the bin fails before reaching it', async () => {
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 60_000, retries: 0, userAgent: 'ap-packer-test' });
  const zip = newZipOutput(null);
  // Drained as an upload would; the archive is abandoned with the failed bin.
  void pipeline(zip.outputStream, new Writable({ write: (_c, _e, cb) => cb() })).catch(() => undefined);
  const failedAt = Date.now();
  await expect(pack(fetcher, zip, ['/broken', '/next'])).rejects.toBeInstanceOf(UrlFailure);
  // Not left to the 60 s idle timeout: the response is dropped as soon as the bin fails.
  for (let i = 0; i < 100 && nextClosedAt === null; i++) await new Promise((r) => setTimeout(r, 20));
  expect(nextClosedAt).not.toBeNull();
  expect(nextClosedAt! - failedAt).toBeLessThan(2000);
  fetcher.close();
});

it('ends at once when the bin is aborted while its body has no request open (all of it read ahead)', async () => {
  // The upload failed (S3 gone): nothing reads the archive, and the body, read ahead whole, has
  // no request left to carry the abort. The body itself must end, or the bin waits for ever.
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 60_000, retries: 0, userAgent: 'ap-packer-test' });
  const zip = newZipOutput(null);
  const abort = new AbortController();
  aheadSentAt = null;
  const packing = writeArchive(zip, [{ position: 0, url: `${base}/ahead`, filename: null, size: null, entryName: null }], {
    fetcher,
    mtime: new Date(),
    failOnUrlError: true,
    archiveLimit: Infinity,
    signal: abort.signal,
    onBrokenBody: async () => undefined,
    fetchAhead: { concurrency: 1, budgetBytes: 64 << 20 },
  });
  const outcome = packing.then(
    () => 'completed',
    (err: Error) => err,
  );
  for (let i = 0; i < 250 && aheadSentAt === null; i++) await new Promise((r) => setTimeout(r, 20));
  expect(aheadSentAt).not.toBeNull();
  await new Promise((r) => setTimeout(r, 300)); // the last bytes reach the body: its request ends
  abort.abort(new Error('the upload failed'));
  const ended = await Promise.race([outcome, new Promise((r) => setTimeout(() => r('still waiting'), 2000))]);
  expect(ended).toBeInstanceOf(Error);
  fetcher.close();
});

/** Packs /slow then /big with a 300 ms idle timeout. */
async function packSlowThenBig() {
  const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2000, idleTimeoutMs: 300, retries: 0, userAgent: 'ap-packer-test' });
  const zip = newZipOutput(null);
  const drained = pipeline(zip.outputStream, new Writable({ write: (_c, _e, cb) => cb() }));
  requested.clear();
  try {
    const result = await pack(fetcher, zip, ['/slow', '/big']);
    zip.end();
    await drained;
    return result.packaged.map((p) => p.size);
  } finally {
    fetcher.close();
  }
}

it('lets a body opened ahead go before the idle timeout, and continues it on its turn', async () => {
  // /big is opened at once behind the 600 ms of /slow and reads one slice of the budget; held
  // back longer than half the 300 ms idle timeout, its connection is closed, and on its turn it
  // is continued (this origin ignores Range: the first bytes of a new GET are skipped). With
  // no retry allowed, a timeout would have failed the bin.
  expect(await packSlowThenBig()).toEqual([256 * 1024, 32 << 20]);
  expect(requested.get('/big')).toBe(2);
});
