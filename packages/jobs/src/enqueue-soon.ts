import type { WorkQueues } from '@ap/queue';

/** How long a request waits for its enqueue before answering anyway. */
export const ENQUEUE_WAIT_MS = 500;

/**
 * Runs `work` (enqueue, then mark enqueued) and waits for it at most ENQUEUE_WAIT_MS: a request
 * answers from its Postgres commit, queued in the common case, never held by a slow Redis.
 * While Redis is not connected nothing is tried (commands would queue until it is back); the
 * reconciler enqueues what is left (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse).
 */
export async function enqueueSoon(queues: Pick<WorkQueues, 'ready'>, work: () => Promise<void>, onError: (err: unknown) => void): Promise<void> {
  if (queues.ready && !queues.ready()) {
    onError(new Error('redis is not connected'));
    return;
  }
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, ENQUEUE_WAIT_MS)));
  await Promise.race([work().catch(onError), bound]);
  clearTimeout(timer);
}
