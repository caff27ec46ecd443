// Request schemas (zod 4) of docs/api.md#job-create-fields, and the plan checks the API runs after them.
//
// Decisions (where the contract is silent):
// - Unknown fields are rejected with 400 INVALID_REQUEST, in bodies and in the job list query
//   alike (`unknown field "max_zip_size"`), so a typo is never silently ignored.
// - Optional fields whose absence means something also accept `null` as "not supplied", as the
//   read shapes print them: files[].filename, zip_filename, metadata, max_zip_size_bytes, and the
//   API key's name and expires_at. Fields with a boolean, enum or number default reject null.
// - Types are strict JSON types: no "true" for true, no "3600" for 3600 (query strings aside).
// - `metadata` values must be strings (docs/api.md#job-create-fields: "object of strings"); keys may be any string of at
//   most 128 characters; NUL characters and unpaired surrogates are refused in keys and values
//   (Postgres JSON cannot store them).
// - File URLs: absolute http or https URLs with a host, at most 8,192 characters, without
//   control characters or surrounding spaces (which URL parsers drop silently).
// - `expires_in` and `max_zip_size_bytes` must be whole numbers. The plan's own limits (file
//   count, retention) are not checked here: they are 403 PLAN_LIMIT_EXCEEDED (`checkPlanLimits`);
//   `max_zip_size_bytes` over the plan's per-archive limit is a 400 (`checkArchiveLimit`).
// - `zip_filename` is checked as a template; for a split job (max_zip_size_bytes set) its
//   expansion is also checked for the largest possible split, one ZIP per file.
// - API key `expires_at`: ISO 8601 date and time with seconds optional, fractions allowed, and a
//   `Z` or `±HH:MM` offset required (a local time is ambiguous); it must be after `now`. The
//   parsed value is returned in canonical form (`toISOString()`, millisecond precision).
// - `limit` (query): a whole number 1..100 written in decimal; over 100 is a 400, not clamped.
//   An empty `cursor` is a 400 (it is never a value the API hands out).

import { z } from 'zod';
import { archiveOptionFields, archiveOptionsProblem } from './archive-options';
import { validateGivenFilename } from './entry-names';
import { formatBytes } from './sizes';
import { validateZipFilename } from './filename-template';
import {
  API_KEY_NAME_MAX_CHARS,
  EXPIRES_IN_DEFAULT,
  EXPIRES_IN_MIN,
  FILE_URL_MAX_CHARS,
  JOB_MODES,
  LIST_CURSOR_MAX_CHARS,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  MAX_FILES_PER_JOB_ANY_PLAN,
  MAX_ZIP_SIZE_MAX,
  MAX_ZIP_SIZE_MIN,
  METADATA_KEY_MAX_CHARS,
  METADATA_MAX_PAIRS,
  METADATA_VALUE_MAX_CHARS,
  PLANS,
  archiveBytes,
  describeBytes,
  describeSeconds,
  filesPerJob,
  type JobMode,
  type PlanName,
} from './plans';
import { codePointLength, hasControlCharacter, hasLoneSurrogate } from './text';
import { checkFileEntryAccess, destinationSchema, fileHeadersSchema, isS3Url, s3UrlProblem } from './private-sources';
import { isPrefixEntry } from './prefix-entries';
import { stringRecordSchema } from './string-record';
import { shortKey } from './issue-messages';

export { formatIssuePath, formatZodError } from './issue-messages';

export const SPLIT_STRATEGIES = ['preserve-order', 'ffd'] as const;
export type SplitStrategy = (typeof SPLIT_STRATEGIES)[number];
/** Statuses the job list can filter on (not `preparing`). */
export const LISTABLE_JOB_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type ListableJobStatus = (typeof LISTABLE_JOB_STATUSES)[number];

// ---------------------------------------------------------------------------------------------
// Helpers

