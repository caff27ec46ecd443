// Stream-mode bench. Prints three figures; the API and preparer run as their own processes
// against this run's database, Redis and the loopback origin (also its own process):
//   (a) throughput: a stream ZIP downloaded through GET /download, over the faster of two plain
//       proxies (each its own process) sending the same origin bytes without a ZIP: one with
//       Node's own fetch, one with the API's fetcher; 16 x 64 MiB and 64 x 16 MiB (SIZES)
//   (b) resume: a stream ZIP of one RESUME_GIB file cut at 90%, then resumed with Range +
//       If-Range: origin bytes fetched for the resume over the bytes remaining
//   (c) the API's peak RSS with CONCURRENT downloads of a stream ZIP at once (RSS_FILES x FILE_MIB)
//   (d) cold ranges: a fresh stream ZIP of D_FILES x D_MIB (2 x 1024) from an origin capped at
//       D_RATE_MBPS (50) per connection, 40 ms away, beside a plain proxy of the same bytes: time
//       to first byte of a range 70% in (bytes=1500000000- at 2 GiB), of bytes=-4096, of 8 ranges
//       at once (curl), and aria2c -x8 -s8 (when installed); origin bytes per ZIP byte
//   pnpm bench:stream   (SIZES=16x64,64x16 ROUNDS=9, or FILES=16 FILE_MIB=64; RESUME_GIB=2 CONCURRENT=50 RSS_FILES=4 D_FILES=2 D_MIB=1024 to change; ONLY=a|b|c|d; FORMAT=tar)
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { aria2, curlRange, hasAria2, parallelRanges, type Timed } from './lib/cold-ranges';
import { cpuSeconds, drain, firstLine, MBps, ms, pct, peakRssMiB, spawnTs, startApiAndServices, startBenchEnv, startOrigin } from './lib/env';
import { writeResults } from './lib/report';

/** What bench/results/stream.json records, figure by figure. */
const figures: Record<string, unknown> = {};

const MiB = 1024 * 1024;
const FILE_BYTES = Number(process.env.FILE_MIB ?? 64) * MiB;
/** (a)'s sizes, `<files>x<MiB>` comma-separated; FILES and FILE_MIB make it one size. */
const SIZES = (process.env.FILES || process.env.FILE_MIB ? `${process.env.FILES ?? 16}x${FILE_BYTES / MiB}` : (process.env.SIZES ?? '16x64,64x16'))
  .split(',')
  .map((s) => s.split('x').map(Number))
  .map(([files, mib]) => ({ files: files!, fileBytes: mib! * MiB }));
const RESUME_BYTES = Math.round(Number(process.env.RESUME_GIB ?? 2) * 1024 * MiB);
const CONCURRENT = Number(process.env.CONCURRENT ?? 50);
const RSS_FILES = Number(process.env.RSS_FILES ?? 4);
const ONLY = process.env.ONLY;
/** The archive format of the stream jobs: zip (default) or tar. */
const FORMAT = process.env.FORMAT ?? 'zip';
const ROUNDS = Number(process.env.ROUNDS ?? 9);
const D_FILES = Number(process.env.D_FILES ?? 2);
const D_BYTES = Number(process.env.D_MIB ?? 1024) * MiB;
const D_RATE_MBPS = Number(process.env.D_RATE_MBPS ?? 50);

