import type { Config } from '@ap/config';
import { keyringFrom, secretBox, type SecretBox } from '@ap/secrets';
import { createDb, type Db } from '@ap/db';
import { createLogger, type Logger } from '@ap/log';
import { createRedis, type Redis } from '@ap/queue';
import { createObjectStore, type ObjectStore } from '@ap/storage';
import { createFetcher, DEFAULT_MIN_RATE, setDnsServers, SpillArea, type Fetcher, type OwnStore } from '@ap/fetch';
import type { ReadinessCheck } from './health';
import { measuredFetcher } from './measured-fetcher';
import { bytesUploadedTotal } from './metrics';

// ZIP entry times are MS-DOS local times: every replica must agree on "local" so that a job's
// archive bytes (and stream ETags) do not depend on the machine that built them.
process.env.TZ = 'UTC';

/** What every service process holds: its config and one client per backing service. */
export interface ServiceContext {
  config: Config;
  log: Logger;
  db: Db;
  redis: Redis;
  store: ObjectStore;
  /** Fetches remote URLs behind the SSRF guard. */
  fetcher: Fetcher;
  /** Seals and opens stored secrets under SECRETS_KEY (SECRETS_KEY_PREVIOUS read during a rotation). */
  secrets: SecretBox;
  readiness: Record<string, ReadinessCheck>;
  close(): Promise<void>;
}

/** How every service fetches remote URLs (docs/engine.md#fetching-ahead). */
export function fetcherOptions(config: Pick<Config, 'ALLOW_PRIVATE_URLS'> & Partial<Pick<Config, 'FETCH_IDLE_TIMEOUT_MS' | 'FETCH_MIN_RATE_WINDOW_MS' | 'FETCH_HOST_CONNECTIONS' | 'FETCH_HTTP2' | 'S3_ENDPOINT' | 'S3_BUCKET'>>) {
  const minRate = { ...DEFAULT_MIN_RATE, windowMs: config.FETCH_MIN_RATE_WINDOW_MS ?? DEFAULT_MIN_RATE.windowMs };
  return {
    allowPrivate: config.ALLOW_PRIVATE_URLS,
    connectTimeoutMs: 10_000,
    idleTimeoutMs: config.FETCH_IDLE_TIMEOUT_MS ?? 30_000,
    minRate,
    userAgent: 'archive-packager/1.0',
    ...(config.FETCH_HOST_CONNECTIONS !== undefined ? { hostConnections: config.FETCH_HOST_CONNECTIONS } : {}),
    ...(config.FETCH_HTTP2 !== undefined ? { http2: config.FETCH_HTTP2 } : {}),
    ...(config.S3_BUCKET !== undefined ? { ownStore: ownStoreOf({ S3_ENDPOINT: config.S3_ENDPOINT, S3_BUCKET: config.S3_BUCKET }) } : {}),
  };
}

/** The service's own store, refused as a user's source or destination (@ap/fetch own-store.ts). */
export function ownStoreOf(config: { S3_ENDPOINT?: string | undefined; S3_BUCKET: string }): OwnStore {
  return { endpoint: config.S3_ENDPOINT, bucket: config.S3_BUCKET };
}

export function storageConfig(config: Config) {
  return {
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    bucket: config.S3_BUCKET,
    accessKeyId: config.S3_ACCESS_KEY_ID,
    secretAccessKey: config.S3_SECRET_ACCESS_KEY,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
  };
}

/** archive_bytes_uploaded_total: the body of every part (or single object) the store accepted. */
function countUploadedBytes(store: ObjectStore): void {
  store.client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      if (context.commandName === 'UploadPartCommand' || context.commandName === 'PutObjectCommand') {
        const body = (args.input as { Body?: unknown }).Body;
        if (body instanceof Uint8Array) bytesUploadedTotal.inc(body.byteLength);
      }
      return result;
    },
    { step: 'initialize', name: 'archiveBytesUploaded' },
  );
}

/**
 * `spill`: the process fetches ahead (packer, API), so it gets a spill area under
 * FETCH_SPILL_DIR, removing those of processes no longer running (docs/engine.md#spilling-ahead-to-disk).
 */
export function createServiceContext(name: string, config: Config, { spill = false } = {}): ServiceContext {
  const log = createLogger(name, config.LOG_LEVEL);
  setDnsServers(config.DNS_SERVERS);
  const db = createDb(config.DATABASE_URL);
  const redis = createRedis(config.REDIS_URL);
  redis.on('error', (err) => log.warn({ err: err.message }, 'redis connection error'));
  const store = createObjectStore(storageConfig(config));
  countUploadedBytes(store);
  const spillArea = spill && config.FETCH_SPILL_BYTES > 0 ? SpillArea.open(config.FETCH_SPILL_DIR, config.FETCH_SPILL_BYTES) : null;
  const fetcher = measuredFetcher(createFetcher({ ...fetcherOptions(config), ...(spillArea ? { spill: spillArea } : {}) }), name);
  return {
    config,
    log,
    db,
    redis,
    store,
    fetcher,
    secrets: secretBox(keyringFrom(config.SECRETS_KEY, config.SECRETS_KEY_PREVIOUS)),
    readiness: {
      postgres: () => db.$queryRaw`SELECT 1`,
      redis: () => redis.ping(),
      s3: () => store.ping(),
    },
    async close() {
      await Promise.allSettled([db.$disconnect(), redis.quit()]);
      store.client.destroy();
      fetcher.close();
      spillArea?.close();
    },
  };
}
