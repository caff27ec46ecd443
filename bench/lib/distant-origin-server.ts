// A distant origin for bench:origins, in its own process: the bench origin's bytes
// (GET/HEAD /blob/<size>/<seed>[/<name>], Range, ETag), but every request is answered after
// LATENCY_MS (default 40 ms) and each connection sends at most RATE_MBPS (default 25 MB/s),
// as a CDN or object store some distance away would. GET /stats answers {bytes, requests}.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeOriginHead } from '../../test/origin-range';

const LATENCY_MS = Number(process.env.LATENCY_MS ?? 40);
const BYTES_PER_MS = (Number(process.env.RATE_MBPS ?? 25) * 1e6) / 1000;
const CHUNK = 64 * 1024;
const BLOCK = randomBytes(16 * 1024 * 1024);

let bytesWritten = 0;
let requests = 0;

/** Sends [start, end) no faster than the per-connection rate. */
function writePaced(res: http.ServerResponse, start: number, end: number, seed: number): void {
  let at = start;
  let closed = false;
  res.once('close', () => (closed = true));
  const began = performance.now();
  const pump = () => {
    while (at < end && !closed) {
      // Ahead of the rate: wait until the bytes sent so far are due.
      const due = began + (at - start) / BYTES_PER_MS;
      const wait = due - performance.now();
      if (wait > 1) return void setTimeout(pump, wait);
      const offset = (at + seed * 4099) % BLOCK.length;
      const n = Math.min(end - at, BLOCK.length - offset, CHUNK);
      const ok = res.write(BLOCK.subarray(offset, offset + n));
      at += n;
      bytesWritten += n;
      if (!ok) return void res.once('drain', pump);
    }
    if (!closed) res.end();
  };
  pump();
}

const server = http.createServer((req, res) => {
  if (req.url === '/stats') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes: bytesWritten, requests }));
  requests++;
  setTimeout(() => {
    const m = /^\/blob\/(\d+)\/(\d+)(?:\/[^?]*)?$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    const size = Number(m[1]);
    const seed = Number(m[2]);
    const span = writeOriginHead(req, res, size, `"${size}-${seed}"`);
    if (!span) return;
    if (req.method === 'HEAD') return void res.end();
    writePaced(res, span.start, span.end, seed);
  }, LATENCY_MS);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
