// Stream downloads in flight per user are capped (docs/fair-share.md#fair-share-under-load): one more
// than STREAM_DOWNLOADS_PER_USER is 429 RATE_LIMITED with Retry-After before any byte, and other
// users are not affected.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startGatedOrigin, type GatedOrigin } from './gated-origin';
import { call, createUser, waitForJob } from './helpers';
import { bytesOf } from './origin';
import { startStack, type Stack } from './stack';

let stack: Stack;
let origin: GatedOrigin;

beforeAll(async () => {
  stack = await startStack();
  // Every body stops at its middle until the test opens the gate: the downloads stay in flight.
  origin = await startGatedOrigin({ '/f.bin': bytesOf(9, 400_000) }, { '/f.bin': 200_000 });
});
afterAll(async () => {
  origin.open();
  await origin.close();
  await stack.close();
});

async function streamZipUrl(on: Stack = stack): Promise<{ url: string; key: string }> {
  const { apiKey } = await createUser(on.ctx, { plan: 'pro' });
  const res = await call(on.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: `${origin.url}/f.bin` }], mode: 'stream' } });
  const job = await waitForJob(on.url, apiKey, res.body.job_id, ['completed'], 30_000);
  return { url: job.zips[0].download_url, key: apiKey };
}

/** Starts a download and resolves with its status and headers once they arrive (the body keeps coming). */
function startDownload(url: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: () => Promise<Buffer>; abort: () => void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      const ended = new Promise<Buffer>((done) => res.on('end', () => done(Buffer.concat(chunks))).on('close', () => done(Buffer.concat(chunks))));
      resolve({ status: res.statusCode!, headers: res.headers, body: () => ended, abort: () => req.destroy() });
    });
    req.on('error', (err) => (err.message === 'socket hang up' ? undefined : reject(err)));
  });
}

describe('stream downloads per user', () => {
  it('answers the 21st download of a user 429 with Retry-After, while another user still downloads', async () => {
    const a = await streamZipUrl();
    const b = await streamZipUrl();
    const running = await Promise.all(Array.from({ length: 20 }, () => startDownload(a.url)));
    try {
      expect(running.map((d) => d.status)).toEqual(Array(20).fill(200));
      const refused = await startDownload(a.url);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['content-disposition']).toBeUndefined();
      expect(JSON.parse((await refused.body()).toString())).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });

      const other = await startDownload(b.url);
      expect(other.status).toBe(200);
      other.abort();

      // One ends: its slot is free again.
      running.pop()!.abort();
      const deadline = Date.now() + 5_000;
      let again = await startDownload(a.url);
      while (again.status === 429 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
        again = await startDownload(a.url);
      }
      expect(again.status).toBe(200);
      running.push(again);
    } finally {
      for (const d of running) d.abort();
    }
  }, 60_000);
});

/** Sends a GET of `url` on a raw socket and hangs up `afterMs` later, whatever has come back by then. */
function abandonedGet(url: string, afterMs: number): Promise<void> {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
      if (afterMs === 0) socket.destroy();
      else setTimeout(() => socket.destroy(), afterMs);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve());
  });
}

describe('a client that hangs up before the first byte', () => {
  it('frees its stream slot: after 60 downloads abandoned within 0-5 ms the owner still downloads', async () => {
    const small = await startStack({ STREAM_DOWNLOADS_PER_USER: '3' });
    try {
      const a = await streamZipUrl(small);
      await Promise.all(Array.from({ length: 60 }, (_, i) => abandonedGet(a.url, i % 6)));
      // Releases reach Redis shortly after the hang-ups; a leaked slot stays taken for good.
      const deadline = Date.now() + 5_000;
      let next = await startDownload(a.url);
      while (next.status === 429 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        next = await startDownload(a.url);
      }
      next.abort();
      expect(next.status).toBe(200);
    } finally {
      await small.close();
    }
  }, 60_000);
});
