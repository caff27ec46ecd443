import { createQueue, jobIds, type PackPayload, type PreparePayload, type Queue, type Redis, type WebhookDeliveryPayload } from '@ap/queue';

/** The producers' side of the work queues, shared by the API, the preparer and the reconciler. */
export interface WorkQueues {
  prepare: Queue<PreparePayload>;
  pack: Queue<PackPayload>;
  webhook: Queue<WebhookDeliveryPayload>;
  /** The Redis connection is up: an enqueue now would not wait for a reconnect. */
  ready(): boolean;
  close(): Promise<void>;
}

export function createWorkQueues(redis: Redis, prefix: string): WorkQueues {
  const prepare = createQueue('prepare', redis, prefix);
  const pack = createQueue('pack', redis, prefix);
  const webhook = createQueue('webhook', redis, prefix);
  return {
    prepare,
    pack,
    webhook,
    ready: () => redis.status === 'ready',
    async close() {
      await Promise.all([prepare.close(), pack.close(), webhook.close()]);
    },
  };
}

/**
 * Adds a message unless an identical one is waiting or running. A finished message with the
 * same id (BullMQ keeps them for a while) is removed first: the database says the work is not
 * done, so it must run again.
 */
async function addOnce<T>(queue: Queue<T>, name: string, id: string, payload: T, delayMs = 0): Promise<void> {
  const existing = await queue.getJob(id);
  if (existing) {
    const state = await existing.getState();
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return;
    await existing.remove().catch(() => undefined);
  }
  await (queue as Queue).add(name, payload, { jobId: id, ...(delayMs > 0 ? { delay: delayMs } : {}) });
}

export const enqueue = {
  prepare: (queues: WorkQueues, payload: PreparePayload) => addOnce(queues.prepare, 'prepare', jobIds.prepare(payload), payload),
  pack: (queues: WorkQueues, payload: PackPayload) => addOnce(queues.pack, 'pack', jobIds.pack(payload), payload),
  /** One attempt of a webhook delivery, `delayMs` from now (the retry schedule). */
  delivery: (queues: Pick<WorkQueues, 'webhook'>, payload: WebhookDeliveryPayload, delayMs = 0) =>
    addOnce(queues.webhook, 'webhook', jobIds.webhook(payload), payload, delayMs),
};

/**
 * Runs `work` (enqueue, then mark enqueued) without holding the caller: a request answers from
 * its Postgres commit alone. While Redis is not connected nothing is tried (commands would queue
 * until it is back); the reconciler enqueues what is left (decisions.md "Hostile origins and outages").
 */
export function enqueueSoon(queues: Pick<WorkQueues, 'ready'>, work: () => Promise<void>, onError: (err: unknown) => void): void {
  if (!queues.ready()) {
    onError(new Error('redis is not connected'));
    return;
  }
  work().catch(onError);
}
