import type { Db } from '@ap/db';
import type { Logger } from '@ap/log';
import type { ObjectStore } from '@ap/storage';
import { dueDeliveries } from '@ap/webhooks';
import { deleteJobObjects } from './objects';
import { enqueue, type WorkQueues } from './queues';

/** Work whose row has not moved for this long is put on the queue again (lost message, dead worker). */
export const STALE_AFTER_MS = 120_000;
/** A job committed this long ago but never enqueued is enqueued by the reconciler. */
export const UNENQUEUED_AFTER_MS = 5_000;

export interface ReconcileReport {
  prepares: number;
  packs: number;
  /** Webhook delivery attempts that were due and put (back) on their queue. */
  deliveries: number;
}

/**
 * Postgres is the source of truth and Redis only carries work: this puts back on the queues
 * whatever the database says is unfinished but has not progressed (an enqueue that failed
 * after commit, a Redis restart that lost its data, a worker killed mid-bin). Re-adding is
 * idempotent: message ids are derived from the work.
 */
export async function reconcile(db: Db, queues: WorkQueues, now = new Date()): Promise<ReconcileReport> {
  const stale = new Date(now.getTime() - STALE_AFTER_MS);
  const unenqueued = new Date(now.getTime() - UNENQUEUED_AFTER_MS);
  const report: ReconcileReport = { prepares: 0, packs: 0, deliveries: 0 };

  const preparing = await db.job.findMany({
    where: {
      status: 'preparing',
      OR: [{ enqueuedAt: null, createdAt: { lt: unenqueued } }, { updatedAt: { lt: stale } }],
    },
    select: { id: true, attempt: true },
    take: 1000,
  });
  for (const job of preparing) {
    await enqueue.prepare(queues, { jobId: job.id, attempt: job.attempt });
    report.prepares++;
  }

  const bins = await db.zip.findMany({
    where: {
      status: { in: ['pending', 'processing'] },
      job: { status: { in: ['pending', 'processing'] }, mode: 'stored' },
      OR: [{ updatedAt: { lt: stale } }, { job: { enqueuedAt: null, createdAt: { lt: unenqueued } } }],
    },
    select: { id: true, jobId: true, attempt: true },
    take: 5000,
  });
  for (const bin of bins) {
    await enqueue.pack(queues, { jobId: bin.jobId, zipId: bin.id, attempt: bin.attempt });
    report.packs++;
  }
  const enqueuedJobs = [...new Set([...preparing.map((j) => j.id), ...bins.map((b) => b.jobId)])];
  if (enqueuedJobs.length) await db.job.updateMany({ where: { id: { in: enqueuedJobs }, enqueuedAt: null }, data: { enqueuedAt: now } });

  // Webhook deliveries: the row says which attempt is next and when. One due for a while and
  // held by no worker has lost its message (enqueue after commit failed, Redis lost it); an
  // identical message still waiting is left alone.
  for (const delivery of await dueDeliveries(db, unenqueued, now)) {
    await enqueue.delivery(queues, { deliveryId: delivery.id, attempt: delivery.attempts });
    report.deliveries++;
  }
  return report;
}

/**
 * After `expires_at` a job's objects are deleted (decisions.md "Expiry"); the job keeps its
 * status, and download links stop working because tokens expire with the job.
 */
export async function sweepExpired(db: Db, store: ObjectStore, log: Logger, now = new Date()): Promise<number> {
  const jobs = await db.job.findMany({
    where: { expiresAt: { lte: now }, purgedAt: null },
    select: { id: true, zips: { select: { id: true, objectKey: true, uploadId: true } } },
    take: 500,
  });
  for (const job of jobs) {
    try {
      await deleteJobObjects(store, job.id, job.zips);
      await db.job.update({ where: { id: job.id }, data: { purgedAt: now } });
    } catch (err) {
      log.warn({ err, jobId: job.id }, 'could not delete the objects of an expired job; will try again');
    }
  }
  return jobs.length;
}
