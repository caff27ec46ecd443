// A small typed client of the API: one method per route, request and response types taken
// from the OpenAPI document (openapi.ts, generated), errors thrown as ApiRequestError.
// Browser-safe (`@ap/sdk/client`): fetch only, no node: imports; the Node entry (`@ap/sdk`)
// adds the download helper, which writes files (download.ts, node.ts).
import type { components, operations } from './openapi';

type Schemas = components['schemas'];
export type Job = Schemas['Job'];
export type JobListItem = Schemas['JobListItem'];
export type ZipEntry = Schemas['Zip'];
export type ApiKey = Schemas['ApiKey'];
export type CreatedApiKey = Schemas['CreatedApiKey'];
export type PaginationMeta = Schemas['PaginationMeta'];
export type ErrorEntry = Schemas['ErrorEntry'];
export type { components, operations, paths } from './openapi';

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
export type JobStatsResponse = JsonResponse<operations['jobStats'], 200>;
export type JobStats = JobStatsResponse['stats'];
export type UsageResponse = JsonResponse<operations['getUsage'], 200>;
export type Usage = UsageResponse['usage'];
export type WebhookCreateRequest = JsonBody<operations['createWebhook']>;
export type ListWebhooksResponse = JsonResponse<operations['listWebhooks'], 200>;
export type Webhook = ListWebhooksResponse['webhooks'][number];
export type CreateWebhookResponse = JsonResponse<operations['createWebhook'], 201>;
export type RotateWebhookSecretResponse = JsonResponse<operations['rotateWebhookSecret'], 200>;
export type DeleteWebhookResponse = JsonResponse<operations['deleteWebhook'], 200>;
export type ListDeliveriesQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;
export type ListDeliveriesResponse = JsonResponse<operations['listWebhookDeliveries'], 200>;
export type WebhookDelivery = ListDeliveriesResponse['deliveries'][number];
export type WebhookEvent = Webhook['events'][number];
export type Source = Schemas['Source'];
export type SourceCreateRequest = JsonBody<operations['createSource']>;
export type CreateSourceResponse = JsonResponse<operations['createSource'], 201>;
export type ListSourcesResponse = JsonResponse<operations['listSources'], 200>;
export type DeleteSourceResponse = JsonResponse<operations['deleteSource'], 200>;
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
  /**
   * A dashboard session token (`Authorization: Bearer`), instead of an API key: the token, or a
   * getter asked on every call (a session that changes or ends; null sends no credentials).
   */
  bearer?: string | (() => string | null | undefined);
  /** The same as a string `bearer` (kept for existing callers). */
  sessionToken?: string;
  /** For tests and other runtimes. */
  fetch?: typeof fetch;
  /** `User-Agent` (Node's fetch sends its own otherwise). */
  userAgent?: string;
}

/** A create call's `Idempotency-Key` (generated when not given) and how often it is sent again. */
export interface CreateOptions {
  idempotencyKey?: string;
  /** Further tries after an unreachable server, a 5xx gateway answer or a key still in use (default 2). */
  retries?: number;
  signal?: AbortSignal;
}

/** Answers after which the same request, with the same key, is safe and worth sending again. */
const RETRIED = new Set(['UNREACHABLE', 'IDEMPOTENCY_KEY_IN_USE', 'HTTP_502', 'HTTP_503', 'HTTP_504']);

