import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { z } from 'zod';
import { DEFAULT_PLAN_CONCURRENT_BINS, PLAN_NAMES, type PlanName } from '@ap/contract';
import { parseSecretsKey } from '@ap/secrets';

/** Thrown when the environment is invalid; `problems` holds one line per bad variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { error: `must be a URL (${protocols.join(' or ')})` },
  );

const secret = z.string().min(32, { error: 'must be at least 32 characters' });

// Stored secrets (request header values, source credentials, archive passwords) are sealed
// with this key; see @ap/secrets.
const secretsKey = z.string().superRefine((value, ctx) => {
  try {
    parseSecretsKey(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
  }
});

const port = z.coerce
  .number({ error: 'must be a port number' })
  .int({ error: 'must be a port number' })
  .min(0, { error: 'must be between 0 and 65535' })
  .max(65535, { error: 'must be between 0 and 65535' });

const positiveInt = z.coerce.number({ error: 'must be a whole number' }).int({ error: 'must be a whole number' }).positive({ error: 'must be greater than 0' });
const nonNegativeInt = z.coerce.number({ error: 'must be a whole number' }).int({ error: 'must be a whole number' }).min(0, { error: 'must be 0 or more' });

/** Comma-separated IP addresses or CIDRs (`10.0.0.0/8`, `::1`). */
const addressList = z
  .string()
  .transform((v) => v.split(',').map((item) => item.trim()).filter(Boolean))
  .refine((items) => items.every(isAddressOrCidr), { error: 'must be a comma-separated list of IP addresses or CIDRs' });

/** Comma-separated DNS servers: `1.1.1.1`, `1.1.1.1:53`, `::1` or `[::1]:53`. */
const dnsServerList = z
  .string()
  .transform((v) => v.split(',').map((item) => item.trim()).filter(Boolean))
  .refine((items) => items.every(isDnsServer), { error: 'must be a comma-separated list of IP addresses, each with an optional :port' });

function isDnsServer(item: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(item);
  const withPort = /^([^:]+):(\d{1,5})$/.exec(item);
  const [address, portText] = bracketed ? [bracketed[1]!, bracketed[2]] : withPort ? [withPort[1]!, withPort[2]] : [item, undefined];
  return isIP(address) !== 0 && (portText === undefined || (Number(portText) > 0 && Number(portText) <= 65535));
}

function isAddressOrCidr(item: string): boolean {
  const [address = '', bits, extra] = item.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (version === 4 ? 32 : 128);
}

export type PlanConcurrentBins = Readonly<Record<PlanName, number>>;
const PLAN_CAP = new RegExp(`^(${PLAN_NAMES.join('|')})=([1-9][0-9]{0,3})$`);

/** `free=1,starter=2,pro=4,scale=8`: running bins per user, by plan; plans left out keep their default. */
const planConcurrentBins = z.string().transform((value, ctx): PlanConcurrentBins => {
  const caps: Record<string, number> = { ...DEFAULT_PLAN_CONCURRENT_BINS };
  for (const pair of value.split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = PLAN_CAP.exec(pair);
    if (!match) {
      ctx.addIssue({ code: 'custom', message: `must be plan=number pairs separated by commas (${PLAN_NAMES.join(', ')}; 1-9999), not "${pair}"` });
      return z.NEVER;
    }
    caps[match[1]!] = Number(match[2]);
  }
  return caps as PlanConcurrentBins;
});

