// Distant-origin bench. An origin in its own process answers each request
// after 40 ms and sends at most 25 MB/s per connection (bench/lib/origin-server.ts with ORIGIN_LATENCY_MS and ORIGIN_RATE_MBPS).
// For (1) 2,000 files x 256 KiB and (2) 8 files x 256 MiB it prints, each as a ratio to
// `curl --parallel --parallel-immediate --parallel-max 8` fetching the same URLs into /dev/null in the same run:
//   writer: the packer's archive writer (writeArchive -> ZIP writer -> null sink), in this process;
//   stored: a stored job end to end (POST -> its completed_at), the real services as
//           processes, with where its time went (preparing, packing, completing) and, as the
//           ceiling s3rver puts on it, a plain multipart upload of the same size from this
//           process (the packer's own upload code, from memory: no fetch, no ZIP), and the
//           ratio without the time s3rver took to join the job's parts into one file on
//           completion (timed in the s3rver process; S3 and MinIO do not copy the object there);
//   stream: a stream job's ZIP downloaded whole from the API;
// Each case runs for each validator kind of the origin's files (VALIDATORS: a strong ETag, a
// Last-Modified only, none: no body can then be split into ranges, and the bodies ahead spill to
// disk), with the bytes the packer (stored) and the API (stream) spilled and their peak on disk.
// For (2) also one curl per file one after another (SERIAL=0: not); the packer's peak RSS during each case;
// and all of it again with fetch concurrency 1 (FETCH_CONCURRENCY=1), so the gain shows.
// Then (3) the archive writer's time against the file count (FILE_COUNTS of FILE_KIB each) at
// each concurrency, beside curl's. It writes bench/results/origins.json and three charts:
// throughput against fetch concurrency, time against file count, the packer's RSS over each
// stored job (bench/charts/origins-*.svg).
//   pnpm bench:origins   (SMALL_FILES=2000 SMALL_KIB=256 BIG_FILES=8 BIG_MIB=256 CONCURRENCY=8,1
//                         FILE_COUNTS=100,300,1000 FILE_KIB=64
//                         ONLY=1|2|3 LATENCY_MS=40 RATE_MBPS=25 VALIDATORS=etag,lm,none SERIAL=1 to change)
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import http from 'node:http';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { createFetcher, freeChunk, SpillArea } from '@ap/fetch';
import { fetcherOptions, storageConfig } from '@ap/service-kit';
import { createObjectStore, partSizeFor } from '@ap/storage';
import { firstLine, MBps, ms, peakRssMiB, rate, resetPeakRss, rssFigure, spawnTs, startApiAndServices, startBenchEnv } from './lib/env';
import { describeLoad, sampleOrigin } from './lib/origin-stats';
import { curlToNull, writeArchiveToNull } from './lib/baselines';
import { sampleRss, writeChart, writeResults } from './lib/report';
import { sampleSpill, spillFigure } from './lib/spill-stats';
import type { Series } from './lib/svg';

const KiB = 1024;
const MiB = 1024 * KiB;
const SMALL_FILES = Number(process.env.SMALL_FILES ?? 2000);
const SMALL_BYTES = Number(process.env.SMALL_KIB ?? 256) * KiB;
const BIG_FILES = Number(process.env.BIG_FILES ?? 8);
const BIG_BYTES = Number(process.env.BIG_MIB ?? 256) * MiB;
const CONCURRENCIES = (process.env.CONCURRENCY ?? '8,1').split(',').map(Number);
const FILE_COUNTS = (process.env.FILE_COUNTS ?? '100,300,1000').split(',').map(Number);
const FILE_BYTES = Number(process.env.FILE_KIB ?? 64) * KiB;
const ONLY = process.env.ONLY;
const VALIDATORS = (process.env.VALIDATORS ?? 'etag,lm,none').split(',');
const SERIAL = process.env.SERIAL !== '0';
const VALIDATOR_NAMES: Record<string, string> = { etag: 'strong ETag', lm: 'Last-Modified only', none: 'no validators' };
/** The services' spill areas (FETCH_SPILL_DIR), sampled per case. */
const spillRoot = mkdtempSync(join(tmpdir(), 'bench-origins-spill-'));

