// Encrypted downloads bench (issue 44 item 12): user B's GET /usage and login latency while
// user A downloads 4 encrypted (AES-256) stream ZIPs of ENTRIES small entries each, beside the
// same requests with nothing running. Goal: B's requests <= 250 ms (ENTRIES=3000, quiet machine).
//   ENTRIES=3000 pnpm bench:encrypted
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBenchEnv } from './lib/env';

const ENTRIES = Number(process.env.ENTRIES ?? 3000);
const DOWNLOADS = 4;

const bench = await startBenchEnv({ ALLOW_PRIVATE_URLS: 'true', LOG_LEVEL: 'silent' });
const { createUser, call, waitForJob, download } = await import('../test/helpers');
const { startStack } = await import('../test/stack');

// 64-byte bodies, the same for every path.
const origin = http.createServer((req, res) => {
  res.writeHead(200, { 'content-length': 64, 'content-type': 'application/octet-stream' });
  res.end(req.method === 'HEAD' ? undefined : Buffer.alloc(64, 7));
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', () => resolve()));
const base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const stack = await startStack({ STREAM_DOWNLOADS_PER_USER: '8' });
try {
  const a = await createUser(stack.ctx, { plan: 'scale' });
  const password = 'bench light user';
  const b = await createUser(stack.ctx, { plan: 'free', password });
  const files = Array.from({ length: ENTRIES }, (_, i) => ({ url: `${base}/f${i}.bin` }));
  const links: string[] = [];
  for (let i = 0; i < DOWNLOADS; i++) {
    const res = await call(stack.url, 'POST', '/jobs', { key: a.apiKey, body: { mode: 'stream', files, encryption: { method: 'aes-256', password: `bench heavy ${i}` } } });
    const job = await waitForJob(stack.url, a.apiKey, res.body.job_id, ['completed'], 600_000);
    links.push(job.zips[0].download_url);
  }
  const measure = async (until: () => boolean, minRounds: number) => {
    const usage: number[] = [];
    const login: number[] = [];
    for (let round = 0; round < minRounds || until(); round++) {
      let t0 = performance.now();
      await call(stack.url, 'GET', '/usage', { key: b.apiKey });
      usage.push(performance.now() - t0);
      t0 = performance.now();
      await call(stack.url, 'POST', '/auth/login', { body: { email: b.email, password } });
      login.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 50));
    }
    return { usage, login };
  };
  const idle = await measure(() => false, 20);
  let running = true;
  const t0 = performance.now();
  const downloads = Promise.all(links.map((link) => download(link))).finally(() => (running = false));
  const during = await measure(() => running, 5);
  await downloads;
  const seconds = (performance.now() - t0) / 1000;
  console.log(`A: ${DOWNLOADS} encrypted stream downloads of ${ENTRIES} entries (${seconds.toFixed(1)} s); B: GET /usage and login, sequential`);
  console.log('requests | p50 idle (ms) | p95 idle | max idle | p50 during | p95 during | max during | n during');
  for (const kind of ['usage', 'login'] as const) {
    const row = [pct(idle[kind], 50), pct(idle[kind], 95), Math.max(...idle[kind]), pct(during[kind], 50), pct(during[kind], 95), Math.max(...during[kind])].map((v) => v.toFixed(0));
    console.log(`${kind} | ${row.join(' | ')} | ${during[kind].length}`);
  }
} finally {
  await stack.close();
  origin.closeAllConnections();
  origin.close();
  await bench.close();
}
process.exit(0);
