// The services as deployed (their bundles, one process each) through faults of what they depend
// on (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse: a lost dependency is an error of the bin or
// request at hand, never a crash): an origin cutting bodies, S3 stopped mid-upload, Redis
// restarted. None may exit or log an unhandled rejection or an uncaught exception. Everything is
// private to this file: its own database, redis-server, s3rver and queue prefix (the preparer's
// upkeep would otherwise reach other files' jobs).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb, dropDatabase, ensureDatabase, migrate, type Db } from '@ap/db';
import { freePort, startEmbeddedS3, type EmbeddedS3 } from '../scripts/embedded';
import { spawnService, SERVICES, type ServiceName } from '../scripts/services';
import { call, createUser, until, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { endChild, startPrivateRedis, type PrivateRedis } from './private-redis';
import { startSyntheticOrigin, type SyntheticOrigin } from './synthetic-origin';

const BUCKET = 'faults';
const services = new Map<ServiceName, { child: ChildProcess; log: string; exit: string | null }>();
let databaseUrl: string;
let db: Db;
let redis: PrivateRedis;
let s3Dir: string;
let s3: EmbeddedS3;
let api: string;
let origin: Origin;
let synthetic: SyntheticOrigin;
let key: string;

beforeAll(async () => {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `${url.pathname}_faults`;
  databaseUrl = url.toString();
  await ensureDatabase(databaseUrl);
  await migrate(databaseUrl);
  db = createDb(databaseUrl, 2);
  redis = await startPrivateRedis();
  s3Dir = mkdtempSync(path.join(os.tmpdir(), 'ap-faults-s3-'));
  s3 = await startEmbeddedS3(s3Dir, BUCKET);
  const port = await freePort();
  api = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    NODE_OPTIONS: '',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redis.url,
    REDIS_PREFIX: `${process.env.REDIS_PREFIX}-faults-${randomBytes(3).toString('hex')}`,
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: BUCKET,
    PUBLIC_BASE_URL: api,
    PORT: String(port),
    HEALTH_PORT: '0',
    LOG_LEVEL: process.env.FAULTS_LOG ? 'info' : 'warn',
  };
  for (const name of SERVICES) {
    const child = spawnService(name, env, { stdio: ['ignore', 'pipe', 'pipe'] });
    const entry = { child, log: '', exit: null as string | null };
    child.stdout!.on('data', (d: Buffer) => (entry.log += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (entry.log += d.toString()));
    child.once('exit', (code, signal) => (entry.exit = `${code ?? signal}`));
    services.set(name, entry);
  }
  key = (await createUser({ db }, { plan: 'pro' })).apiKey;
  await until(async () => (await call(api, 'GET', '/usage', { key }).catch(() => ({ status: 0 }))).status === 200, 'the API answers', 20_000);
  origin = await startOrigin();
  synthetic = await startSyntheticOrigin();
}, 60_000);
afterAll(async () => {
  if (process.env.FAULTS_LOG) writeFileSync(process.env.FAULTS_LOG, [...services].map(([n, s]) => `== ${n}\n${s.log}`).join('\n'));
  for (const { child } of services.values()) await endChild(child, 'SIGKILL');
  await origin?.close();
  await synthetic?.close();
  await s3?.close();
  rmSync(s3Dir, { recursive: true, force: true });
  await redis?.kill();
  await db?.$disconnect();
  await dropDatabase(databaseUrl);
}, 30_000);

async function createJob(body: Record<string, unknown>): Promise<string> {
  const res = await call(api, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return res.body.job_id as string;
}

describe('services through faults', () => {
  it('origin cuts, S3 stopped mid-upload, Redis restarted: jobs complete, no process exits or logs a stray error', async () => {
    // An origin cutting a body mid-way: the stored job continues it by range; a stream download
    // of a body that is always cut ends cut.
    const cut = await createJob({ files: [{ url: origin.set('/cut.bin', { body: bytesOf(900, 3_000_000), cutFirstGetAt: 1_000_000 }) }] });
    expect((await waitForJob(api, key, cut, ['completed', 'failed'], 30_000)).status).toBe('completed');
    const stream = await waitForJob(api, key, await createJob({ mode: 'stream', files: [{ url: origin.set('/short.bin', { body: bytesOf(901, 3_000_000), truncateAt: 1_000_000 }) }] }), ['completed', 'failed'], 30_000);
    await fetch(stream.zips[0].download_url).then((res) => res.arrayBuffer()).catch(() => undefined);

    // S3 stopped once the first part is stored, for 15 s: the bin resumes from its parts.
    const big = await createJob({ files: [{ url: `${synthetic.url}/zeros/120000000/big.bin` }] });
    await until(async () => (await db.zipPart.count({ where: { zip: { jobId: big } } })) >= 1, 'a part is stored', 30_000);
    const port = Number(new URL(s3.endpoint).port);
    const closed = s3.close();
    s3.httpServer.closeAllConnections();
    await closed;
    await new Promise((r) => setTimeout(r, 15_000));
    s3 = await startEmbeddedS3(s3Dir, BUCKET, port);
    expect((await waitForJob(api, key, big, ['completed', 'failed'], 90_000)).status).toBe('completed');

    // Redis restarted (its keys lost): a job created once it is back completes.
    await redis.kill();
    await new Promise((r) => setTimeout(r, 1_000));
    await redis.start();
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await createJob({ files: [{ url: origin.set('/after.bin', { body: bytesOf(902, 100_000) }) }] });
    expect((await waitForJob(api, key, after, ['completed', 'failed'], 30_000)).status).toBe('completed');

    const exits = [...services].map(([name, s]) => [name, s.exit]);
    const stray = [...services].flatMap(([name, s]) => s.log.split('\n').filter((line) => /unhandled rejection|uncaught/i.test(line)).map((line) => `${name}: ${line}`));
    expect({ exits, stray }).toEqual({ exits: SERVICES.map((name) => [name, null]), stray: [] });
  }, 150_000);
});