const originChild = spawnTs('bench/lib/origin-server.ts', [], { ...process.env, ORIGIN_LATENCY_MS: process.env.LATENCY_MS ?? '40', ORIGIN_RATE_MBPS: process.env.RATE_MBPS ?? '25' });
const origin = { url: (await firstLine<{ url: string }>(originChild)).url, child: originChild };
const bench = await startBenchEnv();
const config = loadConfig();
const db = createDb(config.DATABASE_URL);
const children: { kill(): unknown }[] = [origin.child];
const store = createObjectStore(storageConfig(config));
/** Each upload starts alike: the previous object deleted and the machine's dirty pages (Postgres's among them) flushed to disk. */
const settle = async (key: string) => {
  await store.deleteMany([key]);
  execFileSync('sync');
};

/** How long the store took to answer the last CompleteMultipartUpload (s3rver joins the parts into one file there). */
let completedInMs = 0;
store.client.middlewareStack.add(
  (next, context) => async (args) => {
    const t0 = process.hrtime.bigint();
    try {
      return await next(args);
    } finally {
      if (context.commandName === 'CompleteMultipartUploadCommand') completedInMs = ms(t0);
    }
  },
  { step: 'initialize', name: 'timeCompletion' },
);

/** A plain multipart upload of `bytes` from memory, as the packer uploads (same part size, parts in flight); the ms it took, and the store's completion in it. */
async function plainUpload(bytes: number): Promise<{ uploadMs: number; completionMs: number }> {
  const block = randomBytes(16 * MiB);
  let sent = 0;
  const source = new Readable({
    read() {
      const n = Math.min(64 * KiB, bytes - sent);
      if (n === 0) return void this.push(null);
      const at = sent % (block.length - 64 * KiB);
      sent += n;
      // A copy, as a socket read is: the upload frees what it has copied into a part.
      this.push(Buffer.from(block.subarray(at, at + n)));
    },
  });
  const key = `bench/plain-${Date.now()}.bin`;
  completedInMs = 0;
  const t0 = process.hrtime.bigint();
  await store.upload(key, source, { partSize: partSizeFor(bytes), freeReadChunk: freeChunk });
  const took = ms(t0);
  await settle(key);
  return { uploadMs: took, completionMs: completedInMs };
}

interface Case {
  label: string;
  urls: string[];
  bytes: number;
}
const cases: Case[] = [];
for (const v of VALIDATORS) {
  const kind = `${VALIDATOR_NAMES[v] ?? v}`;
  if (!ONLY || ONLY.includes('1'))
    cases.push({ label: `(1) ${SMALL_FILES} files x ${SMALL_BYTES / KiB} KiB, ${kind}`, urls: Array.from({ length: SMALL_FILES }, (_, i) => `${origin.url}/blob/${SMALL_BYTES}/${i}/s${i}.bin?v=${v}`), bytes: SMALL_FILES * SMALL_BYTES });
  if (!ONLY || ONLY.includes('2'))
    cases.push({ label: `(2) ${BIG_FILES} files x ${BIG_BYTES / MiB} MiB, ${kind}`, urls: Array.from({ length: BIG_FILES }, (_, i) => `${origin.url}/blob/${BIG_BYTES}/${1000 + i}/b${i}.bin?v=${v}`), bytes: BIG_FILES * BIG_BYTES });
}

/** Reads a URL to the end into nothing; the byte count. */
function drain(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false }, (res) => {
        let bytes = 0;
        pipeline(res, new Writable({ write: (c: Buffer, _e, cb) => ((bytes += c.length), cb()) })).then(() => resolve(bytes), reject);
      })
      .on('error', reject);
  });
}

