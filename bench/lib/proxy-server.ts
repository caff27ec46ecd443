// The baseline for stream downloads: a plain proxy that sends the same origin bodies back to
// back, with the same fetcher the API uses and no ZIP. GET /concat/<size>/<count>/<seed0>
// answers /blob/<size>/<seed0 + i> of ORIGIN_URL for i < count. Its own process, like the API.
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
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size * count) });
  const bodies = async function* () {
    for (let i = 0; i < count; i++) {
      yield* (await fetcher.openBody(`${origin}/blob/${size}/${seed0 + i}/f${i}.bin`, { expectedSize: size, signal: abort.signal })).stream;
    }
  };
  await pipeline(bodies, res).catch(() => undefined);
});
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
