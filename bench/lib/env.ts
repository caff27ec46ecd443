// Scratch surroundings for a bench: its own database (migrated, dropped at the end), its own
// Redis prefix, s3rver in a child process, and helpers to run the real services as processes.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { freemem, tmpdir } from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { dropDatabase, ensureDatabase, migrate } from '@ap/db';
import { EMBEDDED_S3_CREDENTIALS, freePort } from '../../scripts/embedded';
import { buildServices, SERVICE_ENV, serviceArgs, spawnService, type ServiceName } from '../../scripts/services';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

// A bench's own malloc setting (package.json) is for the bench process alone: glibc read it at
// start, and the processes a bench starts (origin, s3rver, the services) do not inherit it.
export const OWN_GLIBC_TUNABLES = process.env.GLIBC_TUNABLES ?? 'none';
delete process.env.GLIBC_TUNABLES;

/** Starts a TypeScript entry point as a child process (`node --import tsx`): the bench's helpers. */
export function spawnTs(entry: string, args: string[] = [], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
}

let built: Promise<void> | undefined;

/**
 * Starts one of the real services as deployed: its bundle, flags and environment
 * (scripts/services.ts); `extraFlags` (such as --cpu-prof, which NODE_OPTIONS refuses) go first.
 */
export async function startService(name: ServiceName, env: NodeJS.ProcessEnv, extraFlags: string[] = []): Promise<ChildProcess> {
  await (built ??= buildServices());
  // Their logs are silenced (LOG_LEVEL); warnings still show on stderr.
  const stdio: SpawnOptions['stdio'] = ['ignore', 'ignore', 'inherit'];
  if (extraFlags.length === 0) return spawnService(name, env, { stdio });
  return spawn(process.execPath, [...extraFlags, ...serviceArgs(name)], { stdio, cwd: ROOT, env: { ...env, ...SERVICE_ENV } });
}

/** The first JSON line a child prints on stdout. */
export function firstLine<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve(JSON.parse(line) as T));
    child.once('exit', (code) => reject(new Error(`child exited with ${code} before it was ready`)));
  });
}

export async function startOrigin(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawnTs('bench/lib/origin-server.ts');
  const { url } = await firstLine<{ url: string }>(child);
  return { url, child };
}

