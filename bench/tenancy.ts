// Fair share bench: user A queues 40 jobs of 2 x 8 MiB from an origin serving 8 MB/s per body;
// then user B's job of one 2 KB file. B's time to `completed` under A's backlog, against B's
// time on an idle fleet and one A bin's duration, with 1, 2 and 4 packer slots.
//   pnpm bench:tenancy
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBenchEnv } from './lib/env';

const MiB = 1024 * 1024;
const RATE_BYTES_PER_S = 8_000_000;
const A_JOBS = 40;

const bench = await startBenchEnv({ ALLOW_PRIVATE_URLS: 'true', LOG_LEVEL: 'silent' });
const { createUser, call, waitForJob } = await import('../test/helpers');
const { startPackerWorker, startStack } = await import('../test/stack');
const { metrics } = await import('@ap/service-kit');

/** Bins packed so far in this process and the seconds they took (archive_bin_duration_seconds). */
async function binsPacked(): Promise<{ count: number; seconds: number }> {
  const { values } = await metrics.binDuration.get();
  const of = (name: string) => values.find((v) => v.metricName === name)?.value ?? 0;
  return { count: of('archive_bin_duration_seconds_count'), seconds: of('archive_bin_duration_seconds_sum') };
}

// Bodies of the asked size (`/<bytes>.bin`), paced at RATE_BYTES_PER_S each.
const origin = http.createServer((req, res) => {
  const size = Number(/\/(\d+)\.bin/.exec(req.url ?? '')?.[1] ?? 0);
  res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' });
  if (req.method === 'HEAD') return void res.end();
  const chunk = Buffer.alloc(64 * 1024, 7);
  let sent = 0;
  const started = Date.now();
  const pump = () => {
    if (res.destroyed) return;
    const allowed = Math.min(size, ((Date.now() - started) / 1000) * RATE_BYTES_PER_S + chunk.length);
    while (sent < allowed) {
      const n = Math.min(chunk.length, size - sent);
      sent += n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', pump);
    }
    if (sent >= size) return void res.end();
    setTimeout(pump, 10);
  };
  pump();
});
await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', () => resolve()));
const base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
const aFiles = [{ url: `${base}/${8 * MiB}.bin`, filename: 'a1.bin' }, { url: `${base}/${8 * MiB}.bin`, filename: 'a2.bin' }];
const bFiles = [{ url: `${base}/2000.bin` }];

async function timeJob(url: string, key: string, files: unknown[]): Promise<number> {
  const t0 = Date.now();
  const res = await call(url, 'POST', '/jobs', { key, body: { files } });
  if (res.status !== 201) throw new Error(`POST /jobs answered ${res.status}`);
  const job = await waitForJob(url, key, res.body.job_id, ['completed', 'failed'], 600_000);
  if (job.status !== 'completed') throw new Error(`job ${job.status}`);
  return (Date.now() - t0) / 1000;
}

console.log(`A: ${A_JOBS} jobs of 2 x 8 MiB (scale plan), B: one job of 2 KB (free plan); origin ${RATE_BYTES_PER_S / 1e6} MB/s per body`);
console.log('slots | B idle (s) | A bin idle (s) | A bin under load (s) | B behind A (s) | goal: B idle + A bin under load (s) | met');
try {
  for (const slots of [1, 2, 4]) {
    const stack = await startStack({}, { workers: false });
    const { ctx } = stack;
    const worker = startPackerWorker(ctx, slots);
    try {
      const a = await createUser(ctx, { plan: 'scale' });
      const b = await createUser(ctx, { plan: 'free' });
      const bIdle = await timeJob(stack.url, b.apiKey, bFiles);
      const aBin = await timeJob(stack.url, a.apiKey, aFiles);
      for (let i = 0; i < A_JOBS; i++) {
        const res = await call(stack.url, 'POST', '/jobs', { key: a.apiKey, body: { files: aFiles } });
        if (res.status !== 201) throw new Error(`POST /jobs answered ${res.status}`);
      }
      // B arrives once A's bins fill every slot.
      const deadline = Date.now() + 60_000;
      while ((await ctx.db.zip.count({ where: { status: 'processing', job: { userId: a.userId } } })) < Math.min(slots, 8) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      const before = await binsPacked();
      const bLoaded = await timeJob(stack.url, b.apiKey, bFiles);
      // A's bins that ended meanwhile (B's own, under a millisecond of packing, is left out).
      const deadline2 = Date.now() + 60_000;
      while ((await binsPacked()).count - before.count < 2 && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 50));
      const after = await binsPacked();
      const aLoaded = (after.seconds - before.seconds) / Math.max(1, after.count - before.count - 1);
      const goal = bIdle + aLoaded;
      const row = [slots, bIdle, aBin, aLoaded, bLoaded, goal].map((v, i) => (i === 0 ? String(v) : v.toFixed(2)));
      console.log(`${row.join(' | ')} | ${bLoaded <= goal ? 'yes' : 'no'}`);
    } finally {
      await worker.close(true);
      await stack.close();
    }
  }
} finally {
  origin.closeAllConnections();
  origin.close();
  await bench.close();
}
process.exit(0);
