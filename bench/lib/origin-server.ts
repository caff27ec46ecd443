// The benches' origin, run as its own process so that serving bytes does not share a core with
// what is measured. GET/HEAD /blob/<size>/<seed>[/<name>] answers <size> deterministic bytes (a
// 16 MiB random block, rotated by seed), with Range and ETag; `?v=lm`: a Last-Modified (a strong
// one, long before the Date) instead of the ETag, `?v=none`: neither (bench:origins' validator
// kinds, docs/engine.md#spilling-ahead-to-disk). GET /stats answers {bytes,
// requests, open, peakOpen, sockets}: body bytes written and blob requests so far, responses
// sending now and the most at once since the last GET /stats?reset, and connections open now
// (benches measure origin traffic and how many connections a client keeps busy).
// /text/<size>/<seed>[/<name>] answers deterministic CSV-like text instead (it deflates).
// On loopback by default; ORIGIN_LATENCY_MS answers every request that much later and
// ORIGIN_RATE_MBPS sends at most that many MB/s per connection, as a CDN or object store some
// distance away would (bench:origins). ORIGIN_TLS_CERT and ORIGIN_TLS_KEY (PEM) serve https on
// `localhost`, offering h2 and http/1.1 (bench/origins-h2.ts); a response's rate then holds per
// stream.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { writeOriginHead } from '../../test/origin-range';

const LATENCY_MS = Number(process.env.ORIGIN_LATENCY_MS ?? 0);
const BYTES_PER_MS = (Number(process.env.ORIGIN_RATE_MBPS ?? 0) * 1e6) / 1000;
// Paced sends go in socket-sized chunks so the rate holds within a chunk's time.
const CHUNK = BYTES_PER_MS > 0 ? 64 * 1024 : 1024 * 1024;
const BLOCK = randomBytes(16 * 1024 * 1024);
const TEXT = (() => {
  const lines: string[] = [];
  let size = 0;
  for (let i = 0; size < 16 * 1024 * 1024; i++) {
    const line = `${i},customer-${(i * 7919) % 9973},${((i * 104_729) % 1_000_000) / 100},2026-11-${(i % 28) + 1},ok\n`;
    lines.push(line);
    size += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, 16 * 1024 * 1024);
})();

/** The Last-Modified of every `?v=lm` file: strong by RFC 9110 8.8.2.2, long before any Date. */
const LAST_MODIFIED = new Date(Date.UTC(2026, 0, 1)).toUTCString();

let bytesWritten = 0;
let requests = 0;
/** Bodies being sent now (bench:fleet's busy connections). */
let active = 0;
/** Responses under way (a request answered, its body not all sent) now, and the most at once. */
let open = 0;
let peakOpen = 0;
let sockets = 0;

/** Sends [start, end), no faster than the per-connection rate when there is one. */
function write(res: http.ServerResponse, start: number, end: number, seed: number, block = BLOCK): void {
  let at = start;
  let closed = false;
  res.once('close', () => (closed = true));
  const began = performance.now();
  active++;
  res.once('close', () => active--);
  const pump = () => {
    while (at < end && !closed) {
      if (BYTES_PER_MS > 0) {
        // Ahead of the rate: wait until the bytes sent so far are due.
        const wait = began + (at - start) / BYTES_PER_MS - performance.now();
        if (wait > 1) return void setTimeout(pump, wait);
      }
      const offset = (at + seed * 4099) % block.length;
      const n = Math.min(end - at, block.length - offset, CHUNK);
      const ok = res.write(block.subarray(offset, offset + n));
      at += n;
      bytesWritten += n;
      if (!ok) return void res.once('drain', pump);
    }
    if (!closed) res.end();
  };
  pump();
}

function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
  const m = /^\/(blob|text)\/(\d+)\/(\d+)(?:\/[^?]*)?(?:\?v=(etag|lm|none))?$/.exec(req.url ?? '');
  if (!m) return void res.writeHead(404).end();
  const size = Number(m[2]);
  const seed = Number(m[3]);
  const validators = m[4] === 'lm' ? { lastModified: LAST_MODIFIED } : m[4] === 'none' ? {} : `"${size}-${seed}"`;
  const span = writeOriginHead(req, res, size, validators);
  if (!span) return;
  if (req.method === 'HEAD') return void res.end();
  write(res, span.start, span.end, seed, m[1] === 'text' ? TEXT : BLOCK);
}

let connections = 0;
const TLS = process.env.ORIGIN_TLS_CERT ? { cert: process.env.ORIGIN_TLS_CERT, key: process.env.ORIGIN_TLS_KEY, allowHTTP1: true } : null;
const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
  if (req.url?.startsWith('/stats')) {
    const stats = { bytes: bytesWritten, requests, active, open, peakOpen, sockets, connections };
    if (req.url.endsWith('?reset')) peakOpen = open;
    return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
  }
  requests++;
  open++;
  peakOpen = Math.max(peakOpen, open);
  res.once('close', () => open--);
  if (LATENCY_MS > 0) setTimeout(() => answer(req, res), LATENCY_MS);
  else answer(req, res);
};
// Over h2 the compatibility request and response stand in for http's.
const server = TLS ? http2.createSecureServer(TLS, listener as never) : http.createServer(listener);
if (server instanceof http.Server) server.keepAliveTimeout = 60_000;
server.on('connection', (socket: import('node:net').Socket) => {
  sockets++;
  connections++;
  socket.once('close', () => sockets--);
});
server.listen(0, '127.0.0.1', () => {
  const port = (server.address() as AddressInfo).port;
  process.stdout.write(`${JSON.stringify({ url: TLS ? `https://localhost:${port}` : `http://127.0.0.1:${port}` })}\n`);
});
