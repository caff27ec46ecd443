import { afterAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { discardResponseBody, InFlightPerWebhook, RESPONSE_BODY_MAX_BYTES } from './limits';

describe('InFlightPerWebhook', () => {
  it('gives each webhook at most 4 slots, independently of the others', () => {
    const slots = new InFlightPerWebhook();
    expect([1, 2, 3, 4, 5].map(() => slots.tryTake('a'))).toEqual([true, true, true, true, false]);
    expect(slots.tryTake('b')).toBe(true);
    slots.release('a');
    expect(slots.inFlight('a')).toBe(3);
    expect(slots.tryTake('a')).toBe(true);
    expect(slots.tryTake('a')).toBe(false);
  });
});

describe('discardResponseBody', () => {
  const servers: http.Server[] = [];
  afterAll(() => {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
  });

  /** A receiver that answers with `length` bytes (1 GB: written until the client stops reading). */
  async function receiver(length: number) {
    const stats = { written: 0, closedAfterMs: -1 };
    const server = http.createServer((_req, res) => {
      const started = Date.now();
      res.writeHead(200, { 'content-length': String(length) });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const pump = () => {
        while (stats.written < length && !res.destroyed) {
          const piece = chunk.subarray(0, Math.min(chunk.length, length - stats.written));
          stats.written += piece.length;
          if (!res.write(piece)) return void res.once('drain', pump);
        }
        if (stats.written >= length) res.end();
      };
      res.on('close', () => (stats.closedAfterMs = Date.now() - started));
      pump();
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, stats };
  }

  const get = (url: string) => new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, resolve).on('error', reject));

  it('reads at most 64 KiB of a 1 GB response body, then closes it', async () => {
    const huge = await receiver(1_000_000_000);
    const read = await discardResponseBody(await get(huge.url));
    expect(read).toBeLessThanOrEqual(RESPONSE_BODY_MAX_BYTES);
    expect(read).toBeGreaterThan(0);
    // The receiver notices at once and has sent no more than the sockets' buffers held.
    for (let waited = 0; huge.stats.closedAfterMs < 0 && waited < 2000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    expect(huge.stats.closedAfterMs).toBeGreaterThanOrEqual(0);
    expect(huge.stats.written).toBeLessThan(64 * 1024 * 1024);
  });

  it('reads a short body whole', async () => {
    const short = await receiver(1234);
    expect(await discardResponseBody(await get(short.url))).toBe(1234);
  });
});
