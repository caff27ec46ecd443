// One `pnpm start` per database and per Redis prefix (docs/configuration.md#pnpm-start-pnpm-admin-pnpm-migrate).
// Two checkouts on one machine find the same Postgres and Redis; sharing them, one stack's
// packer would take the other's jobs and write ZIPs into the wrong embedded S3. A stack claims
// its database with a Postgres advisory lock (held by a session, so it ends with the process
// however it dies) and its Redis prefix with a key it keeps alive.
import pg from 'pg';
import { Redis } from 'ioredis';

export interface StackClaim {
  release(): Promise<void>;
}

export class StackClaimed extends Error {}

/** Refreshed at a third of its time to live; a stack killed with -9 frees its prefix within it. */
const REDIS_CLAIM_TTL_MS = 15_000;

/** Who claims: shown to the other stack in its refusal. */
const claimant = (dataDir: string) => `pnpm start of ${dataDir} (pid ${process.pid})`;

/**
 * Claims `databaseUrl`'s database and `redisPrefix` on `redisUrl` for this stack, or throws
 * StackClaimed naming the stack that holds them.
 */
export async function claimStack(input: { databaseUrl: string; redisUrl: string; redisPrefix: string; dataDir: string }): Promise<StackClaim> {
  const me = claimant(input.dataDir);
  const database = decodeURIComponent(new URL(input.databaseUrl).pathname.slice(1));
  const admin = new URL(input.databaseUrl);
  admin.pathname = '/postgres';
  // The lock lives in the maintenance database, so it is taken before the stack's own exists.
  const session = new pg.Client({ connectionString: admin.toString(), application_name: me.slice(0, 63) });
  session.on('error', () => undefined);
  await session.connect();
  const lockKey = `archive-packager start ${database}`;
  const got = (await session.query<{ got: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS got', [lockKey])).rows[0]!.got;
  if (!got) {
    const holder = await session.query<{ name: string }>(
      `SELECT a.application_name AS name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'advisory' AND l.granted AND l.objid = (hashtext($1)::bigint & 4294967295)::oid LIMIT 1`,
      [lockKey],
    );
    await session.end().catch(() => undefined);
    throw new StackClaimed(`the database "${database}" is in use by another ${holder.rows[0]?.name || 'pnpm start'}`);
  }

  const redis = new Redis(input.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  redis.on('error', () => undefined);
  const key = `${input.redisPrefix}:pnpm-start`;
  try {
    await redis.connect();
    const set = await redis.set(key, me, 'PX', REDIS_CLAIM_TTL_MS, 'NX');
    if (set === null) throw new StackClaimed(`the Redis prefix "${input.redisPrefix}" is in use by another ${(await redis.get(key)) ?? 'pnpm start'}`);
  } catch (err) {
    redis.disconnect();
    await session.end().catch(() => undefined);
    throw err;
  }
  const refresh = setInterval(() => void redis.set(key, me, 'PX', REDIS_CLAIM_TTL_MS).catch(() => undefined), REDIS_CLAIM_TTL_MS / 3);
  refresh.unref();
  return {
    async release() {
      clearInterval(refresh);
      // Only our own claim is removed (a stack that took over after a long Redis outage keeps its).
      await redis.eval("if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0", 1, key, me).catch(() => undefined);
      redis.disconnect();
      await session.end().catch(() => undefined);
    },
  };
}