/** "is required" when missing, `must be <what>` for a value of the wrong type. */
const typed = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`),
});

/** The error of a schema for a body or query (its root). */
const rootObject = (what: string) => ({ error: () => `${what} must be a JSON object` });
/** The error of a nested object schema. */
const nestedObject = (what: string) => typed(what);

const quoteList = (values: readonly string[]) => {
  const quoted = values.map((v) => `"${v}"`);
  return quoted.length <= 2 ? quoted.join(' or ') : `${quoted.slice(0, -1).join(', ')} or ${quoted[quoted.length - 1]}`;
};

const enumOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${quoteList(values)}`) });

/** A whole number in [min, max] (max optional), one message for every way of missing it. */
function wholeNumber(min: number, max: number | null, describe: string) {
  return z.number(typed(describe)).superRefine((value, ctx) => {
    if (!Number.isInteger(value) || value < min || (max !== null && value > max)) ctx.addIssue({ code: 'custom', message: `must be ${describe}` });
  });
}

/** No NUL and no unpaired surrogate: what Postgres can store as text and JSON. */
const storable = (value: string) => !value.includes('\0') && !hasLoneSurrogate(value);

// ---------------------------------------------------------------------------------------------
// Job create

const NO_HOST = 'must be an http or https URL with a host, like https://example.com/file';

/**
 * Why a value is not an absolute http(s) URL with a host, in words; null when it is one.
 * WHATWG URL parsing repairs what a user did not mean: `http:127.0.0.1` and `http:///path`
 * parse as hosts `127.0.0.1` and `path`, and `http:\\\\h` as `h`. So the text itself must
 * say `http://` or `https://` followed by a host, and the parsed host must be a name or an
 * address (not only dots).
 */
