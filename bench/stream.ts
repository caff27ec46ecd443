// Stream-mode bench. Prints three figures; the API and preparer run as their own processes
// against this run's database, Redis and the loopback origin (also its own process):
//   (a) throughput: a stream ZIP downloaded through GET /download, over a plain proxy (its own
//       process, same fetcher) sending the same origin bytes without a ZIP (FILES x FILE_MIB)
//   (b) resume: a stream ZIP of one RESUME_GIB file cut at 90%, then resumed with Range +
//       If-Range: origin bytes fetched for the resume over the bytes remaining
//   (c) the API's peak RSS with CONCURRENT downloads of a stream ZIP at once (RSS_FILES x FILE_MIB)
//   pnpm bench:stream   (FILES=16 FILE_MIB=64 RESUME_GIB=2 CONCURRENT=50 RSS_FILES=4 to change; ONLY=a|b|c)
import http from 'node:http';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createUserWithKey } from '@ap/api';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { freePort } from '../scripts/embedded';
import { firstLine, ms, peakRssMiB, spawnTs, startBenchEnv, startOrigin, startService } from './lib/env';

const MiB = 1024 * 1024;
const FILES = Number(process.env.FILES ?? 16);
const FILE_BYTES = Number(process.env.FILE_MIB ?? 64) * MiB;
const RESUME_BYTES = Math.round(Number(process.env.RESUME_GIB ?? 2) * 1024 * MiB);
const CONCURRENT = Number(process.env.CONCURRENT ?? 50);
const RSS_FILES = Number(process.env.RSS_FILES ?? 4);
const ONLY = process.env.ONLY;
const ROUNDS = 3;
const MBps = (bytes: number, millis: number) => `${(((bytes / millis) * 1000) / 1e6).toFixed(0)} MB/s`;

const origin = await startOrigin();
const bench = await startBenchEnv();
const config = loadConfig();
const children: { kill(): unknown }[] = [origin.child];
const db = createDb(config.DATABASE_URL);

/** Reads a URL to the end into nothing; resolves with the byte count. */
function drain(url: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers, agent: false }, async (res) => {
        let bytes = 0;
        await pipeline(res, new Writable({ write: (c: Buffer, _e, cb) => ((bytes += c.length), cb()) })).catch(reject);
        resolve({ status: res.statusCode!, bytes });
      })
      .on('error', reject);
  });
}

