// A stateless loopback origin for the benches, run as its own process so that serving bytes
// does not share a core with what is measured. GET/HEAD /blob/<size>/<seed>[/<name>] answers
// <size> deterministic bytes (a 16 MiB random block, rotated by seed), with Range support.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const BLOCK = randomBytes(16 * 1024 * 1024);

function write(res: http.ServerResponse, start: number, end: number, seed: number): void {
  let at = start;
  const pump = () => {
    while (at < end) {
      const offset = (at + seed * 4099) % BLOCK.length;
      const n = Math.min(end - at, BLOCK.length - offset, 1024 * 1024);
      const ok = res.write(BLOCK.subarray(offset, offset + n));
      at += n;
      if (!ok) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

const server = http.createServer((req, res) => {
  const m = /^\/blob\/(\d+)\/(\d+)(?:\/[^?]*)?$/.exec(req.url ?? '');
  if (!m) return void res.writeHead(404).end();
  const size = Number(m[1]);
  const seed = Number(m[2]);
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  let start = 0;
  let end = size;
  let status = 200;
  const headers: Record<string, string> = { 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream', etag: `"${size}-${seed}"` };
  if (range) {
    start = range[1] ? Number(range[1]) : Math.max(0, size - Number(range[2]));
    end = range[1] && range[2] ? Math.min(size, Number(range[2]) + 1) : size;
    status = 206;
    headers['content-range'] = `bytes ${start}-${end - 1}/${size}`;
  }
  headers['content-length'] = String(end - start);
  res.writeHead(status, headers);
  if (req.method === 'HEAD') return void res.end();
  write(res, start, end, seed);
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
