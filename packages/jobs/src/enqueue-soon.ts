import type { WorkQueues } from '@ap/queue';

/**
 * Runs `work` (enqueue, then mark enqueued) without holding the caller: a request answers from
 * its Postgres commit alone. While Redis is not connected nothing is tried (commands would queue
 * until it is back); the reconciler enqueues what is left (decisions.md "Hostile origins and outages").
 */
export function enqueueSoon(queues: Pick<WorkQueues, 'ready'>, work: () => Promise<void>, onError: (err: unknown) => void): void {
  if (queues.ready && !queues.ready()) {
    onError(new Error('redis is not connected'));
    return;
  }
  work().catch(onError);
}
