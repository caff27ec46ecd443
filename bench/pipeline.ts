// Stored pipeline bench (issue 4). Prints four figures, each against a baseline measured in
// the same run on the same loopback origin (a separate process):
//   (a) packing core: fetch -> ZIP -> null sink, over fetch -> null sink (64 x 16 MiB)
//   (b) end to end: a stored job, POST -> completed, over a plain fetch + multipart upload of
//       the same bytes into the same S3
//   (c) the packer service's peak RSS while packing one 4 GiB bin
//   (d) preparing time for 20,000 URLs (HEAD probes and bin layout)
//   pnpm bench:pipeline   (FILES=64 FILE_MIB=16 BIG_GIB=4 PREPARE_URLS=20000 to change; ONLY=a|b|c|d to run some figures alone, e.g. ONLY=bc)
import { execFileSync } from 'node:child_process';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { method as crc32Method } from '@ap/crc32';
import { newZipFile } from '@ap/zip';
import { loadConfig } from '@ap/config';
import { createUserWithKey } from '@ap/api';
import { createDb } from '@ap/db';
import { createFetcher } from '@ap/fetch';
import { writeArchive } from '@ap/packer';
import { createObjectStore } from '@ap/storage';
import { fetcherOptions, storageConfig } from '@ap/runtime';
import { freePort } from '../scripts/embedded';
import { cpuSeconds, minorFaults, ms, pct, peakRssMiB, resetPeakRss, startBenchEnv, startOrigin, startService } from './lib/env';

const FILES = Number(process.env.FILES ?? 64);
const FILE_BYTES = Number(process.env.FILE_MIB ?? 16) * 1024 * 1024;
const BIG_BYTES = Number(process.env.BIG_GIB ?? 4) * 1024 ** 3;
const PREPARE_URLS = Number(process.env.PREPARE_URLS ?? 20_000);
const ONLY = process.env.ONLY;
const runs = (figure: string) => !ONLY || ONLY.includes(figure);
const B_ROUNDS = 6;
const CORE_ROUNDS = 15;
class Done extends Error {}
const MBps = (bytes: number, millis: number) => `${((bytes / millis) * 1000 / 1e6).toFixed(0)} MB/s`;

const origin = await startOrigin();
const bench = await startBenchEnv();
const config = loadConfig();
const fetcher = createFetcher(fetcherOptions(config));
const urls = Array.from({ length: FILES }, (_, i) => `${origin.url}/blob/${FILE_BYTES}/${i}/f${i}.bin`);
const totalBytes = FILES * FILE_BYTES;
const gib = totalBytes / 2 ** 30;
/** This process's CPU seconds so far. */
const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const nullSink = () => new Writable({ write: (_c, _e, cb) => cb() });
const children: { kill(): unknown }[] = [origin.child];

