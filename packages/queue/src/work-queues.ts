import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { createQueue, jobIds, type PackPayload, type PreparePayload, type WebhookDeliveryPayload } from './queues';

/** The producers' side of the work queues, shared by the API, the workers and upkeep. */
export interface WorkQueues {
  prepare: Queue<PreparePayload>;
  pack: Queue<PackPayload>;
  webhook: Queue<WebhookDeliveryPayload>;
  /** Bins one user may have on the pack queue or running at once, by plan (PLAN_CONCURRENT_BINS); unset: the defaults. */
  planConcurrentBins?: Readonly<Record<string, number>>;
  /** The Redis connection is up: an enqueue now would not wait for a reconnect. */
  ready?(): boolean;
  close(): Promise<void>;
}

export function createWorkQueues(redis: Redis, prefix: string, options: { planConcurrentBins?: Readonly<Record<string, number>> } = {}): WorkQueues {
  const prepare = createQueue('prepare', redis, prefix);
  const pack = createQueue('pack', redis, prefix);
  const webhook = createQueue('webhook', redis, prefix);
  return {
    prepare,
    pack,
    webhook,
    planConcurrentBins: options.planConcurrentBins,
    ready: () => redis.status === 'ready',
    async close() {
      await Promise.all([prepare.close(), pack.close(), webhook.close()]);
    },
  };
}

/** BullMQ's highest priority number (lowest precedence). */
export const MAX_PRIORITY = 2_097_152;

/**
 * Adds a message unless an identical one is waiting or running. A finished message with the
 * same id (BullMQ keeps them for a while) is removed first: the database says the work is not
 * done, so it must run again. True when it added one.
 */
async function addOnce<T>(queue: Queue<T>, name: string, id: string, payload: T, options: { delayMs?: number; priority?: number } = {}): Promise<boolean> {
  const existing = await queue.getJob(id);
  if (existing) {
    const state = await existing.getState();
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return false;
    await existing.remove().catch(() => undefined);
  }
  const { delayMs = 0, priority } = options;
  await (queue as Queue).add(name, payload, {
    jobId: id,
    ...(delayMs > 0 ? { delay: delayMs } : {}),
    ...(priority ? { priority: Math.min(MAX_PRIORITY, Math.max(1, Math.floor(priority))) } : {}),
  });
  return true;
}

export const enqueue = {
  /**
   * One job to prepare. `priority` is the job's place among its user's preparing jobs (1 = the
   * oldest), as for bins: users' first jobs go round-robin. A priority, not a parked message:
   * the message stays in the queue the whole time, so nothing can lose it.
   */
  prepare: (queues: Pick<WorkQueues, 'prepare'>, payload: PreparePayload, priority: number) =>
    addOnce(queues.prepare, 'prepare', jobIds.prepare(payload), payload, { priority }),
  /**
   * One bin. `priority` is the bin's place among its user's queued bins (1 = next): BullMQ
   * serves lower numbers first and is FIFO within one, so users' first bins go round-robin.
   */
  pack: (queues: Pick<WorkQueues, 'pack'>, payload: PackPayload, priority: number) => addOnce(queues.pack, 'pack', jobIds.pack(payload), payload, { priority }),
  /** One attempt of a webhook delivery, `delayMs` from now (the retry schedule). */
  delivery: (queues: Pick<WorkQueues, 'webhook'>, payload: WebhookDeliveryPayload, delayMs = 0) =>
    addOnce(queues.webhook, 'webhook', jobIds.webhook(payload), payload, { delayMs }),
};
