import { usersWithOpenBins, type Db } from '@ap/db';
import type { Logger } from '@ap/log';
import type { ObjectStore } from '@ap/storage';
import { dueDeliveries } from '@ap/webhooks';
import { deleteJobObjects } from './objects';
import { createQueue, createWorker, enqueue, jobIds, type Queue, type Redis, type WorkQueues } from '@ap/queue';
import { queueBinsOf } from './fair-share';

/** Work whose row has not moved for this long is put on the queue again (lost message, dead worker). */
export const STALE_AFTER_MS = 120_000;
/** A job committed this long ago but never enqueued is enqueued by the reconciler. */
export const UNENQUEUED_AFTER_MS = 5_000;
/**
 * How often upkeep runs. Work Redis lost (a flush, a restart without persistence) is found by
 * asking the queue for each unfinished piece of work, so it is back on the queue within one
 * interval (decisions.md "Operations": within 30 s), not after STALE_AFTER_MS.
 */
export const MAINTENANCE_INTERVAL_MS = 10_000;
/** Unfinished rows checked against the queue per pass (the oldest first). */
const QUEUE_CHECK_LIMIT = 2000;
const LIVE_STATES = new Set(['waiting', 'active', 'delayed', 'prioritized', 'waiting-children']);

async function missingFromQueue(queue: Queue<unknown>, id: string): Promise<boolean> {
  return !LIVE_STATES.has(await queue.getJobState(id));
}

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
/**
 * Limits upkeep to some jobs. Only tests need it: there stacks with queues of their own share
 * one database, and one stack's reconciler must not put another's work on its queues.
 */
export interface MaintenanceScope {
  jobIds?: readonly string[];
}

export async function reconcile(db: Db, queues: WorkQueues, now = new Date(), scope: MaintenanceScope = {}): Promise<ReconcileReport> {
  const onlyJobs = scope.jobIds ? { id: { in: [...scope.jobIds] } } : {};
  const stale = new Date(now.getTime() - STALE_AFTER_MS);
  const unenqueued = new Date(now.getTime() - UNENQUEUED_AFTER_MS);
  const report: ReconcileReport = { prepares: 0, packs: 0, deliveries: 0 };

  const preparing = await db.job.findMany({
    where: {
      ...onlyJobs,
      status: 'preparing',
      OR: [{ enqueuedAt: null, createdAt: { lt: unenqueued } }, { updatedAt: { lt: stale } }],
    },
    select: { id: true, attempt: true },
    take: 1000,
  });
  const seen = new Set(preparing.map((j) => j.id));
  // Unfinished work the queue does not hold (Redis lost it), however recently it moved.
  const unqueuedPrepares = await db.job.findMany({
    where: { ...onlyJobs, status: 'preparing', enqueuedAt: { not: null } },
    select: { id: true, attempt: true },
    orderBy: { createdAt: 'asc' },
    take: QUEUE_CHECK_LIMIT,
  });
  for (const job of unqueuedPrepares) {
    if (!seen.has(job.id) && (await missingFromQueue(queues.prepare as Queue<unknown>, jobIds.prepare({ jobId: job.id, attempt: job.attempt })))) {
      preparing.push(job);
      seen.add(job.id);
    }
  }
  for (const job of preparing) {
    await enqueue.prepare(queues, { jobId: job.id, attempt: job.attempt });
    report.prepares++;
  }

  // Bins: admission lives in Postgres, so whatever Redis lost or a dead worker dropped is put
  // back by admitting (up to each user's cap) and queueing every admitted bin again.
  for (const userId of await usersWithOpenBins(db, scope.jobIds)) {
    report.packs += await queueBinsOf(db, queues, userId, scope.jobIds);
  }
  await db.job.updateMany({ where: { ...onlyJobs, mode: 'stored', status: { in: ['pending', 'processing'] }, enqueuedAt: null, createdAt: { lt: now } }, data: { enqueuedAt: now } });
  const enqueuedJobs = preparing.map((j) => j.id);
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
    select: { id: true, destinationSourceId: true, zips: { select: { id: true, objectKey: true, uploadId: true } } },
    take: 500,
  });
  for (const job of jobs) {
    try {
      // A destination's ZIPs are the customer's: they stay (docs/private-sources.md#destination-buckets).
      if (job.destinationSourceId === null) await deleteJobObjects(store, job.id, job.zips);
      await db.job.update({ where: { id: job.id }, data: { purgedAt: now } });
    } catch (err) {
      log.warn({ err, jobId: job.id }, 'could not delete the objects of an expired job; will try again');
    }
  }
  return jobs.length;
}

/** Name of the upkeep schedule on the maintenance queue (one per stack, whatever the replicas). */
const UPKEEP_SCHEDULER = 'upkeep';

/**
 * Upkeep (`reconcile` and `sweepExpired`) once per interval across all replicas: a BullMQ job
 * scheduler on the maintenance queue makes one message per interval, and whichever replica's
 * worker takes it runs the pass. Every replica upserts the same schedule (idempotent) and runs
 * a worker, so upkeep goes on while any replica lives. Returns a function that stops this
 * replica's part (the schedule stays for the others).
 */
export async function startMaintenance(
  deps: { db: Db; store: ObjectStore; log: Logger; redis: Redis; config: { REDIS_PREFIX: string } },
  queues: WorkQueues,
  options: { intervalMs?: number; scope?: MaintenanceScope } = {},
): Promise<() => Promise<void>> {
  const { intervalMs = MAINTENANCE_INTERVAL_MS, scope } = options;
  const prefix = deps.config.REDIS_PREFIX;
  const queue = createQueue('maintenance', deps.redis, prefix);
  await queue.upsertJobScheduler(UPKEEP_SCHEDULER, { every: intervalMs }, { name: UPKEEP_SCHEDULER, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } });
  const pass = async (): Promise<void> => {
    const [report, swept] = await Promise.all([reconcile(deps.db, queues, new Date(), scope), scope ? Promise.resolve(0) : sweepExpired(deps.db, deps.store, deps.log)]);
    if (report.prepares || report.packs || report.deliveries || swept) deps.log.info({ ...report, swept }, 'maintenance');
  };
  const worker = createWorker(
    'maintenance',
    () => pass().catch((err: unknown) => deps.log.warn({ err }, 'maintenance failed')),
    deps.redis,
    prefix,
    { concurrency: 1, log: deps.log },
  );
  return async () => {
    await worker.close();
    await queue.close();
  };
}