export interface BenchEnv {
  env: Record<string, string>;
  /** The s3rver process. */
  s3Pid: number;
  /** Milliseconds s3rver took to answer the last CompleteMultipartUpload of `key`, once it has. */
  completionMs(key: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Where the benches' s3rver keeps its files: in memory (tmpfs) when the machine has it, as
 * the curl baselines write to /dev/null. On this VM's disk, s3rver's join of a job's parts
 * took 1.4 s for 500 MiB whose parts had come in over 13 s, against 0.15 s when they had come
 * in at once: the kernel's dirty-page throttling, not the service (bench/README.md, "The S3
 * stand-in's disk"). BENCH_S3_DIR=/tmp puts it back on disk.
 */
const S3_DATA_ROOT = process.env.BENCH_S3_DIR ?? (existsSync('/dev/shm') ? '/dev/shm' : tmpdir());

/** Files left by a bench that was killed (in memory, when under /dev/shm): its process is gone. */
function removeStaleS3Dirs(): void {
  for (const name of readdirSync(S3_DATA_ROOT)) {
    const pid = /^ap-bench-s3-(\d+)$/.exec(name)?.[1];
    if (pid === undefined || isAlive(Number(pid))) continue;
    rmSync(path.join(S3_DATA_ROOT, name), { recursive: true, force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Sets process.env for the real config module and returns it for child services too. */
export async function startBenchEnv(extra: Record<string, string> = {}): Promise<BenchEnv> {
  const base = new URL(process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres');
  base.pathname = `/ap_bench_${randomBytes(4).toString('hex')}`;
  const databaseUrl = base.toString();
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl);
  removeStaleS3Dirs();
  const s3 = spawnTs('bench/lib/s3-server.ts', [path.join(S3_DATA_ROOT, `ap-bench-s3-${process.pid}`), 'bench']);
  const { endpoint } = await firstLine<{ endpoint: string }>(s3);
  const completions = new Map<string, number>();
  createInterface({ input: s3.stdout! }).on('line', (line) => {
    const { completed, ms } = JSON.parse(line) as { completed?: string; ms?: number };
    if (completed !== undefined && ms !== undefined) completions.set(completed, ms);
  });
  const env: Record<string, string> = {
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `ap_bench_${process.pid}`,
    S3_ENDPOINT: endpoint,
    S3_BUCKET: 'bench',
    S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey,
    PUBLIC_BASE_URL: 'http://127.0.0.1:1',
    DOWNLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
    SESSION_SECRET: randomBytes(32).toString('hex'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '1000000',
    UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '1000000',
    DOWNLOAD_RATE_LIMIT: '1000000',
    ALLOW_PRIVATE_URLS: 'true',
    HEALTH_PORT: '0',
    ...extra,
  };
  Object.assign(process.env, env);
  return {
    env,
    s3Pid: s3.pid!,
    async completionMs(key) {
      // Its line may trail the answer by a moment.
      for (let i = 0; i < 100 && !completions.has(key); i++) await new Promise((r) => setTimeout(r, 10));
      const found = completions.get(key);
      if (found === undefined) throw new Error(`s3rver reported no completion for ${key}`);
      return found;
    },
    async close() {
      s3.kill('SIGTERM');
      await new Promise((r) => s3.once('exit', r));
      await dropDatabase(databaseUrl);
    },
  };
}

/** Starts a process's peak RSS (VmHWM) over from its current RSS (Linux: clear_refs 5). */
export function resetPeakRss(pid: number): void {
  writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

/** Peak resident set size of a process so far (VmHWM), in MiB. */
export function peakRssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'))!;
  return Number(/(\d+)/.exec(line)![1]) / 1024;
}

/** A peak RSS in MiB as the benches print it: also in MB, the unit of the 200 MB targets. */
export const rssFigure = (mib: number): string => `${mib.toFixed(0)} MiB = ${((mib * 2 ** 20) / 1e6).toFixed(0)} MB`;

/** CPU time (user + system) a process has used so far, in seconds (Linux: /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const fields = procStat(pid);
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

/** Minor page faults of a process so far: pages the kernel had to hand it anew. */
export function minorFaults(pid: number): number {
  return Number(procStat(pid)[7]);
}

/** /proc/<pid>/stat's fields after the command name, from state (field 3) on. */
const procStat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');

export const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
/** Bytes over milliseconds, in MB/s (decimal, as the benches print sizes). */
export const rate = (bytes: number, millis: number) => ((bytes / millis) * 1000) / 1e6;
export const MBps = (bytes: number, millis: number) => `${rate(bytes, millis).toFixed(0)} MB/s`;
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/**
 * The API on a free port and the other services named, on the bench's surroundings; resolves
 * once the API answers /healthz. PROFILE=<dir>: each service writes a V8 CPU profile there when
 * it stops (open it in Chrome DevTools). BENCH_FLAGS_<service>: more node flags for that service
 * (e.g. BENCH_FLAGS_api="--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=/tmp").
 */
export async function startApiAndServices(
  bench: BenchEnv,
  others: Exclude<ServiceName, 'api'>[],
  extraEnv: Record<string, string> = {},
): Promise<{ apiUrl: string; api: ChildProcess; children: ChildProcess[]; env: NodeJS.ProcessEnv }> {
  const port = await freePort();
  const apiUrl = `http://127.0.0.1:${port}`;
  const env = { ...process.env, ...bench.env, PORT: String(port), PUBLIC_BASE_URL: apiUrl, ...extraEnv };
  const profile = process.env.PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROFILE}`] : [];
  const flagsOf = (name: ServiceName) => [...profile, ...(process.env[`BENCH_FLAGS_${name}`]?.split(' ') ?? [])];
  const api = await startService('api', env, flagsOf('api'));
  const children = [api, ...(await Promise.all(others.map((name) => startService(name, env, flagsOf(name)))))];
  // Up to a minute: on a loaded machine the API has taken over 10 s to start.
  for (let i = 0; ; i++) {
    if (await fetch(`${apiUrl}/healthz`).then((r) => r.ok, () => false)) break;
    if (i >= 600) throw new Error(`the API did not answer /healthz within 60 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { apiUrl, api, children, env };
}

/** Reads a URL to the end into nothing; resolves with the byte count. */
export function drain(url: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number }> {
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

/**
 * Where a stand-in that will hold about `bytes` keeps its files: BENCH_S3_DIR when set, else
 * /dev/shm when it can hold them without crowding memory (what it has free, and half of the
 * memory the machine has available: tmpfs is RAM, and a full one swaps), else the disk.
 */
export function s3DataRootFor(bytes: number): string {
  if (process.env.BENCH_S3_DIR) return process.env.BENCH_S3_DIR;
  if (!existsSync('/dev/shm')) return tmpdir();
  const shm = statfsSync('/dev/shm');
  return bytes <= Math.min(shm.bavail * shm.bsize, freemem() / 2) ? '/dev/shm' : tmpdir();
}

/**
 * A second S3 stand-in playing a customer's account (bench/lib/s3-server.ts), its data where
 * `s3DataRootFor(holds)` says (memory when it fits); `args` pass on (e.g. --traffic).
 */
export async function startCustomerS3(tag: string, bucket: string, args: string[] = [], holds = 0): Promise<{ child: ChildProcess; endpoint: string; dataRoot: string }> {
  const dataRoot = s3DataRootFor(holds);
  const child = spawnTs('bench/lib/s3-server.ts', [path.join(dataRoot, `ap-bench-${tag}-${process.pid}`), bucket, ...args]);
  const { endpoint } = await firstLine<{ endpoint: string }>(child);
  return { child, endpoint, dataRoot };
}
