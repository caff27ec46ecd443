// The other baseline for stream downloads: a plain proxy written with Node's own `fetch` (no
// fetcher of ours, no ZIP) that sends the origin bodies back to back in one response, each
// body's chunks written as they come, pausing on backpressure. GET /concat/<size>/<count>/<seed0>
// answers /blob/<size>/<seed0 + i> of ORIGIN_URL for i < count. Its own process, like the API.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const origin = process.env.ORIGIN_URL!;

/** Resolves on 'drain', or when the response closes first. */
function drained(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });
}

const server = http.createServer(async (req, res) => {
  const m = /^\/concat\/(\d+)\/(\d+)\/(\d+)$/.exec(req.url ?? '');
  if (!m) return void res.writeHead(404).end();
  const [size, count, seed0] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const abort = new AbortController();
  res.once('close', () => abort.abort());
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(size * count) });
  try {
    for (let i = 0; i < count; i++) {
      const body = (await fetch(`${origin}/blob/${size}/${seed0 + i}/f${i}.bin`, { signal: abort.signal })).body!;
      for await (const chunk of body) {
        if (!res.write(chunk)) await drained(res);
        if (res.destroyed) return;
      }
    }
    res.end();
  } catch {
    res.destroy();
  }
});
server.requestTimeout = 0;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
});
