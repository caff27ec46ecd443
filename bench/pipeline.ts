// Stored pipeline bench. Prints four figures, each against a baseline measured in
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
import { newZipOutput, type ZipOutput } from '@ap/zip';
import { loadConfig } from '@ap/config';
import { createUserWithKey } from '@ap/accounts';
import { createDb, jobBins } from '@ap/db';
import { createFetcher } from '@ap/fetch';
import { writeArchive } from '@ap/archive';
import { createObjectStore } from '@ap/storage';
import { fetcherOptions, storageConfig } from '@ap/service-kit';
import { cpuSeconds, MBps, minorFaults, ms, OWN_GLIBC_TUNABLES, pct, peakRssMiB, resetPeakRss, rssFigure, startApiAndServices, startBenchEnv, startOrigin, startService } from './lib/env';
import { writeResults } from './lib/report';

/** What bench/results/pipeline.json records, figure by figure. */
const figures: Record<string, unknown> = {};

const FILES = Number(process.env.FILES ?? 64);
const FILE_BYTES = Number(process.env.FILE_MIB ?? 16) * 1024 * 1024;
const BIG_BYTES = Number(process.env.BIG_GIB ?? 4) * 1024 ** 3;
const PREPARE_URLS = Number(process.env.PREPARE_URLS ?? 20_000);
const ONLY = process.env.ONLY;
const runs = (figure: string) => !ONLY || ONLY.includes(figure);
const B_ROUNDS = 6;
const CORE_ROUNDS = 15;
class Done extends Error {}

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
    // Three sides, each this process's CPU seconds per GiB beside its time (a wall-time ratio
    // on 2 shared cores moves with whatever else runs, the work per byte much less):
    //   ahead:  fetch -> null, each next request opened where the packer opens it (the figure's
    //           baseline: the packer's own writeArchive over an archive that drops the bodies);
    //   serial: fetch -> null, one request after another (shown, not the figure);
    //   zip:    fetch -> ZIP -> null, the packer's writeArchive into its ZIP writer.
    // The ZIP side's request opened ahead costs this process CPU on loopback that a real network
    // puts on the origin's host (bench/README.md), so the figure compares it with a baseline
    // that fetches on the same schedule: what is left between the two is the ZIP's own work.
    type Side = 'ahead' | 'serial' | 'zip';
    const SIDES: Side[] = ['ahead', 'serial', 'zip'];
    const cpu: Record<Side, number[]> = { ahead: [], serial: [], zip: [] };
    const faults: Record<Side, number[]> = { ahead: [], serial: [], zip: [] };
    const times: Record<Side, number[]> = { ahead: [], serial: [], zip: [] };
    const ownFaults = () => process.resourceUsage().minorPageFault;
    const files = urls.map((url, position) => ({ position, url, filename: null, size: BigInt(FILE_BYTES), entryName: `f${position}.bin` }));
    const options = { fetcher, mtime: new Date(), failOnUrlError: true, archiveLimit: Infinity, signal: new AbortController().signal, onBrokenBody: async () => undefined };
    /** What writeArchive uses of a ZIP writer, with each body piped into a null sink. */
    const droppingArchive = () => {
      const entries: { crc32: number }[] = [];
      const addReadStreamLazy = (_name: string, _options: unknown, getStream: (cb: (err: Error | null, stream: NodeJS.ReadableStream) => void) => void) => {
        entries.push({ crc32: 0 });
        getStream((_err, stream) => stream.pipe(nullSink()));
      };
      return { entries, addReadStreamLazy } as unknown as ZipOutput;
    };
    const run: Record<Side, () => Promise<unknown>> = {
      ahead: () => writeArchive(droppingArchive(), files, options),
      serial: async () => {
        for (const url of urls) await pipeline((await fetcher.openBody(url, { expectedSize: FILE_BYTES })).stream, nullSink());
      },
      zip: async () => {
        const zip = newZipOutput(null);
        const drained = pipeline(zip.outputStream, nullSink());
        await writeArchive(zip, files, options);
        zip.end();
        await drained;
      },
    };
    const timed = async (side: Side) => {
      const [t0, c0, f0] = [process.hrtime.bigint(), ownCpu(), ownFaults()];
      await run[side]();
      times[side].push(ms(t0));
      cpu[side].push((ownCpu() - c0) / gib);
      faults[side].push((ownFaults() - f0) / gib);
    };
    // Each round times all three and keeps their ratios: on 2 shared cores a single figure
    // swings widely, the median of paired ratios much less. A first round warms them up (JIT,
    // origin, sockets) untimed; rounds rotate which side goes first.
    for (const side of SIDES) await run[side]();
    for (let r = 0; r < CORE_ROUNDS; r++) {
      for (let k = 0; k < SIDES.length; k++) await timed(SIDES[(r + k) % SIDES.length]!);
    }
    const ratios = (base: Side) => times[base].map((t, i) => t / times.zip[i]!);
    const median = (xs: number[]) => pct(xs, 50);
    const line = (label: string, side: Side) =>
      `    ${label.padEnd(60)} median ${MBps(totalBytes, median(times[side]))}, best ${MBps(totalBytes, Math.min(...times[side]))}; CPU ${median(cpu[side]).toFixed(3)} s/GiB, ${median(faults[side]).toFixed(0)} page faults/GiB`;
    console.log(`(a) packing core, ${FILES} x ${FILE_BYTES / 2 ** 20} MiB, ${CORE_ROUNDS} rounds after a warm-up (CRC-32: ${crc32Method}; this process's GLIBC_TUNABLES: ${OWN_GLIBC_TUNABLES}):`);
    console.log(line('fetch -> null, next request opened ahead as the packer does', 'ahead'));
    console.log(line('fetch -> ZIP -> null, the packer\'s writeArchive into its writer', 'zip'));
    console.log(line('fetch -> null, one request after another', 'serial'));
    console.log(`    ratio: median ${median(ratios('ahead')).toFixed(2)} (per round ${ratios('ahead').map((x) => x.toFixed(2)).join(' ')}; CPU ${(median(cpu.ahead) / median(cpu.zip)).toFixed(2)})  (target >= 0.90)`);
    console.log(`    against one request after another: median ${median(ratios('serial')).toFixed(2)} (CPU ${(median(cpu.serial) / median(cpu.zip)).toFixed(2)})`);
    figures.a = { zipMBps: (totalBytes / median(times.zip)) * 1000 / 1e6, baselineMBps: (totalBytes / median(times.ahead)) * 1000 / 1e6, ratio: median(ratios('ahead')), ratioToSerial: median(ratios('serial')), target: 0.9 };
  }
  if (!runs('b') && !runs('c') && !runs('d')) {
    writeResults({ bench: 'pipeline', params: { FILES, FILE_MIB: FILE_BYTES / 2 ** 20, ONLY: 'a' }, figures });
    throw new Done();
  }

  // The real services, each its own process, on this run's database, Redis and S3.
  const { apiUrl, children: services, env: serviceEnv } = await startApiAndServices(bench, ['preparer'], { PACKER_CONCURRENCY: '1' });
  children.push(...services);
  const db = createDb(config.DATABASE_URL);
  const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const post = async (body: unknown) => {
    const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  // Polled as a client would: each poll costs the API and Postgres CPU on the 2 shared cores.
  const waitFor = async (jobId: string, done: (status: string) => boolean) => {
    for (;;) {
      const res = await fetch(`${apiUrl}/jobs/${jobId}`, { headers: { 'x-api-key': apiKey } });
      if (res.ok) {
        const { job } = (await res.json()) as { job: { status: string; completed_at: string | null; errors?: unknown } };
        if (done(job.status)) return job;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  };

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
      await settle((await jobBins(db, jobId))[0]!.objectKey!);
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
    figures.b = { jobMBps: (totalBytes / pct(jobTimes, 50)) * 1000 / 1e6, baselineMBps: (totalBytes / pct(uploadTimes, 50)) * 1000 / 1e6, ratio: pct(ratios, 50), target: 0.9 };
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
      `(c) one ${BIG_BYTES / 1024 ** 3} GiB bin (${parts} files): packer peak RSS ${rssFigure(peak)} (target <= 200 MB); ` +
        `RSS when it started ${before.toFixed(0)} MiB (${runs('b') ? 'after (b)' : 'a fresh packer'}), idle after start ${idleRss.toFixed(0)} MiB; ${MBps(BIG_BYTES, bigMs)}, ` +
        `packer CPU ${((cpuSeconds(packer.pid!) - cpu0) / bigGib).toFixed(2)} s/GiB, ${((minorFaults(packer.pid!) - faults0) / bigGib).toFixed(0)} page faults/GiB`,
    );
    figures.c = { packerPeakRssMB: (peak * 2 ** 20) / 1e6, targetMB: 200, MBps: (BIG_BYTES / bigMs) * 1000 / 1e6 };
    await settle((await jobBins(db, bigJob))[0]!.objectKey!);
  }

  // (d) preparing 20,000 URLs ---------------------------------------------------------------
  if (runs('d')) {
    packer.kill('SIGTERM'); // only the preparer's part is timed
    const small = Array.from({ length: PREPARE_URLS }, (_, i) => ({ url: `${origin.url}/blob/${1000 + (i % 5000)}/${i}/s${i}.bin` }));
    const t1 = process.hrtime.bigint();
    const split = await post({ files: small, max_zip_size_bytes: 104_857_600 });
    // Polled every 50 ms through the job list (the newest job first): a status read. The full
    // job (GET /jobs/:id) carries all 20,000 files, ~1.5 MB; read 20 times a second, it kept
    // the API and Postgres busier than the preparer on the 2 shared cores.
    let status = 'preparing';
    while (status === 'preparing') {
      await new Promise((r) => setTimeout(r, 50));
      const res = await fetch(`${apiUrl}/jobs?limit=1`, { headers: { 'x-api-key': apiKey } });
      const [newest] = ((await res.json()) as { jobs: { id: string; status: string }[] }).jobs;
      if (newest?.id !== split) throw new Error(`GET /jobs: the newest job is ${newest?.id}, not ${split}`);
      status = newest.status;
    }
    const preparedS = ms(t1) / 1000;
    console.log(`(d) preparing ${PREPARE_URLS} URLs (POST -> ${status}): ${preparedS.toFixed(2)} s (target <= 20 s)`);
    figures.d = { seconds: preparedS, targetSeconds: 20 };
  }

  await db.$disconnect();
  writeResults({ bench: 'pipeline', params: { FILES, FILE_MIB: FILE_BYTES / 2 ** 20, BIG_GIB: BIG_BYTES / 1024 ** 3, PREPARE_URLS, ONLY: ONLY ?? 'abcd' }, figures });
} catch (err) {
  if (!(err instanceof Done)) throw err;
} finally {
  for (const c of children) c.kill();
  fetcher.close();
  await bench.close();
}
process.exit(0);
