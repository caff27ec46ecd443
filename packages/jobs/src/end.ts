import { endJobRow, type Db, type Prisma } from '@ap/db';
import type { Logger } from '@ap/log';
import { recordJobEvent } from '@ap/webhooks';
import { enqueue, type WorkQueues } from '@ap/queue';

export type EndStatus = 'completed' | 'failed';

/**
 * The one way a job reaches `completed` or `failed`: the status change (guarded by `where`, so
 * only the caller that wins it goes on) and its webhook events (the outbox rows) in the same
 * transaction. Returns null when the guard did not match, else the deliveries written, to be
 * handed to `announceDeliveries` after commit.
 */
export async function endJob(
  tx: Prisma.TransactionClient,
  input: {
    jobId: string;
    where?: Omit<Prisma.JobWhereInput, 'id'>;
    status: EndStatus;
    data?: Omit<Prisma.JobUpdateManyMutationInput, 'status'>;
    now?: Date;
    /** The rest of the end's writes (files, bins), made before the events so their bodies show them. */
    alongside?: () => Promise<void>;
  },
): Promise<string[] | null> {
  const now = input.now ?? new Date();
  if (!(await endJobRow(tx, { jobId: input.jobId, ...(input.where ? { where: input.where } : {}), status: input.status, ...(input.data ? { data: input.data } : {}), now }))) return null;
  await input.alongside?.();
  return recordJobEvent(tx, { jobId: input.jobId, event: input.status === 'completed' ? 'job.completed' : 'job.failed', now });
}

/**
 * Puts committed deliveries on the queue. Best effort: without queues (a caller that has none)
 * or when Redis fails, the reconciler finds them in Postgres once they are due.
 */
export async function announceDeliveries(queues: Pick<WorkQueues, 'webhook'> | undefined, deliveryIds: readonly string[] | null, log?: Logger): Promise<void> {
  if (!queues || !deliveryIds?.length) return;
  for (const deliveryId of deliveryIds) {
    try {
      await enqueue.delivery(queues, { deliveryId, attempt: 0 });
    } catch (err) {
      log?.warn({ deliveryId, err: (err as Error).message }, 'webhook delivery not queued; the reconciler will');
    }
  }
}

export type { Db };
