// The baseline for stream downloads: a plain proxy that sends the same origin bodies back to
// back, with the same fetcher the API uses and no ZIP. GET /concat/<size>/<count>/<seed0>
// answers /blob/<size>/<seed0 + i> of ORIGIN_URL for i < count (or one Range of them). Its own
// process, like the API.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { createFetcher } from '@ap/fetch';
import { fetcherOptions } from '@ap/service-kit';

const origin = process.env.ORIGIN_URL!;
const fetcher = createFetcher(fetcherOptions({ ALLOW_PRIVATE_URLS: true }));

const server = http.createServer(async (req, res) => {
  const m = /^\/concat\/(\d+)\/(\d+)\/(\d+)$/.exec(req.url ?? '');
  if (!m) return void res.writeHead(404).end();
  const [size, count, seed0] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const total = size * count;
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  // One byte range (bench:stream (d) asks ranges of both sides): each body's part of it, by range.
  const asked = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  const start = asked ? (asked[1] ? Number(asked[1]) : Math.max(0, total - Number(asked[2]))) : 0;
  const end = asked && asked[1] && asked[2] ? Math.min(total, Number(asked[2]) + 1) : total;
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'content-length': String(end - start), 'accept-ranges': 'bytes' };
  if (asked) headers['content-range'] = `bytes ${start}-${end - 1}/${total}`;
  res.writeHead(asked ? 206 : 200, headers);
  const bodies = async function* () {
    for (let i = 0; i < count; i++) {
      const [from, to] = [Math.max(start, i * size) - i * size, Math.min(end, (i + 1) * size) - i * size];
      if (from >= to) continue;
      const range = from === 0 && to === size ? {} : { range: { start: from, end: to - 1 } };
      yield* (await fetcher.openBody(`${origin}/blob/${size}/${seed0 + i}/f${i}.bin`, { expectedSize: size, signal: abort.signal, ...range })).stream;
    }
  };
  await pipeline(bodies, res).catch(() => undefined);
});
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
