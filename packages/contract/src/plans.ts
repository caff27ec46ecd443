// docs/api.md#limits as data, plus the other constants of the contract.
//
// Units (decision): sizes in the Limits table are decimal SI units, as storage is sold:
// 1 GB = 10^9 bytes and 1 TB = 10^12 bytes (so "2 GB" = 2_000_000_000 bytes, not 2 GiB).
// The byte bounds of `max_zip_size_bytes` (104857600 = 100 MiB, 536870912000 = 500 GiB) are
// given in bytes by the reference and used exactly as written.

export const PLAN_NAMES = ['free', 'starter', 'pro', 'scale'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export const JOB_MODES = ['stored', 'stream'] as const;
export type JobMode = (typeof JOB_MODES)[number];

/** Bytes in one GB (decimal). */
export const GB = 1_000_000_000;
/** Bytes in one TB (decimal). */
export const TB = 1_000_000_000_000;

export interface PlanLimits {
  /** Most `files` entries in one stored-mode job. */
  storedFilesPerJob: number;
  /** Most `files` entries in one stream-mode job. */
  streamFilesPerJob: number;
  /** Largest single ZIP (bytes) in stored mode. */
  storedArchiveBytes: number;
  /** Largest single ZIP (bytes) in stream mode. */
  streamArchiveBytes: number;
  /** Stored quota per calendar month, in GB-days (GB = 10^9 bytes). */
  storedQuotaGbDays: number;
  /** Stream quota per calendar month (UTC), in bytes delivered. */
  streamQuotaBytes: number;
  /** Largest `expires_in`, in seconds. */
  maxRetentionSeconds: number;
}

export const PLANS: Readonly<Record<PlanName, Readonly<PlanLimits>>> = Object.freeze({
  free: Object.freeze({
    storedFilesPerJob: 100,
    streamFilesPerJob: 100,
    storedArchiveBytes: 2 * GB,
    streamArchiveBytes: 2 * GB,
    storedQuotaGbDays: 100,
    streamQuotaBytes: 20 * GB,
    maxRetentionSeconds: 86_400,
  }),
  starter: Object.freeze({
    storedFilesPerJob: 1_000,
    streamFilesPerJob: 1_000,
    storedArchiveBytes: 10 * GB,
    streamArchiveBytes: 10 * GB,
    storedQuotaGbDays: 3_000,
    streamQuotaBytes: 500 * GB,
    maxRetentionSeconds: 604_800,
  }),
  pro: Object.freeze({
    storedFilesPerJob: 5_000,
    streamFilesPerJob: 5_000,
    storedArchiveBytes: 50 * GB,
    streamArchiveBytes: 50 * GB,
    storedQuotaGbDays: 20_000,
    streamQuotaBytes: 3 * TB,
    maxRetentionSeconds: 5_184_000,
  }),
  scale: Object.freeze({
    storedFilesPerJob: 20_000,
    streamFilesPerJob: 20_000,
    storedArchiveBytes: 100 * GB,
    streamArchiveBytes: 100 * GB,
    storedQuotaGbDays: 75_000,
    streamQuotaBytes: 20 * TB,
    maxRetentionSeconds: 7_776_000,
  }),
});

/** Running bins per user by plan when the operator sets nothing (PLAN_CONCURRENT_BINS; docs/fair-share.md). */
export const DEFAULT_PLAN_CONCURRENT_BINS: Readonly<Record<PlanName, number>> = Object.freeze({ free: 1, starter: 2, pro: 4, scale: 8 });

/** At most this many private sources per user (more: 403 PLAN_LIMIT_EXCEEDED). */
export const MAX_SOURCES_PER_USER = 20;
/** At most this many webhooks per user (more: 403 PLAN_LIMIT_EXCEEDED). */
export const MAX_WEBHOOKS_PER_USER = 10;

export function isPlanName(value: unknown): value is PlanName {
  return typeof value === 'string' && (PLAN_NAMES as readonly string[]).includes(value);
}

/** Most files per job for a plan and mode. */
export function filesPerJob(plan: PlanName, mode: JobMode): number {
  const p = PLANS[plan];
  return mode === 'stream' ? p.streamFilesPerJob : p.storedFilesPerJob;
}

/** The job or bin error of a ZIP over its plan's per-archive limit (decisions.md, wave 5). */
export const ARCHIVE_TOO_LARGE = "archive exceeds the plan's per-archive limit";

/** Largest single ZIP (bytes) for a plan and mode. */
export function archiveBytes(plan: PlanName, mode: JobMode): number {
  const p = PLANS[plan];
  return mode === 'stream' ? p.streamArchiveBytes : p.storedArchiveBytes;
}

/** The most files any plan allows in one job (scale). */
export const MAX_FILES_PER_JOB_ANY_PLAN = Math.max(...PLAN_NAMES.map((p) => Math.max(PLANS[p].storedFilesPerJob, PLANS[p].streamFilesPerJob)));

// Job create request.
export const EXPIRES_IN_MIN = 300;
export const EXPIRES_IN_DEFAULT = 86_400;
export const MAX_ZIP_SIZE_MIN = 104_857_600;
export const MAX_ZIP_SIZE_MAX = 536_870_912_000;
export const METADATA_MAX_PAIRS = 10;
export const METADATA_KEY_MAX_CHARS = 128;
export const METADATA_VALUE_MAX_CHARS = 1_024;
export const ZIP_FILENAME_MAX_CHARS = 255;
/** Longest file URL accepted (a sanity bound; the contract sets none). */
export const FILE_URL_MAX_CHARS = 8_192;
/** docs/product-rules.md#counts-and-names: a given `filename` over 255 bytes (UTF-8) is rejected; derived names are cut to it. */
export const ENTRY_NAME_MAX_BYTES = 255;

// API keys.
export const API_KEY_NAME_MAX_CHARS = 255;

// Job list.
export const LIST_LIMIT_DEFAULT = 20;
export const LIST_LIMIT_MAX = 100;
/** Longest `cursor` accepted (opaque to clients; a sanity bound). */
export const LIST_CURSOR_MAX_CHARS = 1_024;

/** "24 h", "7 d", "90 d", "300 s": a short human form of a number of seconds for messages. */
export function describeSeconds(seconds: number): string {
  if (seconds >= 2 * 86_400 && seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds >= 3_600 && seconds % 3_600 === 0) return `${seconds / 3_600} h`;
  return `${seconds} s`;
}

/** "2 GB", "3 TB", "1500000 bytes": a short human form of a byte count (decimal units). */
export function describeBytes(bytes: number): string {
  if (bytes >= TB && bytes % TB === 0) return `${bytes / TB} TB`;
  if (bytes >= GB && bytes % GB === 0) return `${bytes / GB} GB`;
  return `${bytes} bytes`;
}
