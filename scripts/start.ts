// `pnpm start`: the whole stack in one terminal with embedded defaults.
// Migrates the database, builds the service bundles, then runs api, preparer and packer as
// child processes (scripts/services.ts), restarting one that crashes, as an orchestrator would.
//
// Signals (docs/operations.md#the-rules): the services run in process groups of their own, so
// the terminal's Ctrl-C reaches only this process (and pnpm/tsx above it, which relay it here
// once more). This process then sends each service one SIGTERM: the API drains, the packer
// hands its bins back. A second Ctrl-C/SIGTERM (a second after the first or later: the relayed
// copies of one keypress arrive within milliseconds) kills them at once.
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { Redis } from 'ioredis';
import { ConfigError, loadConfig } from '@ap/config';
import { ensureDatabase, migrate } from '@ap/db';
import { listen, PortInUseError } from '@ap/service-kit';
import { DATA_DIR, DEFAULT_DATABASE_URL, DEFAULT_REDIS_URL, devSecrets, writeRuntimeInfo } from './dev-env';
import { EMBEDDED_S3_CREDENTIALS, freePort, startEmbeddedPostgres, startEmbeddedS3, startRedisServer, type EmbeddedS3, type EmbeddedPostgresHandle } from './embedded';
import { buildServices, spawnService, SERVICES, type ServiceName } from './services';
import { claimStack, StackClaimed } from './stack-claim';
import { buildDashboard } from '@ap/dashboard';

const say = (line: string) => process.stdout.write(`[start] ${line}\n`);
const die = (line: string): never => {
  process.stderr.write(`[start] ${line}\n`);
  process.exit(1);
};

const cleanups: Array<() => Promise<void>> = [];
const env: NodeJS.ProcessEnv = { ...process.env };
const unset = (name: string) => !env[name];

/** Null when the server answers (the maintenance database), else why not, in words. */
async function postgresProblem(url: string): Promise<string | null> {
  let admin: URL;
  try {
    admin = new URL(url);
  } catch {
    return 'it is not a URL';
  }
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString(), connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return null;
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    return code ? `${code}: ${message}` : message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The URL without its password, for messages. */
function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not a URL)';
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

/** Whether another process holds `port`. */
async function portInUse(port: number): Promise<boolean> {
  const probe = net.createServer();
  try {
    await listen(probe, port);
    return false;
  } catch (err) {
    if (err instanceof PortInUseError) return true;
    throw err;
  } finally {
    probe.close();
  }
}

// --- the ports asked for, before anything starts: a service on a taken port would not serve ---
// (values that are not port numbers are reported by loadConfig below, with the other variables)
const portNumber = (value: string | undefined) => (value && /^\d+$/.test(value) && Number(value) > 0 && Number(value) < 65_536 ? Number(value) : null);
const wantedPorts: Array<[number | null, string]> = [[portNumber(env.PORT || '3000'), 'PORT, the API']];
const firstHealthPort = portNumber(env.HEALTH_PORT);
// PACKERS=N: N packer processes, each with its own operations port (docs/segments.md).
const packers = Number(env.PACKERS || '1');
if (!Number.isInteger(packers) || packers < 1 || packers > 32) die(`PACKERS must be a whole number from 1 to 32 (got "${env.PACKERS}")`);
const instances: Array<[string, ServiceName]> = SERVICES.flatMap((name): Array<[string, ServiceName]> =>
  name === 'packer' && packers > 1 ? Array.from({ length: packers }, (_, i): [string, ServiceName] => [`packer-${i + 1}`, name]) : [[name, name]],
);
if (firstHealthPort) for (const [i, [instance]] of instances.entries()) wantedPorts.push([firstHealthPort + i, `HEALTH_PORT + ${i}, the ${instance}'s operations port`]);
for (const [port, what] of wantedPorts) {
  if (port !== null && (await portInUse(port))) die(`port ${port} is in use (${what}): stop what holds it, or choose another port`);
}

