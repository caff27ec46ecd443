// bench:origins' size sweep (issue 35): files of each size from a distant origin (40 ms per
// answer) capping each connection at each rate, as a stored job (POST -> its completed_at) and a
// stream download (GET of its ZIP), each as a ratio to `curl --parallel --parallel-immediate
// --parallel-max 8` fetching the same URLs into /dev/null in the same run. Per case also the
// packer's and the API's peak RSS (target <= 200 MB) and the origin's responses in flight, ours
// beside curl's. It prints a ratio table and a text chart of ratio against file size, and
// writes bench/results/origins-sweep.json, bench/results/origins-sweep.txt (the table and the
// chart) and bench/charts/origins-sweep.svg. Goal: >= 1.0 stored and >= 1.1 stream at every size.
// Each case runs for each validator kind of the origin's files (SWEEP_VALIDATORS: a strong ETag,
// a Last-Modified only, none: the bodies ahead then spill to disk), with the bytes the packer and
// the API spilled and their peak on disk.
//   pnpm bench:origins:sweep  (SWEEP_SIZES=256K,4M,64M,1G SWEEP_RATES=2,25 SWEEP_SECONDS=8
//                              SWEEP_MIN_FILES=1 SWEEP_SKIP=1G@2 LATENCY_MS=40
//                              SWEEP_VALIDATORS=etag,lm,none to change)
// Each case has about SWEEP_SECONDS of curl's time at 8 connections (files = that many bytes
// over the size, at least SWEEP_MIN_FILES); a file larger than that is one file, and curl takes
// it over one connection (1 GiB at 2 MB/s: 9 minutes, hence skipped unless SWEEP_SKIP= ).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { cpuSeconds, firstLine, ms, peakRssMiB, resetPeakRss, ROOT, spawnTs, startApiAndServices, startBenchEnv } from './lib/env';
import { describeLoad, sampleOrigin, type OriginLoad } from './lib/origin-stats';
import { curlToNull } from './lib/baselines';
import { writeChart, writeResults } from './lib/report';
import { sampleSpill, type SpillFigures } from './lib/spill-stats';

const KiB = 1024;
const MiB = 1024 * KiB;
const parseSize = (s: string) => Number(s.slice(0, -1)) * { K: KiB, M: MiB, G: 1024 * MiB }[s.at(-1)!.toUpperCase() as 'K' | 'M' | 'G']!;
const SIZES = (process.env.SWEEP_SIZES ?? '256K,4M,64M,1G').split(',');
const RATES = (process.env.SWEEP_RATES ?? '2,25').split(',').map(Number);
const SECONDS = Number(process.env.SWEEP_SECONDS ?? 8);
const MIN_FILES = Number(process.env.SWEEP_MIN_FILES ?? 1);
const SKIP = new Set((process.env.SWEEP_SKIP ?? '1G@2').split(',').filter(Boolean));
const LATENCY_MS = process.env.LATENCY_MS ?? '40';
const VALIDATORS = (process.env.SWEEP_VALIDATORS ?? 'etag,lm,none').split(',');
const VALIDATOR_NAMES: Record<string, string> = { etag: 'ETag', lm: 'Last-Modified', none: 'none' };
const spillRoot = mkdtempSync(path.join(os.tmpdir(), 'bench-sweep-spill-'));
const spillMiB = (f: SpillFigures) => `${(f.spilledBytes / MiB).toFixed(0)} / ${(f.peakBytes / MiB).toFixed(0)}`;
const label = (size: string) => size.replace(/K$/i, ' KiB').replace(/M$/i, ' MiB').replace(/G$/i, ' GiB');

const TRACE = process.env.SWEEP_TRACE === '1';
const children: { kill(): unknown }[] = [];
const origins = new Map<number, string>();
const originPids = new Map<number, number>();
for (const rate of RATES) {
  const child = spawnTs('bench/lib/origin-server.ts', [], { ...process.env, ORIGIN_LATENCY_MS: LATENCY_MS, ORIGIN_RATE_MBPS: String(rate) });
  children.push(child);
  origins.set(rate, (await firstLine<{ url: string }>(child)).url);
  originPids.set(rate, child.pid!);
}
const bench = await startBenchEnv();
/** SWEEP_TRACE=1: per phase, each process's CPU share (of one core) and the origin's responses under way over time. */
function traceCpu(pids: Record<string, number>): (phase: string, load: OriginLoad, millis: number) => void {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  return (phase, load, millis) => {
    if (!TRACE) return;
    const shares = Object.entries(pids).map(([name, pid]) => `${name} ${(((cpuSeconds(pid) - before[name]!) * 1000) / millis).toFixed(2)}`);
    console.error(`  ${phase}: ${(millis / 1000).toFixed(1)} s, load ${os.loadavg()[0]!.toFixed(1)}, cpu ${shares.join(', ')}; ${describeLoad(load)}`);
  };
}
const config = loadConfig();
const db = createDb(config.DATABASE_URL);