export function httpUrlProblem(value: string): string | null {
  if (value.length === 0) return 'must not be empty';
  if (value !== value.trim()) return 'must not start or end with spaces';
  if (hasControlCharacter(value)) return 'must not contain control characters';
  const scheme = /^(https?):/i.exec(value);
  if (!scheme) return 'must be an http or https URL';
  const rest = value.slice(scheme[0].length);
  if (!rest.startsWith('//')) return `${NO_HOST} (it must start with "${scheme[1]!.toLowerCase()}://")`;
  // The authority as written: up to the path, query or fragment (a backslash counts as a slash).
  const authority = /^[^/?#\\]*/.exec(rest.slice(2))![0];
  const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
  const host = hostPort.startsWith('[') ? hostPort : hostPort.replace(/:[0-9]*$/, '');
  if (host === '') return `${NO_HOST} (the host is missing)`;
  // Credentials travel in per-file `headers`, which are sealed at rest and never shown; in the
  // URL they would be stored, listed and echoed with it.
  if (authority.includes('@')) return 'must not contain a user name or password ("user:pass@"): send credentials in the file\'s headers, like {"Authorization": "Basic ..."}';
  const raw = /[\s"<>\\^`{|}]/u.exec(value);
  if (raw) return `must not contain ${raw[0] === ' ' ? 'a space' : `"${raw[0]}"`}: a URL carries it percent-encoded (${encodeURIComponent(raw[0])})`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not a valid URL';
  }
  if (/^\.*$/.test(url.hostname)) return `${NO_HOST} (the host is missing)`;
  return null;
}

/** An absolute http(s) URL with a host. */
export const isHttpUrl = (value: string): boolean => httpUrlProblem(value) === null;

const fileUrlSchema = z.string(typed('a string')).superRefine((value, ctx) => {
  if (value.length > FILE_URL_MAX_CHARS) ctx.addIssue({ code: 'custom', message: `must be at most ${FILE_URL_MAX_CHARS} characters` });
  else {
    const problem = isS3Url(value) ? s3UrlProblem(value) : httpUrlProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  }
});

const givenFilenameSchema = z.string(typed('a string')).superRefine((value, ctx) => {
  const check = validateGivenFilename(value);
  if (!check.ok) ctx.addIssue({ code: 'custom', message: check.message });
});

export const fileEntrySchema = z
  .strictObject(
    {
      url: fileUrlSchema,
      filename: givenFilenameSchema.nullish(),
      headers: fileHeadersSchema.meta({ type: 'object', maxProperties: 10, additionalProperties: { type: 'string', maxLength: 4096 } }).optional(),
      source: z.string(typed('a source name or id')).min(1, 'must not be empty').max(64, 'must be at most 64 characters').optional(),
    },
    nestedObject('an object with "url" and an optional "filename"'),
  )
  .superRefine(checkFileEntryAccess);

const zipFilenameSchema = z.string(typed('a string')).superRefine((value, ctx) => {
  const check = validateZipFilename(value);
  if (!check.ok) ctx.addIssue({ code: 'custom', message: check.message });
});

/** `metadata`: at most 10 string pairs (validated by hand so that no key is dropped silently). */
const metadataSchema = stringRecordSchema('must be an object of string values', (entries, problem) => {
  if (entries.length > METADATA_MAX_PAIRS) problem(`must have at most ${METADATA_MAX_PAIRS} key/value pairs (got ${entries.length})`);
  for (const [key, v] of entries) {
    const keyChars = codePointLength(key);
    if (keyChars > METADATA_KEY_MAX_CHARS) problem(`key ${shortKey(key)} is longer than ${METADATA_KEY_MAX_CHARS} characters (${keyChars})`);
    else if (!storable(key)) problem(`key ${shortKey(key)} must not contain NUL characters or unpaired surrogates`);
    if (typeof v !== 'string') problem('must be a string', [key]);
    else if (codePointLength(v) > METADATA_VALUE_MAX_CHARS) problem(`must be at most ${METADATA_VALUE_MAX_CHARS} characters (got ${codePointLength(v)})`, [key]);
    else if (!storable(v)) problem('must not contain NUL characters or unpaired surrogates', [key]);
  }
});

export const jobCreateSchema = z
  .strictObject(
    {
      files: z.array(fileEntrySchema, typed('an array of file entries')).min(1, 'must contain at least one file entry'),
      mode: enumOf(JOB_MODES).default('stored'),
      zip_filename: zipFilenameSchema.nullish(),
      expires_in: wholeNumber(EXPIRES_IN_MIN, null, `a whole number of seconds, at least ${EXPIRES_IN_MIN}`)
        .meta({ type: 'integer', minimum: EXPIRES_IN_MIN, description: 'retention in seconds; at most the plan\'s maximum' })
        .default(EXPIRES_IN_DEFAULT),
      fail_on_url_error: z.boolean(typed('true or false')).default(true),
      metadata: metadataSchema
        .meta({
          type: 'object',
          maxProperties: METADATA_MAX_PAIRS,
          propertyNames: { maxLength: METADATA_KEY_MAX_CHARS },
          additionalProperties: { type: 'string', maxLength: METADATA_VALUE_MAX_CHARS },
        })
        .nullish(),
      max_zip_size_bytes: wholeNumber(
        MAX_ZIP_SIZE_MIN,
        MAX_ZIP_SIZE_MAX,
        `a whole number of bytes from ${MAX_ZIP_SIZE_MIN} (${formatBytes(MAX_ZIP_SIZE_MIN)}) to ${MAX_ZIP_SIZE_MAX} (${formatBytes(MAX_ZIP_SIZE_MAX)}), or null`,
      )
        .meta({ type: 'integer', minimum: MAX_ZIP_SIZE_MIN, maximum: MAX_ZIP_SIZE_MAX, description: 'turns on auto-split: the cap of each ZIP\'s final size' })
        .nullish(),
      split_strategy: enumOf(SPLIT_STRATEGIES).default('preserve-order'),
      allow_oversize_zips: z.boolean(typed('true or false')).default(true),
      fail_on_zip_error: z.boolean(typed('true or false')).default(true),
      ...archiveOptionFields,
      destination: destinationSchema.optional(),
    },
    rootObject('the request body'),
  )
  .superRefine((body, ctx) => {
    const optionsProblem = archiveOptionsProblem(body);
    if (optionsProblem) ctx.addIssue({ code: 'custom', message: optionsProblem.message, path: [optionsProblem.path] });
    if (body.destination && body.mode === 'stream') ctx.addIssue({ code: 'custom', message: 'is only for stored jobs (a stream ZIP is built at download time)', path: ['destination'] });
    // A split job has at most one ZIP per file: its names must expand for that many ZIPs too. A
    // prefix entry may stand for as many files as any plan allows in a job.
    if (body.zip_filename === null || body.zip_filename === undefined) return;
    if (body.max_zip_size_bytes === null || body.max_zip_size_bytes === undefined) return;
    const most = body.files.some(isPrefixEntry) ? MAX_FILES_PER_JOB_ANY_PLAN : body.files.length;
    if (most < 2) return;
    const check = validateZipFilename(body.zip_filename, { maxTotal: most });
    if (!check.ok) {
      ctx.addIssue({ code: 'custom', message: `${check.message} (a split job of ${most === body.files.length ? '' : 'up to '}${most} files can have up to ${most} ZIPs)`, path: ['zip_filename'] });
    }
  });

export type JobCreateRequest = z.output<typeof jobCreateSchema>;
export type JobCreateInput = z.input<typeof jobCreateSchema>;

// ---------------------------------------------------------------------------------------------
// Plan checks (run by the API after the schema, with the user's plan)

export interface PlanLimitProblem {
  code: 'PLAN_LIMIT_EXCEEDED';
  message: string;
}

/**
 * File count per job (per mode) and `expires_in` against the plan: 403 PLAN_LIMIT_EXCEEDED
 * (docs/api.md#limits); null when within the plan.
 */
export function checkPlanLimits(plan: PlanName, request: { files: { length: number }; folders?: { length: number } | undefined; mode: JobMode; expires_in: number }): PlanLimitProblem | null {
  const maxFiles = filesPerJob(plan, request.mode);
  const folders = request.folders?.length ?? 0;
  if (request.files.length + folders > maxFiles) {
    return {
      code: 'PLAN_LIMIT_EXCEEDED',
      message: folders
        ? `files: the ${plan} plan allows at most ${maxFiles} files and folders per ${request.mode} job (got ${request.files.length} files and ${folders} folders)`
        : `files: the ${plan} plan allows at most ${maxFiles} files per ${request.mode} job (got ${request.files.length})`,
    };
  }
  const maxRetention = PLANS[plan].maxRetentionSeconds;
  if (request.expires_in > maxRetention) {
    return {
      code: 'PLAN_LIMIT_EXCEEDED',
      message: `expires_in: the ${plan} plan allows at most ${maxRetention} seconds (${describeSeconds(maxRetention)}) (got ${request.expires_in})`,
    };
  }
  return null;
}

/**
 * `max_zip_size_bytes` against the plan's per-archive limit for the mode (docs/product-rules.md#sizes-probing-and-bins: a field
 * rule, 400 INVALID_REQUEST). Returns the message, or null when within it or not set.
 */
export function checkArchiveLimit(plan: PlanName, mode: JobMode, maxZipSizeBytes: number | null | undefined): string | null {
  if (maxZipSizeBytes === null || maxZipSizeBytes === undefined) return null;
  const limit = archiveBytes(plan, mode);
  if (maxZipSizeBytes <= limit) return null;
  return `max_zip_size_bytes: the ${plan} plan allows ZIPs of at most ${limit} bytes (${describeBytes(limit)}) in ${mode} mode (got ${maxZipSizeBytes})`;
}

// ---------------------------------------------------------------------------------------------
// Retry, list, API keys, login

export const retrySchema = z.strictObject(
  { from_checkpoint: z.boolean(typed('true or false')).default(true) },
  rootObject('the request body'),
);
export type RetryRequest = z.output<typeof retrySchema>;

const LIMIT_MESSAGE = `must be a whole number from 1 to ${LIST_LIMIT_MAX}`;

const limitSchema = z
  .union([z.string(), z.number()], { error: LIMIT_MESSAGE })
  .transform((value, ctx) => {
    const n = typeof value === 'number' ? value : /^[0-9]{1,6}$/.test(value) ? Number(value) : Number.NaN;
    if (!Number.isInteger(n) || n < 1 || n > LIST_LIMIT_MAX) {
      ctx.addIssue({ code: 'custom', message: LIMIT_MESSAGE });
      return z.NEVER;
    }
    return n;
  });

/** `GET /jobs` query (express gives strings; numbers are accepted too). */
export const listJobsQuerySchema = z.strictObject(
  {
    // Documented as what it is to a client (a query string carries the number as text).
    limit: limitSchema.meta({ jsonSchema: { type: 'integer', minimum: 1, maximum: LIST_LIMIT_MAX } }).default(LIST_LIMIT_DEFAULT),
    cursor: z
      .string(typed('a single string'))
      .min(1, 'must not be empty (omit it for the first page)')
      .max(LIST_CURSOR_MAX_CHARS, 'is not a value returned in meta.next_cursor')
      .optional(),
    status: enumOf(LISTABLE_JOB_STATUSES).optional(),
  },
  rootObject('the query'),
);
export type ListJobsQuery = z.output<typeof listJobsQuerySchema>;

const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/**
 * Milliseconds since the epoch of an ISO 8601 date-time with an offset (`Z` or `±HH:MM`),
 * seconds optional; null when malformed or not a real date (no 30 February).
 */
export function parseIsoDateTime(value: string): number | null {
  const m = ISO_DATE_TIME.exec(value);
  if (!m) return null;
  const [year, month, day, hour, minute] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [number, number, number, number, number];
  const second = m[6] === undefined ? 0 : Number(m[6]);
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return null;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day > daysInMonth) return null;
  let offsetMinutes = 0;
  const zone = m[8]!;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return null;
    offsetMinutes = (zone[0] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  utc.setUTCHours(hour, minute, second, millis);
  const t = utc.getTime() - offsetMinutes * 60_000;
  return Number.isFinite(t) ? t : null;
}

const apiKeyNameSchema = z.string(typed('a string')).superRefine((value, ctx) => {
  const chars = codePointLength(value);
  if (chars > API_KEY_NAME_MAX_CHARS) ctx.addIssue({ code: 'custom', message: `must be at most ${API_KEY_NAME_MAX_CHARS} characters (got ${chars})` });
  else if (hasControlCharacter(value) || hasLoneSurrogate(value)) ctx.addIssue({ code: 'custom', message: 'must not contain control characters' });
});

/** At most this many active (not revoked, not expired) API keys per user; one more: 403 PLAN_LIMIT_EXCEEDED. */
export const MAX_ACTIVE_API_KEYS_PER_USER = 100;

/** `POST /api-keys` body; `now` decides what "in the future" means (tests pass a fixed time). */
export function apiKeyCreateSchema(now: Date = new Date()) {
  const expiresAt = z.string(typed('an ISO 8601 date and time')).transform((value, ctx) => {
    const t = parseIsoDateTime(value);
    if (t === null) {
      ctx.addIssue({ code: 'custom', message: 'must be an ISO 8601 date and time with a time zone, e.g. 2030-01-31T12:00:00Z' });
      return z.NEVER;
    }
    if (t <= now.getTime()) {
      ctx.addIssue({ code: 'custom', message: 'must be in the future' });
      return z.NEVER;
    }
    return new Date(t).toISOString();
  });
  return z.strictObject(
    {
      name: apiKeyNameSchema.nullish(),
      expires_at: expiresAt.nullish(),
    },
    rootObject('the request body'),
  );
}
export type ApiKeyCreateRequest = z.output<ReturnType<typeof apiKeyCreateSchema>>;

export const loginSchema = z.strictObject(
  {
    email: z.email(typed('an email address')),
    password: z.string(typed('a string')).min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
  },
  rootObject('the request body'),
);
export type LoginRequest = z.output<typeof loginSchema>;
