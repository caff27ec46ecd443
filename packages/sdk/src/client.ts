// A small typed client of the API: one method per route, request and response types taken
// from the OpenAPI document (openapi.ts, generated), errors thrown as ApiRequestError.
import type { components, operations } from './openapi';
import { downloadZip, type DownloadOptions, type DownloadResult } from './download';

type Schemas = components['schemas'];
export type Job = Schemas['Job'];
export type JobListItem = Schemas['JobListItem'];
export type ZipEntry = Schemas['Zip'];
export type ApiKey = Schemas['ApiKey'];
export type CreatedApiKey = Schemas['CreatedApiKey'];
export type PaginationMeta = Schemas['PaginationMeta'];

type JsonBody<O> = O extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type JsonResponse<O, S extends number> = O extends { responses: { [K in S]: { content: { 'application/json': infer R } } } } ? R : never;

export type JobCreateRequest = JsonBody<operations['createJob']>;
export type ApiKeyCreateRequest = JsonBody<operations['createApiKey']>;
export type RetryRequest = JsonBody<operations['retryJob']>;
export type ListJobsQuery = NonNullable<operations['listJobs']['parameters']['query']>;
export type ListJobsResponse = JsonResponse<operations['listJobs'], 200>;
export type GetJobResponse = JsonResponse<operations['getJob'], 200>;
export type CreateJobResponse = JsonResponse<operations['createJob'], 201>;
export type ListApiKeysResponse = JsonResponse<operations['listApiKeys'], 200>;
export type CreateApiKeyResponse = JsonResponse<operations['createApiKey'], 201>;
export type MessageResponse = JsonResponse<operations['revokeApiKey'], 200>;
export type LoginResponse = JsonResponse<operations['login'], 200>;
export type ErrorCode = JsonResponse<operations['createJob'], 403 | 400 | 401 | 429 | 500>['error']['code'] | (string & {});

/** An answer of the API other than success, or no answer at all (status 0). */
export class ApiRequestError extends Error {
  override name = 'ApiRequestError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export interface ClientOptions {
  /** e.g. `https://zips.example.com` (no trailing path needed). */
  baseUrl: string;
  /** `X-API-Key`. */
  apiKey?: string;
  /** A dashboard session token (`Authorization: Bearer`), instead of an API key. */
  sessionToken?: string;
  /** For tests and other runtimes. */
  fetch?: typeof fetch;
  /** `User-Agent` (Node's fetch sends its own otherwise). */
  userAgent?: string;
}

export class ArchiveClient {
  readonly baseUrl: string;
  private readonly options: ClientOptions;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.options = options;
  }

  /** Any route, JSON in and out; the typed methods below use it. */
  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.apiKey) headers['x-api-key'] = this.options.apiKey;
    else if (this.options.sessionToken) headers.authorization = `Bearer ${this.options.sessionToken}`;
    if (this.options.userAgent) headers['user-agent'] = this.options.userAgent;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await (this.options.fetch ?? fetch)(this.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
    } catch (err) {
      if (signal?.aborted) throw err;
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ApiRequestError(0, 'UNREACHABLE', `cannot reach ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const error = (parsed as { error?: { code?: string; message?: string } } | undefined)?.error;
      const retryAfter = res.headers.get('retry-after');
      throw new ApiRequestError(
        res.status,
        error?.code ?? `HTTP_${res.status}`,
        error?.message ?? `${method} ${path} answered HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
        retryAfter ? Number(retryAfter) : undefined,
      );
    }
    if (parsed === undefined) throw new ApiRequestError(res.status, 'BAD_RESPONSE', `${method} ${path} answered HTTP ${res.status} without a JSON body`);
    return parsed as T;
  }

  login(email: string, password: string): Promise<LoginResponse> {
    return this.request('POST', '/auth/login', { email, password } satisfies JsonBody<operations['login']>);
  }
  listApiKeys(): Promise<ListApiKeysResponse> {
    return this.request('GET', '/api-keys');
  }
  createApiKey(body: ApiKeyCreateRequest = {}): Promise<CreateApiKeyResponse> {
    return this.request('POST', '/api-keys', body);
  }
  revokeApiKey(id: string): Promise<MessageResponse> {
    return this.request('DELETE', `/api-keys/${encodeURIComponent(id)}`);
  }
  createJob(body: JobCreateRequest): Promise<CreateJobResponse> {
    return this.request('POST', '/jobs', body);
  }
  listJobs(query: ListJobsQuery = {}): Promise<ListJobsResponse> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) params.set(k, String(v));
    const qs = params.toString();
    return this.request('GET', `/jobs${qs ? `?${qs}` : ''}`);
  }
  async getJob(id: string, signal?: AbortSignal): Promise<Job> {
    return (await this.request<GetJobResponse>('GET', `/jobs/${encodeURIComponent(id)}`, undefined, signal)).job;
  }
  retryJob(id: string, body: RetryRequest = {}): Promise<CreateJobResponse> {
    return this.request('POST', `/jobs/${encodeURIComponent(id)}/retry`, body);
  }

  /**
   * Polls a job until it is `completed` or `failed` (or `timeoutMs` passes: an Error).
   * `onUpdate` sees every poll's job (for progress).
   */
  async waitForJob(id: string, options: { intervalMs?: number; timeoutMs?: number; signal?: AbortSignal; onUpdate?: (job: Job) => void } = {}): Promise<Job> {
    const interval = options.intervalMs ?? 1000;
    const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs;
    for (;;) {
      const job = await this.getJob(id, options.signal);
      options.onUpdate?.(job);
      if (job.status === 'completed' || job.status === 'failed') return job;
      if (Date.now() >= deadline) throw new Error(`job ${id} is still ${job.status} after ${options.timeoutMs} ms`);
      await sleep(Math.min(interval, Math.max(0, deadline - Date.now())), options.signal);
    }
  }

  /** Downloads one ZIP of a job into `options.dir`, resuming a partial file, and verifies it. */
  download(zip: Pick<ZipEntry, 'id' | 'filename' | 'size' | 'download_url'>, options: DownloadOptions): Promise<DownloadResult> {
    return downloadZip(zip, { fetch: this.options.fetch, ...options });
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