export class ArchiveClient {
  readonly baseUrl: string;
  protected readonly options: ClientOptions;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.options = options;
  }

  /**
   * A create (POST) with an `Idempotency-Key`: sending it again after a lost answer replays the
   * first answer instead of creating twice, so this retries what is safe to retry.
   */
  async create<T>(path: string, body: unknown, options: CreateOptions = {}): Promise<T> {
    const key = options.idempotencyKey ?? globalThis.crypto.randomUUID();
    const retries = options.retries ?? 2;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.request<T>('POST', path, body, options.signal, true, { 'idempotency-key': key });
      } catch (err) {
        if (!(err instanceof ApiRequestError) || !RETRIED.has(err.code) || attempt >= retries || options.signal?.aborted) throw err;
        await new Promise((resolve) => setTimeout(resolve, (err.retryAfterSeconds ?? 0.25 * 2 ** attempt) * 1000));
      }
    }
  }

  /** Any route, JSON in and out; the typed methods below use it. */
  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal, credentials = true, extraHeaders: Record<string, string> = {}): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', ...extraHeaders };
    if (credentials) {
      const bearer = typeof this.options.bearer === 'function' ? this.options.bearer() : (this.options.bearer ?? this.options.sessionToken);
      if (this.options.apiKey) headers['x-api-key'] = this.options.apiKey;
      else if (bearer) headers.authorization = `Bearer ${bearer}`;
    }
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

  /** Sends no credentials (a session is what it returns). */
  login(email: string, password: string): Promise<LoginResponse> {
    return this.request('POST', '/auth/login', { email, password } satisfies JsonBody<operations['login']>, undefined, false);
  }
  listApiKeys(): Promise<ListApiKeysResponse> {
    return this.request('GET', '/api-keys');
  }
  createApiKey(body: ApiKeyCreateRequest = {}, options: CreateOptions = {}): Promise<CreateApiKeyResponse> {
    return this.create('/api-keys', body, options);
  }
  revokeApiKey(id: string): Promise<MessageResponse> {
    return this.request('DELETE', `/api-keys/${encodeURIComponent(id)}`);
  }
  createJob(body: JobCreateRequest, options: CreateOptions = {}): Promise<CreateJobResponse> {
    return this.create('/jobs', body, options);
  }
  listJobs(query: ListJobsQuery = {}): Promise<ListJobsResponse> {
    return this.request('GET', `/jobs${queryString(query)}`);
  }
  async getJob(id: string, signal?: AbortSignal): Promise<Job> {
    return (await this.request<GetJobResponse>('GET', `/jobs/${encodeURIComponent(id)}`, undefined, signal)).job;
  }
  retryJob(id: string, body: RetryRequest = {}, options: CreateOptions = {}): Promise<CreateJobResponse> {
    return this.create(`/jobs/${encodeURIComponent(id)}/retry`, body, options);
  }
  /** Deletes the job and its ZIPs; its download links stop working at once. */
  deleteJob(id: string): Promise<MessageResponse> {
    return this.request('DELETE', `/jobs/${encodeURIComponent(id)}`);
  }

  jobStats(): Promise<JobStatsResponse> {
    return this.request('GET', '/jobs/stats');
  }
  usage(): Promise<UsageResponse> {
    return this.request('GET', '/usage');
  }

  listWebhooks(): Promise<ListWebhooksResponse> {
    return this.request('GET', '/webhooks');
  }
  /** The response carries the signing secret, shown only this once. */
  createWebhook(body: WebhookCreateRequest, options: CreateOptions = {}): Promise<CreateWebhookResponse> {
    return this.create('/webhooks', body, options);
  }
  deleteWebhook(id: string): Promise<DeleteWebhookResponse> {
    return this.request('DELETE', `/webhooks/${encodeURIComponent(id)}`);
  }
  /** A new signing secret, shown only this once; the old one stops signing. */
  rotateWebhookSecret(id: string): Promise<RotateWebhookSecretResponse> {
    return this.request('POST', `/webhooks/${encodeURIComponent(id)}/rotate-secret`);
  }
  listWebhookDeliveries(id: string, query: ListDeliveriesQuery = {}): Promise<ListDeliveriesResponse> {
    return this.request('GET', `/webhooks/${encodeURIComponent(id)}/deliveries${queryString(query)}`);
  }

  listSources(): Promise<ListSourcesResponse> {
    return this.request('GET', '/sources');
  }
  /** The secret access key is stored encrypted and never returned. */
  createSource(body: SourceCreateRequest): Promise<CreateSourceResponse> {
    return this.request('POST', '/sources', body);
  }
  deleteSource(id: string): Promise<DeleteSourceResponse> {
    return this.request('DELETE', `/sources/${encodeURIComponent(id)}`);
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
}

/** `?a=1&b=2` of the set values (undefined, null and '' mean "not given"), or ''. */
function queryString(query: object): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `?${qs}` : '';
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