// --- the variables, and a DATABASE_URL that does not answer, before anything is built or started ---
{
  // What this script fills in later (embedded services, development secrets) stands in for now.
  const filledIn: NodeJS.ProcessEnv = {
    DATABASE_URL: DEFAULT_DATABASE_URL,
    REDIS_URL: DEFAULT_REDIS_URL,
    S3_BUCKET: 'archives',
    S3_ACCESS_KEY_ID: EMBEDDED_S3_CREDENTIALS.accessKeyId,
    S3_SECRET_ACCESS_KEY: EMBEDDED_S3_CREDENTIALS.secretAccessKey,
    PUBLIC_BASE_URL: 'http://localhost:3000',
    ...devSecrets(),
  };
  try {
    loadConfig({ ...filledIn, ...Object.fromEntries(Object.entries(env).filter(([, v]) => v)) });
  } catch (err) {
    if (err instanceof ConfigError) die(err.message);
    throw err;
  }
}
if (!unset('DATABASE_URL')) {
  const problem = await postgresProblem(env.DATABASE_URL!);
  if (problem !== null) {
    die(
      `PostgreSQL does not answer at DATABASE_URL (${shownUrl(env.DATABASE_URL!)}): ${problem}\n` +
        'Start it, fix DATABASE_URL, or unset DATABASE_URL to use the local server on 127.0.0.1:5432 (or an embedded one).',
    );
  }
}

// --- the service bundles (those whose sources changed), before anything is started that would have to be stopped ---
await Promise.all([buildServices(SERVICES, { ifStale: true }), buildDashboard({ ifStale: true })]);

// --- Postgres: the configured one (it answered above), else the local server, else embedded under .data/ ---
if (unset('DATABASE_URL')) {
  if ((await postgresProblem(DEFAULT_DATABASE_URL)) === null) {
    env.DATABASE_URL = DEFAULT_DATABASE_URL;
  } else {
    say('no Postgres answers on 127.0.0.1:5432; starting embedded Postgres under .data/postgres');
    const embedded: EmbeddedPostgresHandle = await startEmbeddedPostgres(path.join(DATA_DIR, 'postgres'), 'archive_packager');
    cleanups.push(() => embedded.stop());
    env.DATABASE_URL = embedded.url;
  }
}