try {
  // (a) packing core ----------------------------------------------------------------------
  if (runs('a')) {
    // This process's CPU seconds per GiB on each side, beside the times: a wall-time ratio on
    // 2 shared cores moves with whatever else runs, the work per byte much less.
    const cpu = { fetch: [] as number[], pack: [] as number[] };
    const faults = { fetch: [] as number[], pack: [] as number[] };
    const ownFaults = () => process.resourceUsage().minorPageFault;
    const plainFetch = async () => {
      const [t0, c0, f0] = [process.hrtime.bigint(), ownCpu(), ownFaults()];
      for (const url of urls) {
        const body = await fetcher.openBody(url, { expectedSize: FILE_BYTES });
        await pipeline(body.stream, nullSink());
      }
      cpu.fetch.push((ownCpu() - c0) / gib);
      faults.fetch.push((ownFaults() - f0) / gib);
      return ms(t0);
    };
    const packToNull = async () => {
      const [t0, c0, f0] = [process.hrtime.bigint(), ownCpu(), ownFaults()];
      const zip = newZipFile();
      const drained = pipeline(zip.outputStream, nullSink());
      await writeArchive(
        zip,
        urls.map((url, position) => ({ position, url, filename: null, size: BigInt(FILE_BYTES), entryName: `f${position}.bin` })),
        { fetcher, mtime: new Date(), failOnUrlError: true, archiveLimit: Infinity, signal: new AbortController().signal, onBrokenBody: async () => undefined },
      );
      zip.end();
      await drained;
      cpu.pack.push((ownCpu() - c0) / gib);
      faults.pack.push((ownFaults() - f0) / gib);
      return ms(t0);
    };
    // Each round times both and keeps their ratio: on 2 shared cores a single figure swings
    // widely, the median of paired ratios much less. A first round warms both up (JIT, origin,
    // sockets) untimed, and rounds alternate which of the two goes first.
    await plainFetch();
    await packToNull();
    const fetchTimes: number[] = [];
    const packTimes: number[] = [];
    const ratios: number[] = [];
    for (let r = 0; r < CORE_ROUNDS; r++) {
      if (r % 2 === 0) {
        fetchTimes.push(await plainFetch());
        packTimes.push(await packToNull());
      } else {
        packTimes.push(await packToNull());
        fetchTimes.push(await plainFetch());
      }
      ratios.push(fetchTimes.at(-1)! / packTimes.at(-1)!);
    }
    console.log(`(a) packing core, ${FILES} x ${FILE_BYTES / 2 ** 20} MiB, ${CORE_ROUNDS} paired rounds after a warm-up (CRC-32: ${crc32Method}):`);
    console.log(`    fetch -> null        median ${MBps(totalBytes, pct(fetchTimes, 50))}, best ${MBps(totalBytes, Math.min(...fetchTimes))}`);
    console.log(`    fetch -> ZIP -> null median ${MBps(totalBytes, pct(packTimes, 50))}, best ${MBps(totalBytes, Math.min(...packTimes))}`);
    console.log(`    ratio: median ${pct(ratios, 50).toFixed(2)} (per round ${ratios.map((x) => x.toFixed(2)).join(' ')})  (target >= 0.90)`);
    // The warm-up round is left out of the CPU medians.
    const [fetchCpu, packCpu] = [pct(cpu.fetch.slice(1), 50), pct(cpu.pack.slice(1), 50)];
    console.log(`    this process's CPU s/GiB, medians: fetch -> null ${fetchCpu.toFixed(3)}, fetch -> ZIP -> null ${packCpu.toFixed(3)} (ratio ${(fetchCpu / packCpu).toFixed(2)})`);
    console.log(`    this process's page faults/GiB, medians: fetch -> null ${pct(faults.fetch.slice(1), 50).toFixed(0)}, fetch -> ZIP -> null ${pct(faults.pack.slice(1), 50).toFixed(0)}`);
  }
  if (!runs('b') && !runs('c') && !runs('d')) throw new Done();

  // The real services, each its own process, on this run's database, Redis and S3.
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const serviceEnv = { ...process.env, ...bench.env, PORT: String(port), PUBLIC_BASE_URL: apiUrl, PACKER_CONCURRENCY: '1' };
  const api = await startService('api', serviceEnv);
  const preparer = await startService('preparer', serviceEnv);
  children.push(api, preparer);
  const db = createDb(config.DATABASE_URL);
  const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const post = async (body: unknown) => {
    const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  // Polled as a client would: each poll costs the API and Postgres CPU on the 2 shared cores.
  const waitFor = async (jobId: string, done: (status: string) => boolean, pollMs = 250) => {
    for (;;) {
      const res = await fetch(`${apiUrl}/jobs/${jobId}`, { headers: { 'x-api-key': apiKey } });
      if (res.ok) {
        const { job } = (await res.json()) as { job: { status: string; completed_at: string | null; errors?: unknown } };
        if (done(job.status)) return job;
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  };
  for (let i = 0; i < 100; i++) {
    if (await fetch(`${apiUrl}/healthz`).then((r) => r.ok, () => false)) break;
    await new Promise((r) => setTimeout(r, 100));
  }

  const packer = await startService('packer', serviceEnv);
  children.push(packer);
  await new Promise((r) => setTimeout(r, 3000)); // let it load and connect
  const idleRss = peakRssMiB(packer.pid!);

  // Each measured run starts alike: the previous run's object deleted and its bytes flushed to
  // disk (`sync`), so no run pays for the one before it in s3rver's page-cache writeback.
  const store = createObjectStore(storageConfig(config));
  const settle = async (key: string) => {
    await store.deleteMany([key]);
    execFileSync('sync');
  };

  // (b) end to end -------------------------------------------------------------------------
  if (runs('b')) {
    // Rounds alternate which of the two goes first, and the median of the paired ratios is kept.
    // CPU seconds per GiB of the process that moves the bytes (this one for the plain run, the
    // packer for the job) and of s3rver, which bounds both on these machines.
    const cpu = { plain: [] as number[], packer: [] as number[], s3Plain: [] as number[], s3Job: [] as number[] };
    const plainUpload = async (round: number) => {
      const key = `bench/plain-${round}.bin`;
      const [c0, s0] = [ownCpu(), cpuSeconds(bench.s3Pid)];
      const t0 = process.hrtime.bigint();
      const body = new PassThrough({ highWaterMark: 1024 * 1024 });
      const uploaded = store.upload(key, body);
      // The same bodies, back to back, into one upload: what the packer does, minus the ZIP.
      const bodies = (async function* () {
        for (const url of urls) yield* (await fetcher.openBody(url, { expectedSize: FILE_BYTES })).stream;
      })();
      await Promise.all([pipeline(bodies, body), uploaded]);
      const took = ms(t0);
      cpu.plain.push((ownCpu() - c0) / gib);
      cpu.s3Plain.push((cpuSeconds(bench.s3Pid) - s0) / gib);
      await settle(key);
      return took;
    };
    const storedJob = async () => {
      const [c0, s0] = [cpuSeconds(packer.pid!), cpuSeconds(bench.s3Pid)];
      const t0 = Date.now();
      const jobId = await post({ files: urls.map((url) => ({ url })) });
      const job = await waitFor(jobId, (s) => s === 'completed' || s === 'failed');
      if (job.status !== 'completed') throw new Error(`job ${jobId} failed: ${JSON.stringify(job.errors)}`);
      // Up to the job's own completion time (same clock), not to the poll that saw it.
      const took = Date.parse(job.completed_at!) - t0;
      cpu.packer.push((cpuSeconds(packer.pid!) - c0) / gib);
      cpu.s3Job.push((cpuSeconds(bench.s3Pid) - s0) / gib);
      await settle((await db.zip.findFirstOrThrow({ where: { jobId } })).objectKey!);
      return took;
    };
    execFileSync('sync');
    const uploadTimes: number[] = [];
    const jobTimes: number[] = [];
    const ratios: number[] = [];
    for (let r = 0; r < B_ROUNDS; r++) {
      if (r % 2 === 0) {
        uploadTimes.push(await plainUpload(r));
        jobTimes.push(await storedJob());
      } else {
        jobTimes.push(await storedJob());
        uploadTimes.push(await plainUpload(r));
      }
      ratios.push(uploadTimes.at(-1)! / jobTimes.at(-1)!);
    }
    console.log(`(b) end to end, same ${FILES} files into s3rver, ${B_ROUNDS} paired rounds (order alternating):`);
    console.log(`    fetch + multipart upload   median ${MBps(totalBytes, pct(uploadTimes, 50))}, best ${MBps(totalBytes, Math.min(...uploadTimes))}`);
    console.log(`    stored job POST->completed median ${MBps(totalBytes, pct(jobTimes, 50))}, best ${MBps(totalBytes, Math.min(...jobTimes))}`);
    console.log(`    ratio: median ${pct(ratios, 50).toFixed(2)} (per round ${ratios.map((x) => x.toFixed(2)).join(' ')})  (target >= 0.90)`);
    const s = (xs: number[]) => pct(xs, 50).toFixed(2);
    console.log(`    CPU s/GiB, medians: plain run ${s(cpu.plain)} (this process) + s3rver ${s(cpu.s3Plain)}; stored job ${s(cpu.packer)} (packer) + s3rver ${s(cpu.s3Job)}`);
  }

  // (c) peak RSS of the packer on one 4 GiB bin ---------------------------------------------
  if (runs('c')) {
    const parts = 16;
    const bigUrls = Array.from({ length: parts }, (_, i) => `${origin.url}/blob/${BIG_BYTES / parts}/${100 + i}/big${i}.bin`);
    // The peak of this bin alone, on a packer that may have packed others before.
    resetPeakRss(packer.pid!);
    const before = peakRssMiB(packer.pid!);
    const [cpu0, faults0] = [cpuSeconds(packer.pid!), minorFaults(packer.pid!)];
    const t0 = process.hrtime.bigint();
    const bigJob = await post({ files: bigUrls.map((url) => ({ url })) });
    const big = await waitFor(bigJob, (s) => s === 'completed' || s === 'failed');
    if (big.status !== 'completed') throw new Error(`4 GiB job failed: ${JSON.stringify(big.errors)}`);
    const bigMs = ms(t0);
    const bigGib = BIG_BYTES / 2 ** 30;
    const peak = peakRssMiB(packer.pid!);
    console.log(
      `(c) one ${BIG_BYTES / 1024 ** 3} GiB bin (${parts} files): packer peak RSS ${peak.toFixed(0)} MiB = ${((peak * 2 ** 20) / 1e6).toFixed(0)} MB (target <= 200 MB); ` +
        `RSS when it started ${before.toFixed(0)} MiB (${runs('b') ? 'after (b)' : 'a fresh packer'}), idle after start ${idleRss.toFixed(0)} MiB; ${MBps(BIG_BYTES, bigMs)}, ` +
        `packer CPU ${((cpuSeconds(packer.pid!) - cpu0) / bigGib).toFixed(2)} s/GiB, ${((minorFaults(packer.pid!) - faults0) / bigGib).toFixed(0)} page faults/GiB`,
    );
    await settle((await db.zip.findFirstOrThrow({ where: { jobId: bigJob } })).objectKey!);
  }

  // (d) preparing 20,000 URLs ---------------------------------------------------------------
  if (runs('d')) {
    packer.kill('SIGTERM'); // only the preparer's part is timed
    const small = Array.from({ length: PREPARE_URLS }, (_, i) => ({ url: `${origin.url}/blob/${1000 + (i % 5000)}/${i}/s${i}.bin` }));
    const t1 = process.hrtime.bigint();
    const split = await post({ files: small, max_zip_size_bytes: 104_857_600 });
    const prepared = await waitFor(split, (s) => s !== 'preparing', 50);
    console.log(`(d) preparing ${PREPARE_URLS} URLs (POST -> ${prepared.status}): ${(ms(t1) / 1000).toFixed(2)} s (target <= 20 s)`);
  }

  await db.$disconnect();
} catch (err) {
  if (!(err instanceof Done)) throw err;
} finally {
  for (const c of children) c.kill();
  fetcher.close();
  await bench.close();
}
process.exit(0);