/** Reads `limit` bytes of a URL, then drops the connection. */
function readThenCut(url: string, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false }, (res) => {
      let got = 0;
      res.on('data', (c: Buffer) => {
        got += c.length;
        if (got >= limit) {
          req.destroy();
          resolve(String(res.headers.etag));
        }
      });
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

const originBytes = async () => ((await (await fetch(`${origin.url}/stats`)).json()) as { bytes: number }).bytes;

try {
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const serviceEnv = { ...process.env, ...bench.env, PORT: String(port), PUBLIC_BASE_URL: apiUrl };
  const api = await startService('api', serviceEnv);
  const preparer = await startService('preparer', serviceEnv);
  const proxy = spawnTs('bench/lib/proxy-server.ts', [], { ...process.env, ORIGIN_URL: origin.url });
  children.push(api, preparer, proxy);
  const proxyUrl = (await firstLine<{ url: string }>(proxy)).url;
  const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}@example.test`, plan: 'scale', overage: true });
  for (let i = 0; i < 100; i++) {
    if (await fetch(`${apiUrl}/healthz`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const startRss = peakRssMiB(api.pid!);
  const streamZip = async (files: string[]) => {
    const res = await fetch(`${apiUrl}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ mode: 'stream', files: files.map((url) => ({ url })) }),
    });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    const { job_id } = (await res.json()) as { job_id: string };
    for (;;) {
      const r = await fetch(`${apiUrl}/jobs/${job_id}`, { headers: { 'x-api-key': apiKey } });
      const { job } = (await r.json()) as { job: { status: string; zips: { size: number; download_url: string }[] } };
      if (job.status === 'failed') throw new Error(`stream job failed: ${JSON.stringify(job)}`);
      if (job.status === 'completed') return job.zips[0]!;
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  // (a) throughput ------------------------------------------------------------------------
  if (!ONLY || ONLY === 'a') {
    const zip = await streamZip(Array.from({ length: FILES }, (_, i) => `${origin.url}/blob/${FILE_BYTES}/${i}/f${i}.bin`));
    const proxyTimes: number[] = [];
    const streamTimes: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      let t0 = process.hrtime.bigint();
      const p = await drain(`${proxyUrl}/concat/${FILE_BYTES}/${FILES}/0`);
      if (p.bytes !== FILE_BYTES * FILES) throw new Error(`proxy sent ${p.bytes}`);
      proxyTimes.push(ms(t0));
      t0 = process.hrtime.bigint();
      const s = await drain(zip.download_url);
      if (s.bytes !== zip.size) throw new Error(`stream download sent ${s.bytes} of ${zip.size}`);
      streamTimes.push(ms(t0));
    }
    const proxyBest = Math.min(...proxyTimes);
    const streamBest = Math.min(...streamTimes);
    console.log(`(a) throughput, ${FILES} x ${FILE_BYTES / MiB} MiB, best of ${ROUNDS}:`);
    console.log(`    plain proxy          ${MBps(FILES * FILE_BYTES, proxyBest)}  (${proxyBest.toFixed(0)} ms)`);
    console.log(`    stream ZIP download  ${MBps(zip.size, streamBest)}  (${streamBest.toFixed(0)} ms)`);
    console.log(`    ratio ${(proxyBest / streamBest).toFixed(2)}  (target >= 0.90)`);
  }

  // (b) resume ------------------------------------------------------------------------------
  if (!ONLY || ONLY === 'b') {
    const zip = await streamZip([`${origin.url}/blob/${RESUME_BYTES}/77/big.bin`]);
    const cut = Math.floor(zip.size * 0.9);
    const etag = await readThenCut(zip.download_url, cut);
    await new Promise((r) => setTimeout(r, 1000)); // the origin sees the close; the checkpoint is written
    const before = await originBytes();
    const t0 = process.hrtime.bigint();
    const rest = await drain(zip.download_url, { range: `bytes=${cut}-`, 'if-range': etag });
    const resumeMs = ms(t0);
    if (rest.status !== 206 || rest.bytes !== zip.size - cut) throw new Error(`resume answered ${rest.status} with ${rest.bytes} bytes`);
    const fetched = (await originBytes()) - before;
    console.log(`(b) resume of a ${(zip.size / 1024 ** 3).toFixed(2)} GiB stream ZIP at 90%: ${fetched} origin bytes for ${zip.size - cut} remaining, in ${resumeMs.toFixed(0)} ms`);
    console.log(`    ratio ${(fetched / (zip.size - cut)).toFixed(3)}  (target <= 1.2)`);
  }

  // (c) peak RSS, concurrent downloads ------------------------------------------------------
  if (!ONLY || ONLY === 'c') {
    const zip = await streamZip(Array.from({ length: RSS_FILES }, (_, i) => `${origin.url}/blob/${FILE_BYTES}/${500 + i}/r${i}.bin`));
    await drain(zip.download_url); // CRCs learned, like any download after the first
    const idle = peakRssMiB(api.pid!);
    const t0 = process.hrtime.bigint();
    const results = await Promise.all(Array.from({ length: CONCURRENT }, () => drain(zip.download_url)));
    const took = ms(t0);
    const bad = results.filter((r) => r.status !== 200 || r.bytes !== zip.size).length;
    console.log(
      `(c) ${CONCURRENT} concurrent downloads of a ${(zip.size / MiB).toFixed(0)} MiB stream ZIP: api peak RSS ${peakRssMiB(api.pid!).toFixed(0)} MiB (after start ${startRss.toFixed(0)} MiB, peak before the ${CONCURRENT} ${idle.toFixed(0)} MiB), ${bad} failed, aggregate ${MBps(zip.size * CONCURRENT, took)}`,
    );
    // The same bytes through the plain proxy, for scale: what Node holds for this much traffic.
    const proxyBefore = peakRssMiB(proxy.pid!);
    await Promise.all(Array.from({ length: CONCURRENT }, () => drain(`${proxyUrl}/concat/${FILE_BYTES}/${RSS_FILES}/500`)));
    console.log(`    plain proxy, ${CONCURRENT} concurrent of the same bytes: peak RSS ${peakRssMiB(proxy.pid!).toFixed(0)} MiB (before ${proxyBefore.toFixed(0)} MiB)`);
  }
} finally {
  for (const c of children) c.kill();
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
