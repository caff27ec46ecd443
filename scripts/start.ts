// `pnpm start`: the whole stack in one terminal with embedded defaults.
// Migrates the database, builds the service bundles, then runs api, preparer and packer as
// child processes (scripts/services.ts).
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig } from '@ap/config';
import { ensureDatabase, migrate } from '@ap/db';
import { DATA_DIR, DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, devSecrets, writeRuntimeInfo } from './dev-env';
import { EMBEDDED_S3_CREDENTIALS, freePort, startEmbeddedPostgres, startEmbeddedS3, type EmbeddedS3, type EmbeddedPostgresHandle } from './embedded';
import { buildServices, spawnService, type ServiceName } from './services';
import { buildDashboard } from '@ap/dashboard';

const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const die = (line: string): never => {
  process.stderr.write(`[start] ${line}\n`);
  process.exit(1);
};

const cleanups: Array<() => Promise<void>> = [];
const env: NodeJS.ProcessEnv = { ...process.env };
const unset = (name: string) => !env[name];

async function postgresAnswers(url: string): Promise<boolean> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function redisAnswers(url: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 3000 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    await redis.ping();
    return true;
  } catch {
    return false;
  } finally {
    redis.disconnect();
  }
}

// --- the service bundles, before anything is started that would have to be stopped ---
await Promise.all([buildServices(), buildDashboard({ ifStale: true })]);

// --- Postgres: the configured one, else the local server, else embedded under .data/ ---
if (unset('DATABASE_URL')) {
  if (await postgresAnswers(DEFAULT_DATABASE_URL)) {
    env.DATABASE_URL = DEFAULT_DATABASE_URL;
  } else {
    say('no Postgres answers on 127.0.0.1:5432; starting embedded Postgres under .data/postgres');
    const embedded: EmbeddedPostgresHandle = await startEmbeddedPostgres(path.join(DATA_DIR, 'postgres'), 'archive_packager');
    cleanups.push(() => embedded.stop());
    env.DATABASE_URL = embedded.url;
  }
}
writeRuntimeInfo({ DATABASE_URL: env.DATABASE_URL });

// --- Redis: required; no embedded stand-in ---
env.REDIS_URL ||= DEFAULT_REDIS_URL;
if (!(await redisAnswers(env.REDIS_URL!))) {
  die(
    `Redis does not answer at ${env.REDIS_URL}. Start one, e.g.:\n` +
      '  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no\n' +
      'or set REDIS_URL to a reachable server.',
  );
}

// --- S3: embedded s3rver unless an endpoint is configured ---
env.S3_BUCKET ||= 'archives';
if (unset('S3_ENDPOINT')) {
  const s3: EmbeddedS3 = await startEmbeddedS3(path.join(DATA_DIR, 's3'), env.S3_BUCKET!);
  cleanups.push(() => s3.close());
  env.S3_ENDPOINT = s3.endpoint;
  env.S3_ACCESS_KEY_ID ||= EMBEDDED_S3_CREDENTIALS.accessKeyId;
  env.S3_SECRET_ACCESS_KEY ||= EMBEDDED_S3_CREDENTIALS.secretAccessKey;
  env.S3_FORCE_PATH_STYLE ||= 'true';
  say(`embedded S3 (s3rver) at ${s3.endpoint}, bucket "${env.S3_BUCKET}", data in .data/s3`);
}

env.PORT ||= '3000';
env.PUBLIC_BASE_URL ||= `http://localhost:${env.PORT}`;
const secrets = devSecrets();
env.DOWNLOAD_TOKEN_SECRET ||= secrets.DOWNLOAD_TOKEN_SECRET;
env.SESSION_SECRET ||= secrets.SESSION_SECRET;

let config;
try {
  config = loadConfig(env);
} catch (err) {
  if (err instanceof ConfigError) die(err.message);
  throw err;
}

await ensureDatabase(config.DATABASE_URL);
const migrated = await migrate(config.DATABASE_URL);
say(`database ready (${migrated.applied.length} migration(s) applied, ${migrated.alreadyApplied.length} already there)`);

// --- the three services ---
const children = new Map<string, ChildProcess>();
let stopping = false;

async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    await Promise.all(
      [...children.values()].map(
        (child) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
            setTimeout(() => child.kill('SIGKILL'), 20_000).unref();
          }),
      ),
    );
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
  process.exit(code);
}

const services: Array<{ name: ServiceName; env?: NodeJS.ProcessEnv }> = [
  { name: 'api' },
  { name: 'preparer', env: { HEALTH_PORT: String(await freePort()) } },
  { name: 'packer', env: { HEALTH_PORT: String(await freePort()) } },
];
for (const service of services) {
  const child = spawnService(service.name, { ...env, ...service.env }, { stdio: ['ignore', 'inherit', 'inherit'] });
  children.set(service.name, child);
  child.on('exit', (code, signal) => {
    if (stopping) return;
    process.stderr.write(`[start] ${service.name} exited (${signal ?? code}); stopping the stack\n`);
    void stopAll(1);
  });
  if (service.env?.HEALTH_PORT) say(`${service.name} health: http://127.0.0.1:${service.env.HEALTH_PORT}/healthz`);
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));
say(`API at ${config.PUBLIC_BASE_URL} (port ${config.PORT}); create a user with: pnpm admin users create --email you@example.com`);
