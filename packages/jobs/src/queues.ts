import { createQueue, jobIds, type PackPayload, type PreparePayload, type Queue, type Redis } from '@ap/queue';

/** The producers' side of the work queues, shared by the API, the preparer and the reconciler. */
export interface WorkQueues {
  prepare: Queue<PreparePayload>;
  pack: Queue<PackPayload>;
  close(): Promise<void>;
}

export function createWorkQueues(redis: Redis, prefix: string): WorkQueues {
  const prepare = createQueue('prepare', redis, prefix);
  const pack = createQueue('pack', redis, prefix);
  return {
    prepare,
    pack,
    async close() {
      await Promise.all([prepare.close(), pack.close()]);
    },
  };
}

/**
 * Adds a message unless an identical one is waiting or running. A finished message with the
 * same id (BullMQ keeps them for a while) is removed first: the database says the work is not
 * done, so it must run again.
 */
async function addOnce<T>(queue: Queue<T>, name: string, id: string, payload: T): Promise<void> {
  const existing = await queue.getJob(id);
  if (existing) {
    const state = await existing.getState();
    if (state !== 'completed' && state !== 'failed' && state !== 'unknown') return;
    await existing.remove().catch(() => undefined);
  }
  await (queue as Queue).add(name, payload, { jobId: id });
}

export const enqueue = {
  prepare: (queues: WorkQueues, payload: PreparePayload) => addOnce(queues.prepare, 'prepare', jobIds.prepare(payload), payload),
  pack: (queues: WorkQueues, payload: PackPayload) => addOnce(queues.pack, 'pack', jobIds.pack(payload), payload),
};
