// The soak's stack as deployed: 2 API processes, a preparer and 3 packers (the service bundles,
// scripts/services.ts), restarted a second after any exit as an orchestrator would; its own
// Redis, Postgres and S3 stand-in, each of which the soak stops and starts again.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { EMBEDDED_S3_CREDENTIALS, freePort } from '../../scripts/embedded';
import { buildServices, spawnService, type ServiceName } from '../../scripts/services';
import { startPrivatePostgres, type PrivatePostgres } from '../../test/private-postgres';
import { endChild, startPrivateRedis, type PrivateRedis } from '../../test/private-redis';
import { firstLine, spawnTs } from '../lib/env';

export const INSTANCES: ReadonlyArray<[string, ServiceName]> = [
  ['api-1', 'api'],
  ['api-2', 'api'],
  ['preparer', 'preparer'],
  ['packer-1', 'packer'],
  ['packer-2', 'packer'],
  ['packer-3', 'packer'],
];

interface Instance {
  name: string;
  service: ServiceName;
  port: number;
  healthPort: number;
  child: ChildProcess | null;
  /** The harness signalled it: its exit is no crash. */
  signalled: boolean;
  crashes: number;
  exits: string[];
}

export interface S3Child {
  endpoint: string;
  restart(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

/** s3rver (bench/soak/s3-child.ts) on `dir`, restartable on the same port. */
export async function startS3Child(dir: string, bucket: string): Promise<S3Child> {
  const port = await freePort();
  let child: ChildProcess;
  const start = async () => {
    child = spawnTs('bench/soak/s3-child.ts', [dir, bucket, String(port)]);
    await firstLine<{ endpoint: string }>(child);
  };
  await start();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async restart(downMs) {
      await endChild(child, 'SIGKILL');
      await new Promise((r) => setTimeout(r, downMs));
      await start();
    },
    stop: () => endChild(child, 'SIGKILL'),
  };
}

export interface SoakStack {
  env: Record<string, string>;
  apiUrls: string[];
  redis: PrivateRedis;
  postgres: PrivatePostgres;
  s3: S3Child;
  customerS3: S3Child;
  logDir: string;
  instances: Instance[];
  signal(name: string, signal: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  /** Resident set size of each service process now, in MB. */
  rss(): Array<{ name: string; mb: number }>;
  stop(): Promise<void>;
}

export async function startSoakStack(runDir: string, overrides: Record<string, string>): Promise<SoakStack> {
  const logDir = path.join(runDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  const [redis, postgres, s3, customerS3] = await Promise.all([
    startPrivateRedis(),
    startPrivatePostgres('soak'),
    startS3Child(path.join(runDir, 's3'), 'soak-archives'),
    startS3Child(path.join(runDir, 'customer-s3'), 'customer'),
    buildServices(undefined, { ifStale: true }),
  ]);
  const instances: Instance[] = [];
  for (const [name, service] of INSTANCES) instances.push({ name, service, port: await freePort(), healthPort: await freePort(), child: null, signalled: false, crashes: 0, exits: [] });
  const apiUrls = instances.filter((i) => i.service === 'api').map((i) => `http://127.0.0.1:${i.port}`);
  const env: Record<string, string> = {
    PATH: process.env.PATH!,
    DATABASE_URL: postgres.url,
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'soak',
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: 'soak-archives',
    S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey,
    PUBLIC_BASE_URL: apiUrls[0]!,
    DOWNLOAD_TOKEN_SECRET: randomBytes(32).toString('hex'),
    SESSION_SECRET: randomBytes(32).toString('hex'),
    SECRETS_KEY: randomBytes(32).toString('base64'),
    LOG_LEVEL: 'warn',
    ALLOW_PRIVATE_URLS: 'true',
    RATE_LIMIT_PER_MINUTE: '100000',
    UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: '100000',
    DOWNLOAD_RATE_LIMIT: '100000',
    // Faults end in seconds, not minutes: a lapsed lease, a stalled body and a failed webhook
    // attempt are noticed within the soak's bound.
    WORKER_LOCK_MS: '6000',
    FETCH_IDLE_TIMEOUT_MS: '5000',
    FETCH_MIN_RATE_WINDOW_MS: '5000',
    WEBHOOK_RETRY_BASE_MS: '1000',
    SEGMENT_BYTES: String(64 * 1024 * 1024),
    ...overrides,
  };
  let stopping = false;
  const launch = (inst: Instance) => {
    const log = createWriteStream(path.join(logDir, `${inst.name}.log`), { flags: 'a' });
    const child = spawnService(inst.service, { ...env, HEALTH_PORT: String(inst.healthPort), ...(inst.service === 'api' ? { PORT: String(inst.port) } : {}) }, { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    inst.child = child;
    inst.signalled = false;
    child.once('exit', (code, signal) => {
      if (stopping) return;
      if (!inst.signalled) {
        inst.crashes++;
        process.stdout.write(`[soak] ${inst.name} exited unasked (${signal ?? `code ${code}`}); see ${path.join(logDir, `${inst.name}.log`)}\n`);
      }
      inst.exits.push(signal ?? `code ${code}`);
      setTimeout(() => !stopping && launch(inst), 1_000);
    });
  };
  for (const inst of instances) launch(inst);
  for (const inst of instances) {
    const probe = inst.service === 'api' ? `http://127.0.0.1:${inst.port}/healthz` : `http://127.0.0.1:${inst.healthPort}/healthz`;
    for (let i = 0; !(await fetch(probe).then((r) => r.ok, () => false)); i++) {
      if (i > 600) throw new Error(`${inst.name} did not answer ${probe} within 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    env,
    apiUrls,
    redis,
    postgres,
    s3,
    customerS3,
    logDir,
    instances,
    async signal(name, signal) {
      const inst = instances.find((i) => i.name === name)!;
      const child = inst.child;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      inst.signalled = true;
      await endChild(child, signal);
    },
    rss() {
      return instances.map((i) => {
        try {
          const line = readFileSync(`/proc/${i.child!.pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
          return { name: i.name, mb: (Number(/(\d+)/.exec(line)![1]) * 1024) / 1e6 };
        } catch {
          return { name: i.name, mb: NaN };
        }
      });
    },
    async stop() {
      stopping = true;
      await Promise.all(instances.map((i) => endChild(i.child, 'SIGKILL')));
      await Promise.all([redis.kill(), s3.stop(), customerS3.stop()]);
      await postgres.remove();
    },
  };
}