const origin = await startOrigin();
const bench = await startBenchEnv();
const config = loadConfig();
const children: ChildProcess[] = [origin.child];
const db = createDb(config.DATABASE_URL);

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
  // The concurrent downloads are one user's: the per-user cap (STREAM_DOWNLOADS_PER_USER) sits above them.
  const { apiUrl, api, children: services } = await startApiAndServices(bench, ['preparer'], { STREAM_DOWNLOADS_PER_USER: String(CONCURRENT + 16) });
  const proxy = spawnTs('bench/lib/proxy-server.ts', [], { ...process.env, ORIGIN_URL: origin.url });
  const fetchProxy = spawnTs('bench/lib/fetch-proxy-server.ts', [], { ...process.env, ORIGIN_URL: origin.url });
  children.push(...services, proxy, fetchProxy);
  const proxyUrl = (await firstLine<{ url: string }>(proxy)).url;
  const fetchProxyUrl = (await firstLine<{ url: string }>(fetchProxy)).url;
  const { apiKey } = await createUserWithKey(db, { email: `bench-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const startRss = peakRssMiB(api.pid!);
  const streamZip = async (files: string[]) => {
    const res = await fetch(`${apiUrl}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': apiKey },
      body: JSON.stringify({ mode: 'stream', format: FORMAT, files: files.map((url) => ({ url })) }),
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
    const median = (xs: number[]) => pct(xs, 50);
    for (const { files, fileBytes } of SIZES) {
      const total = files * fileBytes;
      const zip = await streamZip(Array.from({ length: files }, (_, i) => `${origin.url}/blob/${fileBytes}/${i}/f${i}.bin`));
      // The first download learns the CRC-32s (hashing every body); the rounds are later downloads.
      const t1 = process.hrtime.bigint();
      await drain(zip.download_url);
      const firstMs = ms(t1);
      const sides = [
        { name: 'plain fetch proxy', url: `${fetchProxyUrl}/concat/${fileBytes}/${files}/0`, bytes: total, pid: fetchProxy.pid! },
        { name: 'fetcher proxy', url: `${proxyUrl}/concat/${fileBytes}/${files}/0`, bytes: total, pid: proxy.pid! },
        { name: 'stream ZIP download', url: zip.download_url, bytes: zip.size, pid: api.pid! },
      ];
      const times = sides.map(() => [] as number[]);
      const cpu = sides.map(() => [] as number[]);
      const originCpu = sides.map(() => [] as number[]);
      for (let r = 0; r < ROUNDS; r++) {
        // Each round runs the three in a rotated order, so none always goes first.
        for (let k = 0; k < sides.length; k++) {
          const i = (r + k) % sides.length;
          const side = sides[i]!;
          const cpu0 = [cpuSeconds(side.pid), cpuSeconds(origin.child.pid!)];
          const t0 = process.hrtime.bigint();
          const got = await drain(side.url);
          if (got.bytes !== side.bytes) throw new Error(`${side.name} sent ${got.bytes} of ${side.bytes}`);
          times[i]!.push(ms(t0));
          const gib = side.bytes / 1024 ** 3;
          cpu[i]!.push((cpuSeconds(side.pid) - cpu0[0]!) / gib);
          originCpu[i]!.push((cpuSeconds(origin.child.pid!) - cpu0[1]!) / gib);
        }
      }
      // The baseline is the faster of the two proxies (by median); the ratio is the median of the rounds' ratios.
      const faster = median(times[0]!) <= median(times[1]!) ? 0 : 1;
      const ratios = times[2]!.map((t, r) => (sides[2]!.bytes / t) / (total / times[faster]![r]!));
      console.log(`(a) throughput, ${files} x ${fileBytes / MiB} MiB, median of ${ROUNDS} rounds (CPU per GiB of the process that sends, and of the origin):`);
      sides.forEach((side, i) =>
        console.log(`    ${side.name.padEnd(20)} ${MBps(side.bytes, median(times[i]!))}  (${median(times[i]!).toFixed(0)} ms; CPU ${median(cpu[i]!).toFixed(2)} s/GiB, origin's ${median(originCpu[i]!).toFixed(2)})`),
      );
      console.log(`    first download (CRCs learned) ${MBps(zip.size, firstMs)}`);
      console.log(`    per round ${ratios.map((x) => x.toFixed(2)).join(' ')}`);
      console.log(`    ratio ${median(ratios).toFixed(2)} against the ${sides[faster]!.name}  (target >= 0.90)`);
      figures[`a ${files} x ${fileBytes / MiB} MiB`] = { streamMBps: (sides[2]!.bytes / median(times[2]!)) * 1000 / 1e6, baselineMBps: (total / median(times[faster]!)) * 1000 / 1e6, baseline: sides[faster]!.name, ratio: median(ratios), target: 0.9 };
    }
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
    figures.b = { originBytes: fetched, remainingBytes: zip.size - cut, ratio: fetched / (zip.size - cut), target: 1.2 };
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
    figures.c = { apiPeakRssMiB: peakRssMiB(api.pid!), plainProxyPeakRssMiB: peakRssMiB(proxy.pid!), failed: bad, aggregateMBps: ((zip.size * CONCURRENT) / took) * 1000 / 1e6 };
  }
  // (d) cold ranges ---------------------------------------------------------------------------
  if (!ONLY || ONLY === 'd') {
    const capped = spawnTs('bench/lib/origin-server.ts', [], { ...process.env, ORIGIN_RATE_MBPS: String(D_RATE_MBPS), ORIGIN_LATENCY_MS: '40' });
    children.push(capped);
    const cappedUrl = (await firstLine<{ url: string }>(capped)).url;
    const cappedProxy = spawnTs('bench/lib/proxy-server.ts', [], { ...process.env, ORIGIN_URL: cappedUrl });
    children.push(cappedProxy);
    const cappedProxyUrl = (await firstLine<{ url: string }>(cappedProxy)).url;
    const stats = async (reset = false) => (await (await fetch(`${cappedUrl}/stats${reset ? '?reset' : ''}`)).json()) as { bytes: number; peakOpen: number };
    // 1,500,000,000 of 2 GiB: the same share of smaller ZIPs.
    const deep = (size: number) => Math.floor((size * 1_500_000_000) / (2 * 1024 * MiB));
    let seed = 9000;
    /** A fresh stream ZIP (nothing learned of it) and the plain proxy's URL of the same bodies. */
    const cold = async () => {
      const first = (seed += D_FILES);
      const zip = await streamZip(Array.from({ length: D_FILES }, (_, i) => `${cappedUrl}/blob/${D_BYTES}/${first + i}/d${i}.bin`));
      return { zip, proxy: `${cappedProxyUrl}/concat/${D_BYTES}/${D_FILES}/${first}` };
    };
    const side = async (url: string, size: number, measure: (url: string, size: number) => Promise<Timed | number>) => {
      const before = (await stats(true)).bytes;
      const got = await measure(url, size);
      // Requests the measure ended may still be sending: the origin's count settles first.
      await new Promise((r) => setTimeout(r, 500));
      const after = await stats();
      return { got, perByte: (after.bytes - before) / size, peakConnections: after.peakOpen };
    };
    const fmt = (t: Timed | number) => (typeof t === 'number' ? `done in ${t.toFixed(2)} s` : `first byte ${t.ttfb.toFixed(2)} s, last ${t.total.toFixed(2)} s`);
    const cases: [string, (url: string, size: number) => Promise<Timed | number>][] = [
      [`bytes=${deep(2 * 1024 * MiB)}- (70% in)`, (url, size) => curlRange(url, `${deep(size)}-`)],
      ['bytes=-4096', (url) => curlRange(url, '-4096')],
      ['8 ranges at once (curl -r)', (url, size) => parallelRanges(url, size, 8)],
      ...(hasAria2 ? [['aria2c -x8 -s8', (url: string) => aria2(url)] as [string, (url: string, size: number) => Promise<number>]] : []),
    ];
    console.log(`(d) cold stream ZIP of ${D_FILES} x ${D_BYTES / MiB} MiB, origin ${D_RATE_MBPS} MB/s per connection, 40 ms (largest file over 8 connections: ${(D_BYTES / (8 * D_RATE_MBPS * 1e6)).toFixed(2)} s)${hasAria2 ? '' : '; aria2c not installed'}`);
    const d: Record<string, unknown> = {};
    for (const [name, measure] of cases) {
      const { zip, proxy } = await cold();
      const stream = await side(zip.download_url, zip.size, measure);
      const plain = await side(proxy, D_FILES * D_BYTES, measure);
      console.log(`    ${name.padEnd(28)} stream ZIP: ${fmt(stream.got)}, origin ${stream.perByte.toFixed(3)} bytes per ZIP byte over up to ${stream.peakConnections} connections | plain proxy: ${fmt(plain.got)}, ${plain.perByte.toFixed(3)}`);
      d[name] = { stream: stream.got, streamOriginPerByte: stream.perByte, streamPeakConnections: stream.peakConnections, proxy: plain.got, proxyOriginPerByte: plain.perByte };
      if (!name.startsWith('aria2c')) continue;
      // Again, every CRC known: what is read beyond the ZIP now is reading ahead, not learning CRCs.
      const warm = await side(zip.download_url, zip.size, measure);
      console.log(`    ${'  again, CRCs known'.padEnd(28)} stream ZIP: ${fmt(warm.got)}, origin ${warm.perByte.toFixed(3)} bytes per ZIP byte`);
      d[`${name}, warm`] = { stream: warm.got, streamOriginPerByte: warm.perByte };
    }
    figures.d = { files: D_FILES, fileMiB: D_BYTES / MiB, rateMBps: D_RATE_MBPS, cases: d };
  }
  writeResults({ bench: 'stream', params: { ONLY: ONLY ?? 'abcd', ROUNDS, CONCURRENT, D_FILES, D_MIB: D_BYTES / MiB, FORMAT }, figures });
} finally {
  // Each stops on SIGTERM; waited for, so that a profile is written.
  await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : (c.once('exit', r), c.kill())))));
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
