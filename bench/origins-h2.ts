// HTTP/2 against HTTP/1.1 from one distant https origin (docs/engine.md#http2): the packer's
// archive writer (writeArchive -> ZIP writer -> null sink, fetch concurrency 8 as FETCH_CONCURRENCY's
// default) over H2_FILES files of H2_KIB, the origin in its own process answering every request
// LATENCY_MS later and offering both protocols (ALPN), with a CA made for the run. Per protocol
// the writer's time and CPU time (this process: less bent by a shared machine's load), the
// origin's connections and requests, and curl's time for the same URLs (`--parallel
// --parallel-max 8`, `--http1.1` or HTTP/2 multiplexed). Rounds alternate the protocols. It
// writes bench/results/origins-h2.json.
//   pnpm bench:origins:h2   (H2_FILES=1000 H2_KIB=256 LATENCY_MS=40 RATE_MBPS=0 ROUNDS=2 to change)
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { rmSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { createFetcher } from '@ap/fetch';
import { fetcherOptions } from '@ap/service-kit';
import { firstLine, MBps, ms, spawnTs } from './lib/env';
import { curlToNull, writeArchiveToNull } from './lib/baselines';
import { writeResults } from './lib/report';
import { makeTestCa } from '../packages/fetch/src/testing-tls';

const FILES = Number(process.env.H2_FILES ?? 1000);
const BYTES = Number(process.env.H2_KIB ?? 256) * 1024;
const LATENCY_MS = process.env.LATENCY_MS ?? '40';
const RATE_MBPS = process.env.RATE_MBPS ?? '0';
const ROUNDS = Number(process.env.ROUNDS ?? 2);
const CONCURRENCY = 8;

const tlsCa = makeTestCa(['localhost']);
const caFile = `/tmp/ap-bench-h2-ca-${process.pid}.pem`;
writeFileSync(caFile, tlsCa.ca);
const child = spawnTs('bench/lib/origin-server.ts', [], { ...process.env, ORIGIN_LATENCY_MS: LATENCY_MS, ORIGIN_RATE_MBPS: RATE_MBPS, ORIGIN_TLS_CERT: tlsCa.cert, ORIGIN_TLS_KEY: tlsCa.key });
const { url: originUrl } = await firstLine<{ url: string }>(child);
const urls = Array.from({ length: FILES }, (_, i) => `${originUrl}/blob/${BYTES}/${i}/f${i}.bin`);

interface OriginStats {
  requests: number;
  connections: number;
}
async function stats(): Promise<OriginStats> {
  const { stdout } = await promisify(execFile)('curl', ['-sS', '--cacert', caFile, `${originUrl}/stats`]);
  return JSON.parse(stdout) as OriginStats;
}

async function writer(http2: boolean) {
  const fetcher = createFetcher({ ...fetcherOptions({ ALLOW_PRIVATE_URLS: true, FETCH_HTTP2: http2 }), extraCa: [tlsCa.ca] });
  const before = await stats();
  const cpu0 = process.cpuUsage();
  const { writerMs, zipBytes } = await writeArchiveToNull(urls, fetcher, { concurrency: CONCURRENCY, budgetBytes: 64 * 1024 * 1024 });
  const cpu = process.cpuUsage(cpu0);
  fetcher.close();
  const after = await stats();
  return { ms: writerMs, cpuS: (cpu.user + cpu.system) / 1e6, zipBytes, requests: after.requests - before.requests, connections: after.connections - before.connections - 1 };
}

const load = () => loadavg().map((l) => l.toFixed(2)).join(' ');
const runs: Record<string, unknown>[] = [];
try {
  console.log(`${FILES} files x ${BYTES / 1024} KiB, origin ${LATENCY_MS} ms per answer${RATE_MBPS !== '0' ? `, ${RATE_MBPS} MB/s per response` : ''}; load ${load()}`);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const http2 of [false, true]) {
      const w = await writer(http2);
      const curlMs = await curlToNull(urls, { parallel: CONCURRENCY, args: ['--cacert', caFile, http2 ? '--http2' : '--http1.1'] });
      const run = { round, protocol: http2 ? 'h2' : 'http/1.1', writerS: w.ms / 1000, writerCpuS: w.cpuS, curlS: curlMs / 1000, connections: w.connections, requests: w.requests, load: load() };
      runs.push(run);
      console.log(`round ${round} ${run.protocol.padEnd(8)} writer ${(w.ms / 1000).toFixed(2)} s (${MBps(FILES * BYTES, w.ms)}, CPU ${w.cpuS.toFixed(2)} s, ${w.connections} connections, ${w.requests} requests); curl ${(curlMs / 1000).toFixed(2)} s; load ${run.load}`);
    }
  }
  writeResults({ bench: 'origins-h2', params: { files: FILES, bytes: BYTES, latencyMs: Number(LATENCY_MS), rateMBps: Number(RATE_MBPS), concurrency: CONCURRENCY }, figures: { runs } });
} finally {
  child.kill();
  rmSync(caFile, { force: true });
  rmSync(`/tmp/ap-bench-h2-${process.pid}.curl`, { force: true });
}
