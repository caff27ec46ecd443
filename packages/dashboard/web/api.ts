// The dashboard's adapter over the SDK's browser-safe client (`@ap/sdk/client`, types generated
// from the OpenAPI document). Every call sends the session bearer and nothing else: the page
// never holds an API key. A 401 on a call made with the session ends it (`onExpired`); errors
// reach the pages as ApiFailure with the API's code and message, or a readable network message.
import {
  ApiRequestError,
  ArchiveClient,
  type ApiKey,
  type Job,
  type JobCreateRequest,
  type JobListItem,
  type ListDeliveriesQuery,
  type ListJobsQuery,
  type PaginationMeta,
  type Source,
  type SourceCreateRequest,
  type Webhook,
  type WebhookDelivery,
  type WebhookEvent,
  type ZipEntry,
} from '@ap/sdk/client';

export type { ApiKey, Job, JobListItem, Source, SourceCreateRequest, Webhook, WebhookEvent, ZipEntry };
export type { ErrorEntry, JobStats, Usage } from '@ap/sdk/client';
export type JobStatus = Job['status'];
export type ZipStatus = ZipEntry['status'];
export type Mode = NonNullable<JobCreateRequest['mode']>;
export type PageMeta = PaginationMeta;
export type JobCreate = JobCreateRequest;
export type Delivery = WebhookDelivery;
export const WEBHOOK_EVENTS: WebhookEvent[] = ['job.completed', 'job.failed', 'download.completed'];

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

/**
 * A 401 on a call made with the session: the adapter has already ended the session and the app
 * returns to the login page, so a page shows nothing of it.
 */
export function sessionEnded(err: unknown): boolean {
  return err instanceof ApiFailure && err.status === 401;
}

export interface SessionHooks {
  token(): string | null;
  /** The API answered 401 to a call made with the session: it has expired or was revoked. */
  onExpired(): void;
}

export type Api = ReturnType<typeof createApi>;

export function createApi(session: SessionHooks, baseUrl = '') {
  const client = new ArchiveClient({ baseUrl, bearer: () => session.token() });

  /** Runs one SDK call; `withSession` says a 401 means the session ended (not so for login). */
  async function call<T>(run: () => Promise<T>, withSession = true): Promise<T> {
    const token = withSession ? session.token() : null;
    try {
      return await run();
    } catch (err) {
      if (!(err instanceof ApiRequestError)) throw err;
      if (err.status === 0) throw new ApiFailure(0, 'NETWORK_ERROR', 'The service could not be reached. Check your connection and try again.');
      if (err.status === 401 && token) session.onExpired();
      throw new ApiFailure(err.status, err.code, err.message);
    }
  }

  return {
    login: (email: string, password: string) => call(() => client.login(email, password), false),

    // `status` comes from the page's URL as typed; the API answers 400 to an unknown one.
    listJobs: (params: { status?: string; cursor?: string; limit?: number }) => call(() => client.listJobs(params as ListJobsQuery)),
    getJob: (id: string) => call(async () => ({ job: await client.getJob(id) })),
    createJob: (body: JobCreate) => call(() => client.createJob(body)),
    retryJob: (id: string, fromCheckpoint: boolean) => call(() => client.retryJob(id, { from_checkpoint: fromCheckpoint })),
    deleteJob: (id: string) => call(() => client.deleteJob(id)),
    jobStats: () => call(() => client.jobStats()),

    listKeys: () => call(() => client.listApiKeys()),
    createKey: (body: { name?: string; expires_at?: string }) => call(() => client.createApiKey(body)),
    revokeKey: (id: string) => call(() => client.revokeApiKey(id)),

    listWebhooks: () => call(() => client.listWebhooks()),
    createWebhook: (body: { url: string; events?: WebhookEvent[]; description?: string }) => call(() => client.createWebhook(body)),
    rotateWebhookSecret: (id: string) => call(() => client.rotateWebhookSecret(id)),
    deleteWebhook: (id: string) => call(() => client.deleteWebhook(id)),
    listDeliveries: (id: string, params: ListDeliveriesQuery = {}) => call(() => client.listWebhookDeliveries(id, params)),

    listSources: () => call(() => client.listSources()),
    createSource: (body: SourceCreateRequest) => call(() => client.createSource(body)),
    deleteSource: (id: string) => call(() => client.deleteSource(id)),

    usage: () => call(() => client.usage()),
  };
}