interface Result {
  size: string;
  sizeBytes: number;
  rateMBps: number;
  validators: string;
  files: number;
  curlS: number;
  storedS: number;
  streamS: number;
  stored: number;
  stream: number;
  packerPeakMB: number;
  apiPeakMB: number;
  connections: { curl: number; stored: number; stream: number };
  spill: { stored: SpillFigures; stream: SpillFigures };
}
const results: Result[] = [];
const MB = (mib: number) => (mib * MiB) / 1e6;

try {
  const { apiUrl, api, children: services } = await startApiAndServices(bench, ['preparer', 'packer'], { PACKER_CONCURRENCY: '1', FETCH_SPILL_DIR: spillRoot });
  children.push(...services);
  const packer = services[2]!;
  const { apiKey } = await createUserWithKey(db, { email: `sweep-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const post = async (body: Record<string, unknown>) => {
    const res = await fetch(`${apiUrl}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST /jobs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { job_id: string }).job_id;
  };
  /** Polls Postgres (not GET /jobs/:id, which carries every file) until the job is done. */
  const finished = async (id: string) => {
    for (;;) {
      const job = await db.job.findUniqueOrThrow({ where: { id }, select: { status: true, completedAt: true } });
      if (job.status === 'failed') throw new Error(`job ${id} failed`);
      if (job.status === 'completed') return job.completedAt!;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  let seed = 0;
  for (const rate of RATES) {
    const originUrl = origins.get(rate)!;
    for (const size of SIZES) for (const validators of VALIDATORS) {
      if (SKIP.has(`${size}@${rate}`)) continue;
      const sizeBytes = parseSize(size);
      const files = Math.max(MIN_FILES, Math.round((SECONDS * 8 * rate * 1e6) / sizeBytes));
      const urls = Array.from({ length: files }, (_, i) => `${originUrl}/blob/${sizeBytes}/${++seed}/f${i}.bin?v=${validators}`);
      const pids = { origin: originPids.get(rate)!, packer: packer.pid!, api: api.pid!, s3: bench.s3Pid };
      const curlLoad = await sampleOrigin(originUrl);
      let traced = traceCpu(pids);
      const curlMs = await curlToNull(urls, { parallel: 8 });
      const curlSampled = await curlLoad.stop();
      traced(`${label(size)} @ ${rate} curl`, curlSampled, curlMs);
      const curlConnections = curlSampled.meanOpen;

      const streamId = await post({ mode: 'stream', files: urls.map((url) => ({ url })) });
      await finished(streamId);

      resetPeakRss(packer.pid!);
      const storedLoad = await sampleOrigin(originUrl);
      const packerSpill = sampleSpill(spillRoot, packer.pid!);
      traced = traceCpu(pids);
      const posted = Date.now();
      const storedMs = (await finished(await post({ files: urls.map((url) => ({ url })) }))).getTime() - posted;
      const storedSpill = packerSpill.stop();
      const storedSampled = await storedLoad.stop();
      traced('  stored', storedSampled, storedMs);
      const storedConnections = storedSampled.meanOpen;
      const packerPeak = peakRssMiB(packer.pid!);

      const r = await fetch(`${apiUrl}/jobs/${streamId}`, { headers: { 'x-api-key': apiKey } });
      const { job } = (await r.json()) as { job: { zips: { size: number; download_url: string }[] } };
      resetPeakRss(api.pid!);
      const streamLoad = await sampleOrigin(originUrl);
      const apiSpill = sampleSpill(spillRoot, api.pid!);
      traced = traceCpu(pids);
      const t0 = process.hrtime.bigint();
      const sent = await new Promise<number>((resolve, reject) => {
        http
          .get(job.zips[0]!.download_url, { agent: false }, (res) => {
            let n = 0;
            pipeline(res, new Writable({ write: (c: Buffer, _e, cb) => ((n += c.length), cb()) })).then(() => resolve(n), reject);
          })
          .on('error', reject);
      });
      const streamMs = ms(t0);
      const streamSpill = apiSpill.stop();
      const streamSampled = await streamLoad.stop();
      traced('  stream', streamSampled, streamMs);
      const streamConnections = streamSampled.meanOpen;
      if (sent !== job.zips[0]!.size) throw new Error(`stream download sent ${sent} of ${job.zips[0]!.size}`);
      const result: Result = {
        size,
        sizeBytes,
        rateMBps: rate,
        validators,
        files,
        curlS: curlMs / 1000,
        storedS: storedMs / 1000,
        streamS: streamMs / 1000,
        stored: curlMs / storedMs,
        stream: curlMs / streamMs,
        packerPeakMB: MB(packerPeak),
        apiPeakMB: MB(peakRssMiB(api.pid!)),
        connections: { curl: curlConnections, stored: storedConnections, stream: streamConnections },
        spill: { stored: storedSpill, stream: streamSpill },
      };
      results.push(result);
      console.log(row(result));
    }
  }
  report();
} finally {
  for (const c of children) c.kill();
  await db.$disconnect();
  await bench.close();
  rmSync(spillRoot, { recursive: true, force: true });
}
process.exit(0);

function row(r: Result): string {
  const c = r.connections;
  return (
    `| ${label(r.size)} | ${r.rateMBps} MB/s | ${VALIDATOR_NAMES[r.validators] ?? r.validators} | ${r.files} | ${r.curlS.toFixed(1)} s | ${r.stored.toFixed(2)} | ${r.stream.toFixed(2)} | ` +
    `${r.packerPeakMB.toFixed(0)} MB | ${r.apiPeakMB.toFixed(0)} MB | ${c.curl.toFixed(1)} / ${c.stored.toFixed(1)} / ${c.stream.toFixed(1)} | ${spillMiB(r.spill.stored)} | ${spillMiB(r.spill.stream)} |`
  );
}

/** Ratio against file size, one line per rate and mode: a bar per size, its length the ratio (| at 1.0). */
function textChart(): string {
  const lines = ['ratio to curl -Z 8 against file size (each # is 0.1; | marks 1.0)'];
  for (const rate of RATES) for (const validators of VALIDATORS) {
    for (const mode of ['stored', 'stream'] as const) {
      lines.push(`${mode} at ${rate} MB/s per connection, validators: ${VALIDATOR_NAMES[validators] ?? validators}:`);
      for (const r of results.filter((x) => x.rateMBps === rate && x.validators === validators)) {
        const n = Math.round(r[mode] * 10);
        const bar: string[] = Array.from({ length: Math.max(n, 10) }, (_, i) => (i < n ? '#' : ' '));
        bar.splice(10, 0, '|');
        lines.push(`  ${label(r.size).padStart(8)} ${bar.join('').trimEnd()} ${r[mode].toFixed(2)}`);
      }
    }
  }
  return lines.join('\n');
}

function report(): void {
  const table = [
    `| File size | Per connection | Validators | Files | curl -Z 8 | Stored | Stream | Packer peak RSS | API peak RSS | Origin connections (curl / stored / stream) | Packer spilled / peak MiB | API spilled / peak MiB |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(row),
  ].join('\n');
  const text = `${table}\n\n${textChart()}\n`;
  console.log(`\n${text}`);
  const params = { SWEEP_SIZES: SIZES, SWEEP_RATES: RATES, SWEEP_SECONDS: SECONDS, SWEEP_MIN_FILES: MIN_FILES, SWEEP_SKIP: [...SKIP], LATENCY_MS: Number(LATENCY_MS) };
  writeResults({ bench: 'origins-sweep', params, figures: { results } });
  writeFileSync(path.join(ROOT, 'bench/results/origins-sweep.txt'), text);
  writeChart('origins-sweep', {
    title: 'Ratio to curl --parallel-max 8 against file size',
    xLabel: `file size, MiB (origin ${LATENCY_MS} ms per answer)`,
    yLabel: 'ratio to curl',
    xLog: true,
    series: [
      ...RATES.flatMap((rate) =>
        VALIDATORS.flatMap((validators) =>
          (['stored', 'stream'] as const).map((mode) => ({
            name: `${mode}, ${rate} MB/s per connection, ${VALIDATOR_NAMES[validators] ?? validators}`,
            points: results.filter((r) => r.rateMBps === rate && r.validators === validators).map((r) => [r.sizeBytes / MiB, r[mode]] as [number, number]),
          })),
        ),
      ),
      { name: 'curl', dashed: true, points: [[results[0]?.sizeBytes ?? KiB, 1], [results.at(-1)?.sizeBytes ?? MiB, 1]].map(([x, y]) => [x! / MiB, y!] as [number, number]) },
    ],
  });
}
