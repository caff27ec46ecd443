// An origin whose bodies are computed, not stored: /zeros/<size>/<name> answers <size> zero
// bytes (a 4 GiB entry costs no memory), /tiny/<n>/<name> a short deterministic text. Range
// support, strong ETags, and a record of bytes written and of requests still open, so tests
// can see a client's disconnect reach the origin.
import http from 'node:http';
import { writeOriginHead } from './origin-range';
import type { AddressInfo } from 'node:net';

const ZEROS = Buffer.alloc(1 << 20);

export interface SyntheticOrigin {
  url: string;
  bytesSent: number;
  open: number;
  requests: number;
  close(): Promise<void>;
}

export function tinyBody(n: number): Buffer {
  return Buffer.from(`file ${n}\n`.repeat((n % 3) + 1));
}

export async function startSyntheticOrigin(): Promise<SyntheticOrigin> {
  const state = { bytesSent: 0, open: 0, requests: 0 };
  const server = http.createServer((req, res) => {
    const m = /^\/(zeros|tiny)\/(\d+)(?:\/[^?]*)?$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    state.requests++;
    const tiny = m[1] === 'tiny' ? tinyBody(Number(m[2])) : null;
    const size = tiny ? tiny.length : Number(m[2]);
    const span = writeOriginHead(req, res, size, `"${m[1]}-${m[2]}"`);
    if (!span) return;
    const { start, end } = span;
    if (req.method === 'HEAD') return void res.end();
    if (tiny) {
      state.bytesSent += end - start;
      return void res.end(tiny.subarray(start, end));
    }
    state.open++;
    let closed = false;
    res.once('close', () => {
      closed = true;
      state.open--;
    });
    let at = start;
    const pump = () => {
      while (at < end && !closed) {
        const n = Math.min(end - at, ZEROS.length);
        at += n;
        state.bytesSent += n;
        if (!res.write(n === ZEROS.length ? ZEROS : ZEROS.subarray(0, n))) return void res.once('drain', pump);
      }
      if (!closed) res.end();
    };
    pump();
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const origin = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get bytesSent() {
      return state.bytesSent;
    },
    set bytesSent(v: number) {
      state.bytesSent = v;
    },
    get open() {
      return state.open;
    },
    get requests() {
      return state.requests;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return origin;
}