// --- Redis: the configured one, else the local server, else a private redis-server under .data/ ---
{
  const configured = !unset('REDIS_URL');
  env.REDIS_URL ||= DEFAULT_REDIS_URL;
  if (!(await redisAnswers(env.REDIS_URL!))) {
    // Only a loopback address can be served here: its port, or a free one when none was set.
    const url = new URL(env.REDIS_URL!);
    const local = ['127.0.0.1', 'localhost'].includes(url.hostname) && !url.username && !url.password;
    const redisPort = configured ? Number(url.port || 6379) : await freePort();
    const redis = local ? await startRedisServer(path.join(DATA_DIR, 'redis'), redisPort) : null;
    if (!redis) {
      await stopEmbedded();
      die(
        `Redis does not answer at ${shownUrl(env.REDIS_URL!)}${local ? ' and no redis-server is installed (./dev start installs it as root)' : ''}.\n` +
          'Install redis-server (Debian: apt-get install redis-server), or set REDIS_URL to a reachable server.',
      );
    } else {
      cleanups.push(() => redis.stop());
      if (!configured) env.REDIS_URL = redis.url;
      say(`no Redis answered; private redis-server at ${redis.url}, working in .data/redis (no persistence)`);
    }
  }
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
env.SECRETS_KEY ||= secrets.SECRETS_KEY;

let config;
try {
  config = loadConfig(env);
} catch (err) {
  await stopEmbedded();
  if (err instanceof ConfigError) die(err.message);
  throw err;
}

// --- this stack's database and Redis prefix, unless another stack's (another checkout's) ---
try {
  const claim = await claimStack({ databaseUrl: config.DATABASE_URL, redisUrl: config.REDIS_URL, redisPrefix: config.REDIS_PREFIX, dataDir: DATA_DIR });
  cleanups.push(() => claim.release());
} catch (err) {
  await stopEmbedded();
  if (!(err instanceof StackClaimed)) throw err;
  die(`${err.message}: stop it, or give this stack a DATABASE_URL and a REDIS_PREFIX of its own`);
}

try {
  await ensureDatabase(config.DATABASE_URL);
  const migrated = await migrate(config.DATABASE_URL);
  say(`database ${shownUrl(config.DATABASE_URL)} ready (${migrated.applied.length} migration(s) applied, ${migrated.alreadyApplied.length} already there)`);
  say(`Redis ${shownUrl(config.REDIS_URL)}, key prefix "${config.REDIS_PREFIX}"; S3 ${config.S3_ENDPOINT ?? 'AWS'}, bucket "${config.S3_BUCKET}"`);
} catch (err) {
  await stopEmbedded();
  die(`the database at ${shownUrl(config.DATABASE_URL)} could not be prepared: ${(err as Error).message}`);
}
// Recorded for `pnpm admin` only once the database is known to work.
writeRuntimeInfo({ DATABASE_URL: env.DATABASE_URL });

// --- the three services ---
/**
 * Operations ports: HEALTH_PORT, when set, is the API's, and the preparer's and the packer's
 * are the two after it; otherwise each gets a free port. Printed either way.
 */
const basePort = Number(env.HEALTH_PORT) || 0;
const healthPorts: Record<string, number> = {};
for (const [i, [instance]] of instances.entries()) healthPorts[instance] = basePort ? basePort + i : await freePort();

/** Restart backoff: 1 s doubling to 30 s; a service that ran a minute starts again from 1 s. */
const RESTART_MIN_MS = 1_000;
const RESTART_MAX_MS = 30_000;
const STABLE_AFTER_MS = 60_000;
/** How long the services get to stop on the first signal before they are killed. */
const STOP_GRACE_MS = 40_000;

interface Running {
  child: ChildProcess;
  exited: Promise<void>;
}
const running = new Map<string, Running>();
let stopping = false;

function launch(instance: string, name: ServiceName, restarts: number): void {
  const startedAt = Date.now();
  // detached: a process group of its own, so the terminal's Ctrl-C does not reach it directly.
  const child = spawnService(name, { ...env, HEALTH_PORT: String(healthPorts[instance]) }, { stdio: ['ignore', 'inherit', 'inherit'], detached: true });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  running.set(instance, { child, exited });
  say(`${instance} started (pid ${child.pid})`);
  child.once('exit', (code, signal) => {
    if (stopping) return;
    const backoffFrom = Date.now() - startedAt >= STABLE_AFTER_MS ? 0 : restarts;
    const delay = Math.min(RESTART_MAX_MS, RESTART_MIN_MS * 2 ** backoffFrom);
    process.stderr.write(`[start] ${instance} exited (${signal ?? `code ${code}`}); restarting it in ${delay / 1000} s (restart ${backoffFrom + 1})\n`);
    setTimeout(() => {
      if (!stopping) launch(instance, name, backoffFrom + 1);
    }, delay).unref();
  });
}

async function stopEmbedded(): Promise<void> {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  cleanups.length = 0;
}

let firstSignalAt = 0;
let forced = false;
async function onSignal(signal: NodeJS.Signals): Promise<void> {
  if (stopping) {
    // The same keypress relayed by pnpm and tsx arrives within milliseconds: not a second one.
    if (Date.now() - firstSignalAt < 1_000) return;
    if (forced) return;
    forced = true;
    say(`${signal} again: killing the services`);
    for (const { child } of running.values()) child.kill('SIGKILL');
    await Promise.race([Promise.all([...running.values()].map((r) => r.exited)), new Promise((r) => setTimeout(r, 3_000))]);
    await stopEmbedded();
    process.exit(1);
  }
  stopping = true;
  firstSignalAt = Date.now();
  say(`${signal}: stopping the services (API drains its responses, packers hand their bins back); ${signal === 'SIGINT' ? 'Ctrl-C' : 'signal'} again to kill them`);
  await Promise.all(
    [...running.values()].map(async ({ child, exited }) => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }),
  );
  if (forced) return; // the second signal's path ends the process
  await stopEmbedded();
  say('stopped');
  process.exit(0);
}

process.on('SIGINT', (s) => void onSignal(s));
process.on('SIGTERM', (s) => void onSignal(s));
process.on('SIGHUP', (s) => void onSignal(s));
// Should this process die some other way, its detached services must not outlive it.
process.on('exit', () => {
  for (const { child } of running.values()) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

for (const [instance, name] of instances) {
  launch(instance, name, 0);
  say(`${instance} health: http://127.0.0.1:${healthPorts[instance]}/healthz`);
}
say(`API at ${config.PUBLIC_BASE_URL} (port ${config.PORT}); create a user with: pnpm admin users create --email you@example.com`);