const runs: Array<Record<string, any>> = [];
const fileCounts: Array<{ files: number; concurrency: number; writerS: number; curlParallelS: number }> = [];
try {
  const results: string[] = [];
  for (const concurrency of CONCURRENCIES) {
    const { apiUrl, api, children: services } = await startApiAndServices(bench, ['preparer', 'packer'], { PACKER_CONCURRENCY: '1', FETCH_CONCURRENCY: String(concurrency), FETCH_SPILL_DIR: spillRoot });
    const packer = services[2]!;
    children.push(...services);
    const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}-${concurrency}@example.test`, plan: 'scale', overage: true });
    const post = async (body: Record<string, unknown>) => {
      const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
      if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { job_id: string }).job_id;
    };
    const job = async (body: Record<string, unknown>) => {
      const job_id = await post(body);
      for (;;) {
        const r = await fetch(`${apiUrl}/jobs/${job_id}`, { headers: { 'x-api-key': apiKey } });
        const { job } = (await r.json()) as { job: { status: string; zips: { size: number; download_url: string }[] } };
        if (job.status === 'failed') throw new Error(`job failed: ${JSON.stringify(job).slice(0, 500)}`);
        if (job.status === 'completed') return job;
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    // The writer in this process spills as a packer does (when FETCH_SPILL_BYTES allows).
    const writerSpill = config.FETCH_SPILL_BYTES > 0 ? SpillArea.open(spillRoot, config.FETCH_SPILL_BYTES) : null;
    const fetcher = createFetcher({ ...fetcherOptions(config), ...(writerSpill ? { spill: writerSpill } : {}) });

    for (const c of cases) {
      const curlLoad = await sampleOrigin(origin.url);
      const parallelMs = await curlToNull(c.urls, { parallel: 8 });
      const curlConnections = await curlLoad.stop();
      const serialMs = SERIAL && c.label.startsWith('(2)') && c === cases.find((k) => k.label.startsWith('(2)')) && concurrency === CONCURRENCIES[0] ? await curlToNull(c.urls, { parallel: null }) : null;

      const writerLoad = await sampleOrigin(origin.url);
      const { writerMs, zipBytes, peakBuffered } = await writeArchiveToNull(c.urls, fetcher, { concurrency, budgetBytes: config.FETCH_BUDGET_BYTES, measure: true });
      const writerConnections = await writerLoad.stop();

      // The stream job is prepared first, untimed: the stored job is then not a fresh API's
      // first request, which pays for its first queries (about 0.15 s, docs in bench/README.md).
      const streamJob = await job({ mode: 'stream', files: c.urls.map((url) => ({ url })) });

      // A stored job end to end, with the packer's peak RSS. Its time runs from the POST to
      // its own completed_at (same clock), so how often it is polled does not count; it is
      // polled in Postgres, not through GET /jobs/:id, which carries every file (2,000 here)
      // and costs the shared cores at each read.
      execFileSync('sync');
      resetPeakRss(packer.pid!);
      const rss = sampleRss(packer.pid!);
      const packerSpill = sampleSpill(spillRoot, packer.pid!);
      const storedLoad = await sampleOrigin(origin.url);
      const posted = Date.now();
      const storedId = await post({ files: c.urls.map((url) => ({ url })) });
      let stored;
      for (;;) {
        stored = await db.job.findUniqueOrThrow({ where: { id: storedId }, select: { status: true, createdAt: true, completedAt: true, zips: { select: { createdAt: true, completedAt: true, size: true, objectKey: true } } } });
        if (stored.status === 'failed') throw new Error(`stored job ${storedId} failed`);
        if (stored.status === 'completed') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const storedMs = stored.completedAt!.getTime() - posted;
      const storedConnections = await storedLoad.stop();
      const storedSpill = packerSpill.stop();
      const rssOverJob = rss.stop();
      const packerRss = peakRssMiB(packer.pid!);
      const storedZip = stored.zips[0]!;
      const storedBytes = Number(storedZip.size);
      const phases = {
        // The bin's row is written when preparing ends.
        preparing: storedZip.createdAt.getTime() - stored.createdAt.getTime(),
        packing: storedZip.completedAt!.getTime() - storedZip.createdAt.getTime(),
        completing: stored.completedAt!.getTime() - storedZip.completedAt!.getTime(),
      };
      // A ZIP of one part went up as one PutObject (its ETag has no "-<parts>"): nothing for s3rver to join.
      const storedJoinMs = (await store.head(storedZip.objectKey!))?.etag.includes('-') ? await bench.completionMs(storedZip.objectKey!) : 0;
      await settle(storedZip.objectKey!);
      const { uploadMs, completionMs } = await plainUpload(storedBytes);

      // A stream job's ZIP, downloaded whole.
      resetPeakRss(api.pid!);
      const streamLoad = await sampleOrigin(origin.url);
      const apiSpill = sampleSpill(spillRoot, api.pid!);
      const t0 = process.hrtime.bigint();
      const streamed = await drain(streamJob.zips[0]!.download_url);
      const streamMs = ms(t0);
      const streamSpill = apiSpill.stop();
      const apiRss = peakRssMiB(api.pid!);
      const streamConnections = await streamLoad.stop();
      if (streamed !== streamJob.zips[0]!.size) throw new Error(`stream download sent ${streamed} of ${streamJob.zips[0]!.size}`);

      const ratio = (x: number) => (parallelMs / x).toFixed(2);
      results.push(
        [
          `${c.label}, fetch concurrency ${concurrency}:`,
          `    curl --parallel-max 8  ${MBps(c.bytes, parallelMs)}  (${(parallelMs / 1000).toFixed(1)} s)` + (serialMs ? `;  one curl per file in turn ${MBps(c.bytes, serialMs)}  (${(serialMs / 1000).toFixed(1)} s)` : ''),
          `    writer  ${MBps(zipBytes, writerMs)}  ratio ${ratio(writerMs)}` + (serialMs ? ` (vs serial curl ${(serialMs / writerMs).toFixed(2)})` : '') + `  peak buffered ${(peakBuffered / MiB).toFixed(1)} MiB`,
          `    stored  ${MBps(storedBytes, storedMs)}  ratio ${ratio(storedMs)}  packer peak RSS ${rssFigure(packerRss)};  ` +
            `preparing ${(phases.preparing / 1000).toFixed(1)} s, packing ${(phases.packing / 1000).toFixed(1)} s, completing ${(phases.completing / 1000).toFixed(1)} s;  ${spillFigure(storedSpill)}`,
          `    plain upload of ${(storedBytes / MiB).toFixed(0)} MiB into the same s3rver  ${MBps(storedBytes, uploadMs)} (${(uploadMs / 1000).toFixed(1)} s, of which ${(completionMs / 1000).toFixed(1)} s joining the parts on completion);  ` +
            `stored against min(curl, plain upload): ratio ${(Math.max(parallelMs, uploadMs) / storedMs).toFixed(2)};  ` +
            `stored without s3rver's join (${(storedJoinMs / 1000).toFixed(1)} s for this job): ratio ${(parallelMs / (storedMs - storedJoinMs)).toFixed(2)}`,
          `    stream  ${MBps(streamed, streamMs)}  ratio ${ratio(streamMs)}  API peak RSS ${rssFigure(apiRss)};  ${spillFigure(streamSpill)}`,
          `    curl    ${describeLoad(curlConnections)}`,
          `    writer  ${describeLoad(writerConnections)}`,
          `    stored  ${describeLoad(storedConnections)}`,
          `    stream  ${describeLoad(streamConnections)}`,
        ].join('\n'),
      );
      console.log(results.at(-1));
      runs.push({
        case: c.label,
        concurrency,
        bytes: c.bytes,
        curlParallelMBps: rate(c.bytes, parallelMs),
        curlSerialMBps: serialMs ? rate(c.bytes, serialMs) : null,
        writerMBps: rate(zipBytes, writerMs),
        storedMBps: rate(storedBytes, storedMs),
        streamMBps: rate(streamed, streamMs),
        ratios: { writer: parallelMs / writerMs, stored: parallelMs / storedMs, storedWithoutJoin: parallelMs / (storedMs - storedJoinMs), stream: parallelMs / streamMs },
        packerPeakRssMB: (packerRss * MiB) / 1e6,
        apiPeakRssMB: (apiRss * MiB) / 1e6,
        peakBufferedMiB: peakBuffered / MiB,
        spill: { stored: storedSpill, stream: streamSpill },
        phasesMs: phases,
        originConnections: { curl: curlConnections, writer: writerConnections, stored: storedConnections, stream: streamConnections },
        plainUploadMBps: rate(storedBytes, uploadMs),
        ...(concurrency === CONCURRENCIES[0] ? { packerRssOverJob: rssOverJob } : {}),
      });
    }
    fetcher.close();
    for (const s of services) s.kill();
    await Promise.all(services.map((s) => new Promise((r) => (s.exitCode !== null ? r(null) : s.once('exit', r)))));
  }
  if (!ONLY || ONLY.includes('3')) {
    const fetcher = createFetcher(fetcherOptions(config));
    for (const files of FILE_COUNTS) {
      const urls = Array.from({ length: files }, (_, i) => `${origin.url}/blob/${FILE_BYTES}/${5000 + i}/n${i}.bin`);
      const curlParallelS = (await curlToNull(urls, { parallel: 8 })) / 1000;
      for (const concurrency of CONCURRENCIES) {
        const writerS = (await writeArchiveToNull(urls, fetcher, { concurrency, budgetBytes: config.FETCH_BUDGET_BYTES, measure: true })).writerMs / 1000;
        fileCounts.push({ files, concurrency, writerS, curlParallelS });
        console.log(`(3) ${files} files x ${FILE_BYTES / KiB} KiB, fetch concurrency ${concurrency}: writer ${writerS.toFixed(1)} s, curl --parallel-max 8 ${curlParallelS.toFixed(1)} s`);
      }
    }
    fetcher.close();
  }
  console.log(`targets: ratios >= 0.80 at concurrency 8; packer peak RSS <= 200 MB. Origin: ${process.env.LATENCY_MS ?? 40} ms per request, ${process.env.RATE_MBPS ?? 25} MB/s per connection.`);
  report();
} finally {
  for (const c of children) c.kill();
  await db.$disconnect();
  await bench.close();
  rmSync(spillRoot, { recursive: true, force: true });
}
process.exit(0);