const schema = z.object({
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  REDIS_URL: url(['redis:', 'rediss:']),
  S3_ENDPOINT: url(['http:', 'https:']).optional(),
  S3_REGION: z.string().min(1).default('us-east-1'),
  S3_BUCKET: z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, { error: 'must be a valid S3 bucket name' }),
  S3_ACCESS_KEY_ID: z.string().min(1, { error: 'must not be empty' }),
  S3_SECRET_ACCESS_KEY: z.string().min(1, { error: 'must not be empty' }),
  S3_FORCE_PATH_STYLE: bool.default(true),
  PUBLIC_BASE_URL: url(['http:', 'https:']).transform((v) => v.replace(/\/+$/, '')),
  PORT: port.default(3000),
  // Health endpoints of the worker services (0 = a free port, printed at start).
  HEALTH_PORT: port.default(0),
  DOWNLOAD_TOKEN_SECRET: secret,
  SESSION_SECRET: secret,
  SECRETS_KEY: secretsKey,
  // The key a rotation moves away from: still read, never written (`pnpm admin secrets rotate`).
  SECRETS_KEY_PREVIOUS: secretsKey.optional(),
  ALLOW_PRIVATE_URLS: bool.default(false),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { error: 'must be one of fatal, error, warn, info, debug, trace, silent' }).default('info'),
  // Namespace of every Redis key (queues, rate limits), so stacks can share one Redis.
  REDIS_PREFIX: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: 'must be 1-64 letters, digits, _ . -' }).default('ap'),
  // Tuning knobs with safe defaults (not part of the fixed operator interface).
  RATE_LIMIT_PER_MINUTE: positiveInt.default(600),
  // Requests with a missing or unknown API key per client address and minute, counted before any lookup.
  UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: positiveInt.default(60),
  // A request whose headers and body have not all arrived this long after it began is cut (408; slowloris).
  REQUEST_TIMEOUT_MS: positiveInt.default(60_000),
  // GET /download/:token requests per ZIP and minute, across replicas (a link holder repeating a download).
  DOWNLOAD_RATE_LIMIT: positiveInt.default(300),
  // Proxies whose X-Forwarded-For is believed: addresses or CIDRs, comma-separated; none by default.
  TRUSTED_PROXIES: addressList.default([]),
  // DNS servers for user-given hosts (job URLs, webhooks, source endpoints); none: the system's.
  DNS_SERVERS: dnsServerList.default([]),
  PACKER_CONCURRENCY: positiveInt.default(2),
  PREPARER_CONCURRENCY: positiveInt.default(2),
  PROBE_CONCURRENCY: positiveInt.default(32),
  // A job still probing this long after a preparer took it fails, "preparing took too long".
  PREPARE_TIMEOUT_MS: positiveInt.default(15 * 60_000),
  // Pages of one prefix entry's listing asked for at most; past it the job fails, "listing did not progress".
  PREFIX_LIST_PAGES: positiveInt.default(1_000),
  // Fetching a bin's (or a stream download's) bodies: no data for this long is a stall
  // (continued by range); connections and bytes fetched ahead per archive being written.
  FETCH_IDLE_TIMEOUT_MS: positiveInt.default(30_000),
  // A body delivering less than 16 KiB over this window is cut, "origin too slow" (tests shrink it).
  FETCH_MIN_RATE_WINDOW_MS: positiveInt.default(30_000),
  FETCH_CONCURRENCY: positiveInt.default(8),
  // Bodies at least this long are copied inside S3 (docs/private-sources.md#server-side-assembly).
  SERVER_COPY_MIN_BYTES: positiveInt.default(16 * 1024 * 1024),
  // Connections to one origin host that a process's archives open ahead at most, together.
  FETCH_HOST_CONNECTIONS: positiveInt.default(16),
  // HTTP/2 to https origins that offer it (docs/engine.md#http2); false: HTTP/1.1 everywhere.
  FETCH_HTTP2: bool.default(true),
  FETCH_BUDGET_BYTES: positiveInt.default(64 * 1024 * 1024),
  // What all of an API process's stream downloads fetch ahead together (each also within FETCH_BUDGET_BYTES).
  STREAM_FETCH_BUDGET_BYTES: positiveInt.default(128 * 1024 * 1024),
  // Bodies fetched ahead beyond the memory budget from origins without validators go to local
  // disk here (docs/engine.md#spilling-ahead-to-disk): a directory per process, at most this
  // many bytes (0: no spilling, they wait in memory).
  FETCH_SPILL_DIR: z.string().min(1, { error: 'must not be empty' }).default(tmpdir()),
  FETCH_SPILL_BYTES: nonNegativeInt.default(2 * 1024 * 1024 * 1024),
  // A stored bin over twice this is packed in segments of about this size (docs/segments.md).
  SEGMENT_BYTES: positiveInt.min(64 * 1024 * 1024, { error: 'must be at least 67108864 (64 MiB)' }).default(1024 * 1024 * 1024),
  // How long a worker's claim on a queue job lasts without renewal; a killed worker's job is
  // picked up by another once it lapses.
  WORKER_LOCK_MS: positiveInt.default(30_000),
  // Fair share (docs/fair-share.md): running bins per user by plan, and stream downloads in
  // flight per user.
  // Unset: DEFAULT_PLAN_CONCURRENT_BINS.
  PLAN_CONCURRENT_BINS: planConcurrentBins.prefault(''),
  STREAM_DOWNLOADS_PER_USER: positiveInt.default(20),
  // Unit of the webhook retry schedule (1, 5, 30, 120, 300, 600, 720 units): one minute in
  // production; tests shrink it so a whole schedule runs in seconds.
  WEBHOOK_RETRY_BASE_MS: positiveInt.default(60_000),
});

export type Config = z.infer<typeof schema>;

/**
 * Parses the environment once. Empty strings count as unset so that `VAR=` in a shell or
 * a compose file falls back to the default rather than failing obscurely.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? 'environment');
      const message = issue.code === 'invalid_type' && cleaned[name] === undefined ? 'is required' : issue.message;
      return `${name} ${message}`;
    });
    throw new ConfigError(problems);
  }
  return parsed.data;
}
