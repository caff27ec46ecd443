// A stateless loopback origin for the benches, run as its own process so that serving bytes
// does not share a core with what is measured. GET/HEAD /blob/<size>/<seed>[/<name>] answers
// <size> deterministic bytes (a 16 MiB random block, rotated by seed), with Range support.
// GET /stats answers {bytes}: body bytes written so far (benches measure origin traffic).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeOriginHead } from '../../test/origin-range';

const BLOCK = randomBytes(16 * 1024 * 1024);

let bytesWritten = 0;

function write(res: http.ServerResponse, start: number, end: number, seed: number): void {
  let at = start;
  let closed = false;
  res.once('close', () => (closed = true));
  const pump = () => {
    while (at < end && !closed) {
      const offset = (at + seed * 4099) % BLOCK.length;
      const n = Math.min(end - at, BLOCK.length - offset, 1024 * 1024);
      const ok = res.write(BLOCK.subarray(offset, offset + n));
      at += n;
      bytesWritten += n;
      if (!ok) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

const server = http.createServer((req, res) => {
  if (req.url === '/stats') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes: bytesWritten }));
  const m = /^\/blob\/(\d+)\/(\d+)(?:\/[^?]*)?$/.exec(req.url ?? '');
  if (!m) return void res.writeHead(404).end();
  const size = Number(m[1]);
  const seed = Number(m[2]);
  const span = writeOriginHead(req, res, size, `"${size}-${seed}"`);
  if (!span) return;
  const { start, end } = span;
  if (req.method === 'HEAD') return void res.end();
  write(res, start, end, seed);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