function report(): void {
  const params = { SMALL_FILES, SMALL_KIB: SMALL_BYTES / KiB, BIG_FILES, BIG_MIB: BIG_BYTES / MiB, CONCURRENCIES, FILE_COUNTS, FILE_KIB: FILE_BYTES / KiB, LATENCY_MS: Number(process.env.LATENCY_MS ?? 40), RATE_MBPS: Number(process.env.RATE_MBPS ?? 25) };
  writeResults({ bench: 'origins', params, figures: { runs, fileCounts } });
  const where = `origin ${params.LATENCY_MS} ms, ${params.RATE_MBPS} MB/s per connection`;
  // Charts of the first validator kind's cases (the others are in the JSON).
  for (const c of cases.filter((k) => k.label.endsWith(VALIDATOR_NAMES[VALIDATORS[0]!] ?? VALIDATORS[0]!))) {
    const of = runs.filter((r) => r.case === c.label);
    if (of.length === 0) continue;
    const line = (name: string, key: string, dashed = false): Series => ({ name, dashed, points: of.map((r) => [r.concurrency, r[key]]) });
    const slug = c.label.startsWith('(1)') ? 'small' : 'large';
    if (new Set(of.map((r) => r.concurrency)).size > 1) {
      writeChart(`origins-throughput-${slug}`, {
        title: `${c.label.slice(4)}: throughput against fetch concurrency`,
        xLabel: `FETCH_CONCURRENCY (${where})`,
        yLabel: 'MB/s',
        xLog: true,
        series: [line('archive writer', 'writerMBps'), line('stored job', 'storedMBps'), line('stream download', 'streamMBps'), line('curl --parallel-max 8', 'curlParallelMBps', true)],
      });
    }
    const first = of.find((r) => r.packerRssOverJob);
    if (first) {
      const seconds = first.packerRssOverJob.at(-1)?.[0] ?? 0;
      writeChart(`origins-rss-${slug}`, {
        title: `Packer RSS over a stored job of ${c.label.slice(4)}`,
        xLabel: `seconds since POST /jobs (fetch concurrency ${first.concurrency}, ${where})`,
        yLabel: 'RSS (MB)',
        series: [{ name: 'packer RSS', points: first.packerRssOverJob }, { name: 'target 200 MB', dashed: true, points: [[0, 200], [seconds, 200]] }],
      });
    }
  }
  if (fileCounts.length) {
    const series: Series[] = CONCURRENCIES.map((concurrency) => ({ name: `archive writer, concurrency ${concurrency}`, points: fileCounts.filter((f) => f.concurrency === concurrency).map((f) => [f.files, f.writerS]) }));
    series.push({ name: 'curl --parallel-max 8', dashed: true, points: fileCounts.filter((f) => f.concurrency === CONCURRENCIES[0]).map((f) => [f.files, f.curlParallelS]) });
    writeChart('origins-file-count', { title: `Distant origin: time against file count (${FILE_BYTES / KiB} KiB each)`, xLabel: `files (${where})`, yLabel: 'seconds', xLog: true, series });
  }
}
