import { Queue, Worker, type Processor, type WorkerOptions, type JobsOptions } from 'bullmq';
import { Redis } from 'ioredis';

/** Every queue, declared once for producers and consumers alike. */
export const QUEUES = {
  /** Probe a job's URLs and compute its bins (split and stream jobs). */
  prepare: 'prepare',
  /** Build one ZIP bin and upload it (stored jobs). */
  pack: 'pack',
  /** Upkeep, one message per interval from a job scheduler: re-enqueue lost work, delete expired objects. */
  maintenance: 'maintenance',
  /** Send one attempt of a webhook delivery (rows in webhook_deliveries are the truth). */
  webhook: 'webhook',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];

export interface PreparePayload {
  jobId: string;
  /** Job attempt this message belongs to; stale attempts are dropped by the consumer. */
  attempt: number;
}

export interface PackPayload {
  jobId: string;
  zipId: string;
  attempt: number;
  /** One segment of a segmented bin (docs/segments.md); absent: the bin itself. */
  segment?: number;
}

/** An upkeep pass does everything upkeep does; the message only says when. */
export type MaintenancePayload = Record<string, never>;

export interface WebhookDeliveryPayload {
  deliveryId: string;
  /** Attempts already made; a message for an attempt that is no longer next is dropped. */
  attempt: number;
}

export interface Payloads {
  prepare: PreparePayload;
  pack: PackPayload;
  maintenance: MaintenancePayload;
  webhook: WebhookDeliveryPayload;
}

/** BullMQ requires `maxRetriesPerRequest: null` on the connections it blocks on. */
export function createRedis(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect: false });
}

/**
 * Job ids are derived from the work they stand for, so a message enqueued twice
 * (reconciler + API, retries) is deduplicated by BullMQ instead of running twice.
 */
export const jobIds = {
  prepare: (p: PreparePayload) => `prepare:${p.jobId}:${p.attempt}`,
  // BullMQ takes a custom id with a colon only as three colon-separated parts.
  pack: (p: PackPayload) => `pack:${p.zipId}:${p.attempt}${p.segment === undefined ? '' : `.${p.segment}`}`,
  webhook: (p: WebhookDeliveryPayload) => `webhook:${p.deliveryId}:${p.attempt}`,
};

const DEFAULT_JOB_OPTIONS: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2000 },
  removeOnComplete: { age: 3600, count: 10000 },
  removeOnFail: { age: 7 * 86400 },
};

export function createQueue<N extends keyof Payloads>(name: N, connection: Redis, prefix: string): Queue<Payloads[N]> {
  return new Queue<Payloads[N]>(QUEUES[name], { connection, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
}

/** Where a worker's own errors go: the service's JSON logger (pino's `warn`/`error` shape). */
export interface WorkerLog {
  warn(details: object, message: string): void;
  error(details: object, message: string): void;
}

export function createWorker<N extends keyof Payloads>(
  name: N,
  processor: Processor<Payloads[N]>,
  connection: Redis,
  prefix: string,
  options: Omit<WorkerOptions, 'connection' | 'prefix'> & { log: WorkerLog },
): Worker<Payloads[N]> {
  const { log, ...workerOptions } = options;
  const worker = new Worker<Payloads[N]>(QUEUES[name], processor, { connection, prefix, ...workerOptions });
  // BullMQ prints an 'error' nobody listens to with console.error: a stack trace on stderr,
  // outside the JSON log (e.g. "could not renew lock" for every active job after a Redis flush).
  worker.on('error', (err: Error) => {
    // A lost lock is not lost work: the job is delivered again once its lock lapses.
    if (/could not renew lock/i.test(err.message)) log.warn({ queue: QUEUES[name], err }, 'queue worker lost a job lock; the job will be delivered again');
    else log.error({ queue: QUEUES[name], err }, 'queue worker error');
  });
  return worker;
}

export type { Queue, Worker, Job as QueueJob } from 'bullmq';
export type { Redis } from 'ioredis';
