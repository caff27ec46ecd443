// Response shapes of docs/api.md#resources, field for field, as zod schemas: the API's
// handlers are typed by them, GET /openapi.json describes them, and the contract test checks
// every response the test suites receive against them. Datetimes are ISO 8601 UTC strings
// (`toISOString()`), sizes are numbers of bytes.

import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from './errors';
import { ARCHIVE_FORMATS, COMPRESSIONS, encryptionViewSchema } from './archive-options';
import { JOB_MODES, type JobMode } from './plans';
import { LISTABLE_JOB_STATUSES, SPLIT_STRATEGIES, type ListableJobStatus, type SplitStrategy } from './schemas';

export const JOB_STATUSES = ['preparing', 'pending', 'processing', 'completed', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const ZIP_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type ZipStatus = (typeof ZIP_STATUSES)[number];

export type { JobMode, ListableJobStatus, SplitStrategy };
export { JOB_MODES };

const isoDateTime = () => z.iso.datetime({ offset: false }).describe('ISO 8601 UTC date and time');
const bytes = () => z.number().int().nonnegative();

/** docs/api.md#api-key as listed (`GET /api-keys`): without `key`. */
export const apiKeyViewSchema = z
  .strictObject({
    id: z.guid(),
    name: z.string().describe('label, at most 255 characters (empty when none was given)'),
    created_at: isoDateTime(),
    expires_at: isoDateTime().nullable().describe('null: no expiry'),
    last_used_at: isoDateTime().nullable().describe('null: never used'),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyView = z.output<typeof apiKeyViewSchema>;

/** docs/api.md#api-key as created (`POST /api-keys`): `key` is the secret, shown only here. */
export const createdApiKeyViewSchema = apiKeyViewSchema
  .extend({ key: z.string().startsWith('azk_').describe('the secret value, shown only in this response') })
  .meta({ id: 'CreatedApiKey' });

/** docs/api.md#error-entry. An empty `url` marks a failure that belongs to no single URL. */
export const errorEntryViewSchema = z.strictObject({ url: z.string(), error: z.string() }).meta({ id: 'ErrorEntry' });

/** docs/api.md#file-entry in a job read response. */
export const fileEntryViewSchema = z
  .strictObject({
    url: z.string(),
    filename: z.string().nullable().describe('null when not supplied'),
    header_names: z.array(z.string()).optional().describe('names of the request headers given (lower case, sorted); their values are never shown'),
  })
  .meta({ id: 'FileEntry' });

/** docs/fair-share.md#progress-of-a-job: the share of the job's bytes written. */
function jobProgressSchema() {
  return z.number().min(0).max(1).nullable().describe('sum of `bytes_done` over sum of `expected_size`, 0 to 1 (3 decimals); 1 when completed; null when a size is unknown');
}

/** docs/api.md#zip-entry (`zips[]`). */
export const zipEntryViewSchema = z
  .strictObject({
    id: z.string().startsWith('zip_'),
    sequence: z.number().int().positive().describe('1-indexed bin number'),
    status: z.enum(ZIP_STATUSES),
    filename: z.string(),
    file_count: z.number().int().nonnegative(),
    size: bytes().nullable().describe('final size in bytes; null until the ZIP is completed'),
    download_url: z.string().nullable().describe('signed URL; null unless the ZIP is completed and the job not expired'),
    errors: z.array(errorEntryViewSchema).optional().describe('per-bin errors; only when there are some'),
    bytes_done: bytes().describe('bytes of this ZIP written so far: its size when completed, 0 while pending and for stream jobs'),
    expected_size: bytes().nullable().describe('the predicted final size, or null when unknown'),
    location: z.string().nullable().optional().describe('jobs with a destination only: s3://<bucket>/<key> of the ZIP, null until it is completed'),
  })
  .meta({ id: 'Zip' });
export type ZipEntryView = z.output<typeof zipEntryViewSchema>;

const jobCommon = {
  id: z.guid(),
  status: z.enum(JOB_STATUSES),
  url_count: z.number().int().nonnegative(),
  file_count: z.number().int().nonnegative(),
  zip_filename: z.string().describe('legacy; for split jobs the first bin\'s filename'),
  zip_size: bytes().nullable().describe('legacy; null for split jobs'),
  fail_on_url_error: z.boolean(),
  created_at: isoDateTime(),
  completed_at: isoDateTime().nullable().describe('null until the job is completed or failed'),
  expires_at: isoDateTime(),
  multi_zip: z.boolean(),
  max_zip_size_bytes: bytes().nullable(),
  zip_count: z.number().int().nonnegative(),
  total_size: bytes().describe('bytes across all ZIPs'),
  format: z.enum(ARCHIVE_FORMATS).describe('the archive format: "zip", "tar" or "tar.gz"'),
};

/** docs/api.md#job-full-form (`GET /jobs/:id`). */
export const jobViewSchema = z
  .strictObject({
    ...jobCommon,
    files: z.array(fileEntryViewSchema),
    download_url: z.string().nullable().describe('legacy; null for split jobs, and unless completed and not expired'),
    metadata: z.record(z.string(), z.string()).nullable(),
    split_strategy: z.enum(SPLIT_STRATEGIES),
    fail_on_zip_error: z.boolean(),
    compression: z.enum(COMPRESSIONS),
    compression_level: z.number().int().min(1).max(9).nullable().describe('the deflate or gzip level; null unless compression is "deflate" or format "tar.gz"'),
    encryption: encryptionViewSchema.nullable().describe('the method only; the password is never returned'),
    folders: z.array(z.string()).describe('the empty folders asked for'),
    manifest: z.boolean().describe('the archive ends with manifest.csv'),
    zips: z.array(zipEntryViewSchema),
    errors: z.array(errorEntryViewSchema).optional().describe('only when applicable'),
    progress: jobProgressSchema(),
  })
  .meta({ id: 'Job' });
export type JobView = z.output<typeof jobViewSchema>;

/** docs/api.md#job-list-item (`GET /jobs`). */
export const jobListItemViewSchema = z.strictObject({ ...jobCommon, progress: jobProgressSchema() }).meta({ id: 'JobListItem' });
export type JobListItemView = z.output<typeof jobListItemViewSchema>;

/** docs/api.md#pagination-meta. */
export const paginationMetaSchema = z
  .strictObject({
    limit: z.number().int().positive(),
    total: z.number().int().nonnegative(),
    next_cursor: z.string().nullable().describe('opaque; pass it as `cursor` for the next page; null when has_more is false'),
    has_more: z.boolean(),
  })
  .meta({ id: 'PaginationMeta' });

// Envelopes of each endpoint.

export const listApiKeysResponseSchema = z.strictObject({ success: z.literal(true), api_keys: z.array(apiKeyViewSchema) });
export type ListApiKeysResponse = z.output<typeof listApiKeysResponseSchema>;

export const createApiKeyResponseSchema = z.strictObject({ success: z.literal(true), api_key: createdApiKeyViewSchema });
export type CreateApiKeyResponse = z.output<typeof createApiKeyResponseSchema>;

/** `DELETE` answers (`{success, message}`). */
export const messageResponseSchema = z.strictObject({ success: z.literal(true), message: z.string() });
export type MessageResponse = z.output<typeof messageResponseSchema>;

/** `POST /jobs` (201) and `POST /jobs/:id/retry` (200). */
export const jobIdResponseSchema = z.strictObject({ success: z.literal(true), job_id: z.guid() });
export type JobIdResponse = z.output<typeof jobIdResponseSchema>;

export const listJobsResponseSchema = z.strictObject({ success: z.literal(true), jobs: z.array(jobListItemViewSchema), meta: paginationMetaSchema });
export type ListJobsResponse = z.output<typeof listJobsResponseSchema>;

export const getJobResponseSchema = z.strictObject({ success: z.literal(true), job: jobViewSchema });
export type GetJobResponse = z.output<typeof getJobResponseSchema>;

/** docs/api.md#post-authlogin. */
export const loginResponseSchema = z.strictObject({ success: z.literal(true), token: z.string().describe('session JWT (HS256, 12 h)') });
export type LoginResponse = z.output<typeof loginResponseSchema>;

/** `GET /healthz`. */
export const healthResponseSchema = z.strictObject({ success: z.literal(true), status: z.literal('ok') });
export type HealthResponse = z.output<typeof healthResponseSchema>;

/** `GET /readyz`: 200 when every dependency answers, 503 otherwise (naming the failing ones). */
export const readinessResponseSchema = z.strictObject({
  success: z.boolean(),
  status: z.enum(['ready', 'unavailable']),
  failing: z.array(z.string()),
});
export type ReadinessResponse = z.output<typeof readinessResponseSchema>;

/** The error envelope, with `code` limited to the given codes (one schema per route and status). */
export function errorResponseSchema(codes: readonly ErrorCode[] = Object.keys(ERROR_CODES) as ErrorCode[]) {
  return z.strictObject({
    success: z.literal(false),
    error: z.strictObject({ code: z.enum(codes as [ErrorCode, ...ErrorCode[]]), message: z.string() }),
  });
}
export type ErrorResponse = z.output<ReturnType<typeof errorResponseSchema>>;
