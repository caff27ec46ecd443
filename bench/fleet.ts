// bench:fleet (docs/segments.md#measured): one single-ZIP stored job of FILES x FILE_MIB (2 GiB
// by default) from an origin that serves each connection at RATE_MBPS after LATENCY_MS, packed
// in segments of SEGMENT_MIB by 1, 2 and 4 packer processes (PACKERS_LIST), the real services as
// deployed. The per-connection cap keeps the origin, not the 2 cores, the limit: one packer's
// FETCH_CONCURRENCY connections bring well under what a core packs. Each packer has one slot
// (PACKER_CONCURRENCY=1), so N packers are N segments at once, not N x 2. Per run it prints
// the wall time (the job's created_at -> completed_at), the speedup against 1 packer (goal: 2
// packers >= 1.8x, 4 >= 3.2x), the packers' CPU seconds per GiB (/proc utime + stime over
// the job), the bytes each packer fetched (archive_bytes_fetched_total on its operations port)
// and the origin sent, against the ZIP's input bytes, each packer's segments, the most
// segments running at once, the origin's connections busy meanwhile (its /stats every poll),
// the phases (cut, last segment done, finishing), and the largest packer RSS (VmRSS every
// 200 ms; goal <= 200 MB).
// Each ZIP's size is checked against the planned layout; the last run's ZIP is downloaded into
// /dev/shm, checked with `unzip -t` and deleted (VERIFY=0 skips it).
//   pnpm bench:fleet   (FILES=32 FILE_MIB=64 RATE_MBPS=1 LATENCY_MS=20 PACKERS_LIST=1,2,4
//                       SEGMENT_MIB=<input / 8> FETCH_CONCURRENCY=8 VERIFY=1 to change)
import { execFileSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { storageConfig } from '@ap/service-kit';
import { createObjectStore } from '@ap/storage';
import { planZip } from '@ap/zip';
import { freePort } from '../scripts/embedded';
import { cpuSeconds, firstLine, spawnTs, startApiAndServices, startBenchEnv, startService } from './lib/env';
import { sampleRss, writeResults } from './lib/report';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const FILES = Number(process.env.FILES ?? 32);
const FILE_BYTES = Number(process.env.FILE_MIB ?? 64) * MiB;
const INPUT_BYTES = FILES * FILE_BYTES;
const RATE_MBPS = Number(process.env.RATE_MBPS ?? 1);
const LATENCY_MS = Number(process.env.LATENCY_MS ?? 20);
const PACKERS_LIST = (process.env.PACKERS_LIST ?? '1,2,4').split(',').map(Number);
const FETCH_CONCURRENCY = Number(process.env.FETCH_CONCURRENCY ?? 8);
// Eight segments by default: two per packer at 4 packers (the config's least is 64 MiB).
const SEGMENT_BYTES = Number(process.env.SEGMENT_MIB ?? Math.max(64, Math.floor(INPUT_BYTES / MiB / 8))) * MiB;
const VERIFY = process.env.VERIFY !== '0';

const originChild = spawnTs('bench/lib/origin-server.ts', [], { ...process.env, ORIGIN_LATENCY_MS: String(LATENCY_MS), ORIGIN_RATE_MBPS: String(RATE_MBPS) });
const originUrl = (await firstLine<{ url: string }>(originChild)).url;
const bench = await startBenchEnv({ SEGMENT_BYTES: String(SEGMENT_BYTES) });
const config = loadConfig();
const db = createDb(config.DATABASE_URL);
const store = createObjectStore(storageConfig(config));
const children: ChildProcess[] = [originChild];

const files = Array.from({ length: FILES }, (_, i) => ({ url: `${originUrl}/blob/${FILE_BYTES}/${7000 + i}/f${i}.bin`, filename: `f${String(i).padStart(3, '0')}.bin` }));
/** The ZIP's size as planned from the names and sizes alone (stored, no ZIP64 surprises). */
const expectedSize = planZip(files.map((f) => ({ name: f.filename, size: FILE_BYTES })), { mtime: new Date() }).totalSize;

const originStats = async () => (await (await fetch(`${originUrl}/stats`)).json()) as { bytes: number; requests: number; active: number };

/** A counter's value in a Prometheus exposition (summed over the label sets that match `labels`). */
function counter(text: string, name: string, labels = ''): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== ' ' && line[name.length] !== '{')) continue;
    if (labels && !line.includes(labels)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

interface Packer {
  child: ChildProcess;
  port: number;
}

async function startPackers(count: number, env: NodeJS.ProcessEnv): Promise<Packer[]> {
  const packers = await Promise.all(
    Array.from({ length: count }, async () => {
      const port = await freePort();
      const child = await startService('packer', { ...env, HEALTH_PORT: String(port), PACKER_CONCURRENCY: '1', FETCH_CONCURRENCY: String(FETCH_CONCURRENCY) });
      return { child, port };
    }),
  );
  children.push(...packers.map((p) => p.child));
  for (const p of packers) {
    for (let i = 0; ; i++) {
      if (await fetch(`http://127.0.0.1:${p.port}/readyz`).then((r) => r.ok, () => false)) break;
      if (i > 300 || p.child.exitCode !== null) throw new Error(`packer ${p.child.pid} did not get ready`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return packers;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

/** Downloads the ZIP into memory-backed scratch, `unzip -t`s it and deletes it; unzip's last line. */
async function unzipTest(downloadUrl: string): Promise<string> {
  const file = path.join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), `ap-bench-fleet-${process.pid}.zip`);
  try {
    const res = await fetch(downloadUrl);
    if (!res.ok || !res.body) throw new Error(`download answered ${res.status}`);
    await pipeline(Readable.fromWeb(res.body as never), createWriteStream(file));
    return execFileSync('unzip', ['-tq', file], { encoding: 'utf8' }).trim().split('\n').at(-1)!;
  } finally {
    rmSync(file, { force: true });
  }
}

interface RunResult {
  packers: number;
  wallS: number;
  speedup: number;
  cpuSPerGiB: number;
  fetchedBytes: number[];
  segmentsPerPacker: number[];
  originBytes: number;
  originRequests: number;
  segments: number;
  maxSegmentsAtOnce: number;
  segmentTimes: Array<{ index: number; startS: number; endS: number }>;
  /** Seconds from the POST: the bin cut (its segments first seen), the last segment done; then the finishing step to completed_at, and s3rver's join of the parts in it. */
  phases: { cutS: number; segmentsDoneS: number; finishingS: number; s3JoinS: number };
  /** Bodies the origin was sending at once while segments ran (at most packers x FETCH_CONCURRENCY). */
  originConnections: { mean: number; max: number };
  peakRssMB: number[];
  peakRssAtS: number[];
  zipSize: number;
  unzip: string | null;
}

const runs: RunResult[] = [];
try {
  const { apiUrl, children: services, env } = await startApiAndServices(bench, ['preparer']);
  children.push(...services);
  console.log(
    `bench:fleet: one ZIP of ${FILES} x ${FILE_BYTES / MiB} MiB (${(INPUT_BYTES / GiB).toFixed(2)} GiB), segments of ${SEGMENT_BYTES / MiB} MiB; ` +
      `origin ${RATE_MBPS} MB/s per connection, ${LATENCY_MS} ms per request; each packer PACKER_CONCURRENCY=1, FETCH_CONCURRENCY=${FETCH_CONCURRENCY}`,
  );
  for (const count of PACKERS_LIST) {
    const packers = await startPackers(count, env);
    const { apiKey } = await createUserWithKey(db, { email: `bench-fleet-${Date.now()}-${count}@example.test`, plan: 'scale', overage: true });
    const pids = packers.map((p) => p.child.pid!);
    const cpu0 = pids.map(cpuSeconds);
    const rss = pids.map((pid) => sampleRss(pid, 200));
    const rssStarted = Date.now();
    const origin0 = await originStats();

    const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify({ files, zip_filename: `fleet-${count}.zip` }) });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    const jobId = ((await res.json()) as { job_id: string }).job_id;
    // Segments are deleted once the bin completes: their times are watched while it runs.
    const seen = new Map<number, { startS: number; endS: number }>();
    let maxAtOnce = 0;
    /** Bodies the origin was sending, every poll: the connections the packers kept busy. */
    const busy: Array<[number, number]> = [];
    let segmentCount = 0;
    const t0 = Date.now();
    let job;
    for (;;) {
      job = await db.job.findUniqueOrThrow({ where: { id: jobId }, select: { status: true, error: true, createdAt: true, completedAt: true, zips: { select: { id: true, size: true, objectKey: true, segmentBytes: true } } } });
      if (job.status === 'failed') throw new Error(`job ${jobId} failed: ${job.error}`);
      if (job.status === 'completed') break;
      const zipId = job.zips[0]?.id;
      busy.push([(Date.now() - t0) / 1000, (await originStats()).active]);
      if (zipId) {
        const segments = await db.zipSegment.findMany({ where: { zipId }, select: { index: true, status: true } });
        segmentCount = Math.max(segmentCount, segments.length);
        const now = (Date.now() - t0) / 1000;
        maxAtOnce = Math.max(maxAtOnce, segments.filter((s) => s.status === 'processing').length);
        for (const s of segments) {
          if (s.status === 'pending') continue;
          const at = seen.get(s.index) ?? { startS: now, endS: NaN };
          if (s.status === 'completed' && Number.isNaN(at.endS)) at.endS = now;
          seen.set(s.index, at);
        }
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    const wallS = (job.completedAt!.getTime() - job.createdAt.getTime()) / 1000;
    const postedLag = (t0 - job.createdAt.getTime()) / 1000;
    const cutS = postedLag + Math.min(...[...seen.values()].map((s) => s.startS));
    const segmentsDoneS = postedLag + Math.max(...[...seen.values()].map((s) => (Number.isNaN(s.endS) ? (Date.now() - t0) / 1000 : s.endS)));
    const busyInSegments = busy.filter(([at]) => at + postedLag >= cutS && at + postedLag <= segmentsDoneS).map(([, n]) => n);
    const connections = { mean: busyInSegments.reduce((a, b) => a + b, 0) / Math.max(1, busyInSegments.length), max: Math.max(0, ...busyInSegments) };
    const cpu = pids.map((pid, i) => cpuSeconds(pid) - cpu0[i]!);
    const rssPoints = rss.map((r) => r.stop());
    const peaks = rssPoints.map((points) => Math.max(...points.map(([, mb]) => mb)));
    // When each peak came, in seconds from the POST (the finishing step's or a segment's).
    const peakAtS = rssPoints.map((points, i) => (t0 - job.createdAt.getTime()) / 1000 + (points.find(([, mb]) => mb === peaks[i])?.[0] ?? NaN) - (t0 - rssStarted) / 1000);
    const origin1 = await originStats();
    const exposition = await Promise.all(packers.map(async (p) => (await fetch(`http://127.0.0.1:${p.port}/metrics`)).text()));
    const fetched = exposition.map((text) => counter(text, 'archive_bytes_fetched_total', 'service="packer"'));
    const segmentsPerPacker = exposition.map((text) => counter(text, 'archive_segments_total', 'result="completed"'));
    const zip = job.zips[0]!;
    const zipSize = Number(zip.size);
    if (zipSize !== expectedSize) throw new Error(`ZIP of ${zipSize} bytes, ${expectedSize} planned`);
    if (zip.segmentBytes === null) console.log('    (the bin was packed whole, not in segments)');
    let unzip: string | null = null;
    if (VERIFY && count === PACKERS_LIST.at(-1)) {
      const got = await fetch(`${apiUrl}/jobs/${jobId}`, { headers: { 'x-api-key': apiKey } });
      const { job: shown } = (await got.json()) as { job: { zips: { download_url: string }[] } };
      unzip = await unzipTest(shown.zips[0]!.download_url);
    }
    const s3JoinS = (await bench.completionMs(zip.objectKey!)) / 1000;
    await store.deleteMany([zip.objectKey!]);
    await Promise.all(packers.map((p) => stop(p.child)));

    const base = runs[0]?.wallS ?? wallS;
    const result: RunResult = {
      packers: count,
      wallS,
      speedup: base / wallS,
      cpuSPerGiB: cpu.reduce((a, b) => a + b, 0) / (INPUT_BYTES / GiB),
      fetchedBytes: fetched,
      segmentsPerPacker,
      originBytes: origin1.bytes - origin0.bytes,
      originRequests: origin1.requests - origin0.requests,
      segments: segmentCount,
      maxSegmentsAtOnce: maxAtOnce,
      phases: { cutS, segmentsDoneS, finishingS: wallS - segmentsDoneS, s3JoinS },
      segmentTimes: [...seen].map(([index, t]) => ({ index, ...t })).sort((a, b) => a.index - b.index),
      originConnections: connections,
      peakRssMB: peaks,
      peakRssAtS: peakAtS,
      zipSize,
      unzip,
    };
    runs.push(result);
    const totalFetched = fetched.reduce((a, b) => a + b, 0);
    const mib = (n: number) => `${(n / MiB).toFixed(0)} MiB`;
    console.log(
      [
        `${count} packer${count > 1 ? 's' : ''}: ${wallS.toFixed(1)} s (${((INPUT_BYTES / wallS) / 1e6).toFixed(1)} MB/s), speedup ${result.speedup.toFixed(2)}x against 1 packer` +
          (count === 2 ? ' (goal >= 1.8x)' : count === 4 ? ' (goal >= 3.2x)' : ''),
        `    packers' CPU ${cpu.map((c) => c.toFixed(1)).join(' + ')} s = ${result.cpuSPerGiB.toFixed(2)} s per GiB of input`,
        `    fetched ${fetched.map(mib).join(' + ')} = ${mib(totalFetched)}, ${(totalFetched / INPUT_BYTES).toFixed(3)} of the ${mib(INPUT_BYTES)} input (origin sent ${mib(result.originBytes)} in ${result.originRequests} requests)`,
        `    segments ${segmentCount} of ${SEGMENT_BYTES / MiB} MiB, per packer ${segmentsPerPacker.join(' + ')}, at most ${maxAtOnce} at once; ` +
          `times (s from POST) ${result.segmentTimes.map((s) => `${s.index}:${s.startS.toFixed(0)}-${s.endS.toFixed(0)}`).join(' ')}`,
        `    origin connections busy while segments ran: mean ${connections.mean.toFixed(1)}, max ${connections.max} (of ${count * FETCH_CONCURRENCY})`,
        `    phases: bin cut at ${cutS.toFixed(1)} s, last segment done at ${segmentsDoneS.toFixed(1)} s, finishing ${(wallS - segmentsDoneS).toFixed(1)} s (s3rver joining the parts ${s3JoinS.toFixed(1)} s of it)`,
        `    peak packer RSS ${peaks.map((p, i) => `${p.toFixed(0)} (at ${peakAtS[i]!.toFixed(0)} s)`).join(', ')} MB (largest ${Math.max(...peaks).toFixed(0)} MB; goal <= 200 MB)`,
        `    ZIP ${zipSize} bytes = planned${unzip ? `; unzip -t: ${unzip}` : ''}`,
      ].join('\n'),
    );
  }
  writeResults({
    bench: 'fleet',
    params: { FILES, FILE_MIB: FILE_BYTES / MiB, SEGMENT_MIB: SEGMENT_BYTES / MiB, RATE_MBPS, LATENCY_MS, PACKERS_LIST, FETCH_CONCURRENCY, PACKER_CONCURRENCY: 1, plan: 'scale' },
    figures: { runs },
  });
} finally {
  for (const c of children) c.kill();
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
