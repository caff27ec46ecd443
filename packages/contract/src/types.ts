// Response shapes of api.md, field for field. Datetimes are ISO 8601 UTC strings
// (`toISOString()`), sizes are numbers of bytes.

import type { ErrorCode } from './errors';
import type { JobMode } from './plans';
import type { ListableJobStatus, SplitStrategy } from './schemas';

export const JOB_STATUSES = ['preparing', 'pending', 'processing', 'completed', 'failed'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

export const ZIP_STATUSES = ['pending', 'processing', 'completed', 'failed'] as const;
export type ZipStatus = (typeof ZIP_STATUSES)[number];

export type { JobMode, ListableJobStatus, SplitStrategy };

/** api.md "API key" as listed (`GET /api-keys`): without `key`. */
export interface ApiKeyView {
  id: string;
  /** Label, at most 255 characters (empty when none was given). */
  name: string;
  created_at: string;
  /** null: no expiry. */
  expires_at: string | null;
  /** null: never used. */
  last_used_at: string | null;
}

/** api.md "API key" as created (`POST /api-keys`): `key` is the secret, shown only here. */
export interface CreatedApiKeyView extends ApiKeyView {
  key: string;
}

/** api.md "File entry" in a job read response. */
export interface FileEntryView {
  url: string;
  /** null when not supplied. */
  filename: string | null;
}

/** api.md "Error entry". An empty `url` marks a failure that belongs to no single URL. */
export interface ErrorEntryView {
  url: string;
  error: string;
}

/** api.md "ZIP entry" (`zips[]`). */
export interface ZipEntryView {
  /** `zip_` prefix. */
  id: string;
  /** 1-indexed bin number. */
  sequence: number;
  status: ZipStatus;
  filename: string;
  file_count: number;
  /** Final size in bytes; null until the ZIP is completed. */
  size: number | null;
  /** Signed URL; null unless the ZIP is completed and the job not expired. */
  download_url: string | null;
  /** Per-bin errors; only when there are some. */
  errors?: ErrorEntryView[];
}

/** api.md "Job (read, full form)" (`GET /jobs/:id`). */
export interface JobView {
  id: string;
  status: JobStatus;
  files: FileEntryView[];
  url_count: number;
  file_count: number;
  /** Legacy; for split jobs the first bin's filename. */
  zip_filename: string;
  /** Legacy; null for split jobs. */
  zip_size: number | null;
  fail_on_url_error: boolean;
  /** Legacy; null for split jobs, and unless completed and not expired. */
  download_url: string | null;
  metadata: Record<string, string> | null;
  created_at: string;
  /** null until the job is completed or failed (decisions.md). */
  completed_at: string | null;
  expires_at: string;
  multi_zip: boolean;
  max_zip_size_bytes: number | null;
  split_strategy: SplitStrategy;
  fail_on_zip_error: boolean;
  zip_count: number;
  /** Bytes across all ZIPs. */
  total_size: number;
  zips: ZipEntryView[];
  /** Only when applicable. */
  errors?: ErrorEntryView[];
}

/** api.md "Job (list item)" (`GET /jobs`). */
export type JobListItemView = Pick<
  JobView,
  | 'id'
  | 'status'
  | 'url_count'
  | 'file_count'
  | 'zip_filename'
  | 'zip_size'
  | 'multi_zip'
  | 'zip_count'
  | 'total_size'
  | 'max_zip_size_bytes'
  | 'fail_on_url_error'
  | 'created_at'
  | 'completed_at'
  | 'expires_at'
>;

/** api.md "Pagination meta". */
export interface PaginationMeta {
  limit: number;
  total: number;
  /** Opaque; pass it as `cursor` for the next page. null when `has_more` is false. */
  next_cursor: string | null;
  has_more: boolean;
}

// Envelopes of each endpoint.

export interface ErrorResponse {
  success: false;
  error: { code: ErrorCode; message: string };
}
export interface ListApiKeysResponse {
  success: true;
  api_keys: ApiKeyView[];
}
export interface CreateApiKeyResponse {
  success: true;
  api_key: CreatedApiKeyView;
}
export interface RevokeApiKeyResponse {
  success: true;
  message: string;
}
export interface CreateJobResponse {
  success: true;
  job_id: string;
}
export interface ListJobsResponse {
  success: true;
  jobs: JobListItemView[];
  meta: PaginationMeta;
}
export interface GetJobResponse {
  success: true;
  job: JobView;
}
export interface RetryJobResponse {
  success: true;
  job_id: string;
}
/** decisions.md: `POST /auth/login`. */
export interface LoginResponse {
  success: true;
  token: string;
}
