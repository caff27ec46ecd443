import { cancelOpenBins, jobBins, lockedJob, setJobStatus, type Db } from '@ap/db';
import { announceDeliveries, endJob } from './end';
import type { WorkQueues } from '@ap/queue';
import { aggregateJobStatus } from './status';

export const CANCELLED_BY_FAIL_FAST = 'cancelled: another ZIP of this job failed (fail_on_zip_error is true)';

function monthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}

export interface SettleOptions {
  now?: Date;
  /** Where the job's webhook deliveries are queued; without it the reconciler queues them. */
  queues?: Pick<WorkQueues, 'webhook'>;
}

/**
 * Recomputes a stored job's status from its bins after a bin changed, under a row lock so that
 * bins finishing together cannot both miss the last transition. Ended jobs stay ended (only a
 * retry reopens them). On the way to `completed` the stored quota is charged once; on the way
 * to `failed` with fail_on_zip_error, bins still waiting or running are cancelled. The end
 * writes its webhook deliveries in the same transaction (endJob).
 */
export async function settleJob(db: Db, jobId: string, options: SettleOptions = {}): Promise<string | null> {
  const now = options.now ?? new Date();
  let deliveries: string[] | null = null;
  const status = await db.$transaction(async (tx) => {
    const job = await lockedJob(tx, jobId);
    if (!job || job.status === 'preparing' || job.status === 'completed' || job.status === 'failed') return job?.status ?? null;
    const bins = await jobBins(tx, jobId);
    const status = aggregateJobStatus(
      bins.map((b) => b.status),
      job.failOnZipError,
    );
    if (status === job.status) return status;
    if (status !== 'completed' && status !== 'failed') {
      await setJobStatus(tx, jobId, status);
      return status;
    }
    if (status === 'failed' && job.failOnZipError) {
      await cancelOpenBins(tx, jobId, CANCELLED_BY_FAIL_FAST);
    }
    const done = bins.filter((b) => b.status === 'completed');
    const totalSize = done.reduce((sum, b) => sum + (b.size ?? 0n), 0n);
    // A destination's ZIPs live in the customer's bucket: no stored GB-days (docs/private-sources.md#destination-buckets).
    if (status === 'completed' && totalSize > 0n && job.destinationSourceId === null) {
      // Stored quota: ZIP bytes x the retention asked for, charged at completion (docs/product-rules.md#expiry-quotas).
      await tx.usageRecord.create({
        data: { userId: job.userId, kind: 'stored_byte_seconds', month: monthStart(now), amount: totalSize * BigInt(job.expiresIn), jobId },
      });
    }
    deliveries = await endJob(tx, { jobId, status, now, data: { fileCount: done.reduce((n, b) => n + b.fileCount, 0), totalSize } });
    return status;
  });
  await announceDeliveries(options.queues, deliveries);
  return status;
}
