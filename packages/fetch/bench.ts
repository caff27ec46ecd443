/**
 * Streaming throughput of @ap/fetch (got stream) vs plain node:http over loopback.
 *
 *   cd packages/fetch && npx tsx bench.ts [files=64] [MiB=16] [reps=5]
 *
 * The origin runs in a worker thread (its own event loop) and serves one preallocated buffer
 * with Content-Length, keep-alive. Each run GETs `files` bodies one after another through a
 * keep-alive agent and drains them into a sink, like a packer would. Runs are interleaved and
 * the median of `reps` is printed, with the ratio to plain http.get.
 */
import http from 'node:http';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import got from 'got';
import { createFetcher } from './src/index';

const files = Number(process.argv[2] ?? 64);
const mib = Number(process.argv[3] ?? 16);
const reps = Number(process.argv[4] ?? 5);
const size = mib * 1024 * 1024;

const worker = new Worker(
  `
  const http = require('node:http');
  const { parentPort, workerData } = require('node:worker_threads');
  const body = Buffer.alloc(workerData.size, 7);
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-length': body.length, 'content-type': 'application/octet-stream' });
    res.end(body);
  });
  server.keepAliveTimeout = 60000;
  server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
  parentPort.on('message', (m) => { if (m === 'stop') { server.closeAllConnections(); server.close(); parentPort.close(); } });
  `,
  { eval: true, workerData: { size } },
);
const port = await new Promise<number>((resolve) => worker.once('message', resolve));
const url = `http://127.0.0.1:${port}/file.bin`;

const sink = (): Writable =>
  new Writable({
    highWaterMark: 1 << 20,
    write(_chunk, _encoding, callback) {
      callback();
    },
  });

const agent = new http.Agent({ keepAlive: true });
async function plainHttp(): Promise<number> {
  let total = 0;
  for (let i = 0; i < files; i++) {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(url, { agent }, resolve).on('error', reject));
    res.on('data', (c: Buffer) => (total += c.length));
    await pipeline(res, sink());
  }
  return total;
}

const fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 5000, idleTimeoutMs: 5000, userAgent: 'ap-bench' });
async function viaFetcher(): Promise<number> {
  let total = 0;
  for (let i = 0; i < files; i++) {
    const body = await fetcher.openBody(url, { expectedSize: size });
    body.stream.on('data', (c: Buffer) => (total += c.length));
    await pipeline(body.stream, sink());
  }
  return total;
}

// The alternative considered: take got's underlying IncomingMessage and bypass its Duplex
// (needs strictContentLength off and got's 'readable' listener removed). Kept for comparison.
const gotRaw = got.extend({ agent: { http: agent }, retry: { limit: 0 }, decompress: false, strictContentLength: false });
async function viaGotIncomingMessage(): Promise<number> {
  let total = 0;
  for (let i = 0; i < files; i++) {
    const stream = gotRaw.stream(url);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => stream.once('response', resolve).once('error', reject));
    res.removeAllListeners('readable');
    res.on('data', (c: Buffer) => (total += c.length));
    await pipeline(res, sink());
  }
  return total;
}

const modes: Record<string, () => Promise<number>> = {
  'plain http.get': plainHttp,
  '@ap/fetch (got stream)': viaFetcher,
  'got, raw IncomingMessage': viaGotIncomingMessage,
};
const results: Record<string, number[]> = {};
const busy: Record<string, number[]> = {}; // client event-loop busy ms per GB (the cost on our thread)
for (const run of Object.values(modes)) await run(); // warm-up (JIT, sockets)
for (let r = 0; r < reps; r++) {
  for (const [name, run] of Object.entries(modes)) {
    const t0 = process.hrtime.bigint();
    const elu0 = performance.eventLoopUtilization();
    const bytes = await run();
    const elu = performance.eventLoopUtilization(elu0);
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    (busy[name] ??= []).push(elu.active / (bytes / 1e9));
    if (bytes !== files * size) throw new Error(`${name}: got ${bytes} bytes, expected ${files * size}`);
    (results[name] ??= []).push(bytes / 1e6 / seconds);
  }
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const base = median(results['plain http.get'] ?? []);
console.log(`${files} x ${mib} MiB over loopback, ${reps} interleaved runs (MB/s, median [min-max]; client event-loop busy ms per GB):`);
for (const [name, xs] of Object.entries(results)) {
  const m = median(xs);
  console.log(`  ${name.padEnd(26)} ${m.toFixed(0).padStart(6)}  [${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}]  ratio ${(m / base).toFixed(2)}  busy ${median(busy[name] ?? []).toFixed(0)} ms/GB`);
}
fetcher.close();
agent.destroy();
worker.postMessage('stop');
