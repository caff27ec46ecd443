// The dashboard's API client: one typed fetch wrapper, so that the generated SDK (packages/sdk)
// can replace it later. Every call sends the session bearer and nothing else: the page never
// holds an API key. A 401 on an authenticated call ends the session (the caller's `onExpired`).

export type JobStatus = 'preparing' | 'pending' | 'processing' | 'completed' | 'failed';
export type ZipStatus = 'pending' | 'processing' | 'completed' | 'failed';
export type Mode = 'stored' | 'stream';

export interface ErrorEntry {
  url: string;
  error: string;
}

export interface ApiKey {
  id: string;
  name: string;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  /** Only in the create response. */
  key?: string;
}

export interface JobListItem {
  id: string;
  status: JobStatus;
  url_count: number;
  file_count: number;
  zip_filename: string;
  zip_size: number | null;
  multi_zip: boolean;
  zip_count: number;
  total_size: number;
  max_zip_size_bytes: number | null;
  fail_on_url_error: boolean;
  created_at: string;
  completed_at: string | null;
  expires_at: string;
}

export interface ZipEntry {
  id: string;
  sequence: number;
  status: ZipStatus;
  filename: string;
  file_count: number;
  size: number | null;
  download_url: string | null;
  errors?: ErrorEntry[];
}

export interface Job extends JobListItem {
  files: { url: string; filename: string | null }[];
  download_url: string | null;
  metadata: Record<string, string> | null;
  split_strategy: string;
  fail_on_zip_error: boolean;
  zips: ZipEntry[];
  errors?: ErrorEntry[];
}

export interface PageMeta {
  limit: number;
  total: number;
  next_cursor: string | null;
  has_more: boolean;
}

export interface JobCreate {
  files: { url: string; filename?: string }[];
  mode: Mode;
  zip_filename?: string;
  max_zip_size_bytes?: number;
}

export type WebhookEvent = 'job.completed' | 'job.failed' | 'download.completed';
export const WEBHOOK_EVENTS: WebhookEvent[] = ['job.completed', 'job.failed', 'download.completed'];

export interface Webhook {
  id: string;
  url: string;
  events: WebhookEvent[];
  description: string | null;
  created_at: string;
  /** Only in the create and rotate responses. */
  secret?: string;
}

export interface Delivery {
  id: string;
  event: WebhookEvent;
  job_id: string | null;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

export interface Usage {
  plan: string;
  period_start: string;
  period_end: string;
  overage_enabled: boolean;
  stream_bytes: number;
  stream_quota_bytes: number;
  stored_gb_days: number;
  stored_quota_gb_days: number;
}

export type JobStats = Record<'total' | 'preparing' | 'pending' | 'processing' | 'completed' | 'failed', number>;

/** A failed call: the API's error code and message (or a network failure). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiFailure';
  }
}

export interface SessionHooks {
  token(): string | null;
  /** The API answered 401 to a call made with the session: it has expired or was revoked. */
  onExpired(): void;
}

export type Api = ReturnType<typeof createApi>;

const query = (params: Record<string, string | number | undefined>) => {
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
};

export function createApi(session: SessionHooks, baseUrl = '') {
  async function request<T>(method: string, path: string, body?: unknown, authenticated = true): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    const token = authenticated ? session.token() : null;
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    } catch {
      throw new ApiFailure(0, 'NETWORK_ERROR', 'The service could not be reached. Check your connection and try again.');
    }
    const data = (await res.json().catch(() => null)) as { success?: boolean; error?: { code?: string; message?: string } } | null;
    if (!res.ok || data?.success !== true) {
      if (res.status === 401 && token) session.onExpired();
      throw new ApiFailure(res.status, data?.error?.code ?? `HTTP_${res.status}`, data?.error?.message ?? `The service answered HTTP ${res.status}.`);
    }
    return data as T;
  }

  return {
    login: (email: string, password: string) => request<{ token: string }>('POST', '/auth/login', { email, password }, false),

    listJobs: (params: { status?: string; cursor?: string; limit?: number }) =>
      request<{ jobs: JobListItem[]; meta: PageMeta }>('GET', `/jobs${query(params)}`),
    getJob: (id: string) => request<{ job: Job }>('GET', `/jobs/${encodeURIComponent(id)}`),
    createJob: (body: JobCreate) => request<{ job_id: string }>('POST', '/jobs', body),
    retryJob: (id: string, fromCheckpoint: boolean) =>
      request<{ job_id: string }>('POST', `/jobs/${encodeURIComponent(id)}/retry`, { from_checkpoint: fromCheckpoint }),
    jobStats: () => request<{ stats: JobStats }>('GET', '/jobs/stats'),

    listKeys: () => request<{ api_keys: ApiKey[] }>('GET', '/api-keys'),
    createKey: (body: { name?: string; expires_at?: string }) => request<{ api_key: ApiKey & { key: string } }>('POST', '/api-keys', body),
    revokeKey: (id: string) => request<{ message: string }>('DELETE', `/api-keys/${encodeURIComponent(id)}`),

    listWebhooks: () => request<{ webhooks: Webhook[] }>('GET', '/webhooks'),
    createWebhook: (body: { url: string; events?: WebhookEvent[]; description?: string }) =>
      request<{ webhook: Webhook & { secret: string } }>('POST', '/webhooks', body),
    rotateWebhookSecret: (id: string) => request<{ webhook: Webhook & { secret: string } }>('POST', `/webhooks/${encodeURIComponent(id)}/rotate-secret`),
    deleteWebhook: (id: string) => request<{ message: string }>('DELETE', `/webhooks/${encodeURIComponent(id)}`),
    listDeliveries: (id: string, params: { cursor?: string; limit?: number } = {}) =>
      request<{ deliveries: Delivery[]; meta: PageMeta }>('GET', `/webhooks/${encodeURIComponent(id)}/deliveries${query(params)}`),

    usage: () => request<{ usage: Usage }>('GET', '/usage'),
  };
}
