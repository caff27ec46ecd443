import { expiredJobsToPurge, markEnqueuedByUpkeep, markJobPurged, preparingJobsAdrift, preparingJobsEnqueued, usersWithOpenBins, type Db } from '@ap/db';
import type { Logger } from '@ap/log';
import type { ObjectStore } from '@ap/storage';
import { dueDeliveries } from '@ap/webhooks';
import type { SecretBox } from '@ap/secrets';
import { abortDestinationUploads, deleteJobObjects, type DestinationAccess } from './objects';
import { createQueue, createWorker, enqueue, jobIds, type Queue, type Redis, type WorkQueues } from '@ap/queue';
import { queueBinsOf, queuePrepare } from './fair-share';

/** Work whose row has not moved for this long is put on the queue again (lost message, dead worker). */
export const STALE_AFTER_MS = 120_000;
/** A job committed this long ago but never enqueued is enqueued by the reconciler. */
export const UNENQUEUED_AFTER_MS = 5_000;
/**
 * How often upkeep runs. Work Redis lost (a flush, a restart without persistence) is found by
 * asking the queue for each unfinished piece of work, so it is back on the queue within one
 * interval (docs/operations.md#the-rules: within 30 s), not after STALE_AFTER_MS.
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
  const stale = new Date(now.getTime() - STALE_AFTER_MS);
  const unenqueued = new Date(now.getTime() - UNENQUEUED_AFTER_MS);
  const report: ReconcileReport = { prepares: 0, packs: 0, deliveries: 0 };

  const preparing = await preparingJobsAdrift(db, { unenqueuedBefore: unenqueued, staleBefore: stale }, scope.jobIds);
  const seen = new Set(preparing.map((j) => j.id));
  // Unfinished work the queue does not hold (Redis lost it), however recently it moved.
  const unqueuedPrepares = await preparingJobsEnqueued(db, QUEUE_CHECK_LIMIT, scope.jobIds);
  for (const job of unqueuedPrepares) {
    if (!seen.has(job.id) && (await missingFromQueue(queues.prepare as Queue<unknown>, jobIds.prepare({ jobId: job.id, attempt: job.attempt })))) {
      preparing.push(job);
      seen.add(job.id);
    }
  }
  for (const job of preparing) {
    await queuePrepare(db, queues, { jobId: job.id, attempt: job.attempt });
    report.prepares++;
  }

  // Bins: admission lives in Postgres, so whatever Redis lost or a dead worker dropped is put
  // back by admitting (up to each user's cap) and queueing every admitted bin again.
  for (const userId of await usersWithOpenBins(db, scope.jobIds)) {
    report.packs += await queueBinsOf(db, queues, userId, scope.jobIds);
  }
  await markEnqueuedByUpkeep(db, now, preparing.map((j) => j.id), scope.jobIds);

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
 * After `expires_at` a job's objects are deleted (docs/product-rules.md#expiry-quotas); the job keeps its
 * status, and download links stop working because tokens expire with the job.
 */
export async function sweepExpired(db: Db, store: ObjectStore, log: Logger, destinations: DestinationAccess, now = new Date()): Promise<number> {
  const jobs = await expiredJobsToPurge(db, now, 500);
  for (const job of jobs) {
    try {
      // A destination's ZIPs are the customer's: they stay (docs/private-sources.md#destination-buckets); our uploads there go.
      if (job.destinationSourceId === null) await deleteJobObjects(store, job.id, job.zips);
      else await abortDestinationUploads(db, destinations, job, job.zips);
      await markJobPurged(db, job.id, now);
    } catch (err) {
      log.warn({ err, jobId: job.id }, 'could not delete the objects of an expired job; will try again');
    }
  }
  return jobs.length;
}

/** Name of the upkeep schedule on the maintenance queue (one per stack, whatever the replicas). */
const UPKEEP_SCHEDULER = 'upkeep';

/**
 * Creates the upkeep schedule unless it exists with its next message in the queue. Redis may
 * lose both (a restart without persistence, a failover, FLUSHALL), and nothing else would
 * recreate them (docs/guarantees.md#redis-loses-its-data).
 */
async function ensureUpkeepSchedule(queue: Queue<unknown>, intervalMs: number): Promise<boolean> {
  const next = async () => (await queue.getJobScheduler(UPKEEP_SCHEDULER))?.next ?? undefined;
  const expected = await next();
  if (expected && !(await missingFromQueue(queue, `repeat:${UPKEEP_SCHEDULER}:${expected}`))) return false;
  // A pass taken and finished between the two reads has moved the schedule on: nothing lost.
  if (expected && (await next()) !== expected) return false;
  await queue.upsertJobScheduler(UPKEEP_SCHEDULER, { every: intervalMs }, { name: UPKEEP_SCHEDULER, data: {}, opts: { removeOnComplete: true, removeOnFail: 100 } });
  return true;
}

/**
 * Upkeep (`reconcile` and `sweepExpired`) once per interval across all replicas: a BullMQ job
 * scheduler on the maintenance queue makes one message per interval, and whichever replica's
 * worker takes it runs the pass. Every replica upserts the same schedule (idempotent) and runs
 * a worker, so upkeep goes on while any replica lives; each also recreates the schedule when
 * its Redis connection comes back and checks every interval that it is there. Returns a
 * function that stops this replica's part (the schedule stays for the others).
 */
export async function startMaintenance(
  deps: { db: Db; store: ObjectStore; log: Logger; redis: Redis; secrets: Pick<SecretBox, 'open'>; config: { REDIS_PREFIX: string; ALLOW_PRIVATE_URLS: boolean } },
  queues: WorkQueues,
  options: { intervalMs?: number; scope?: MaintenanceScope } = {},
): Promise<() => Promise<void>> {
  const { intervalMs = MAINTENANCE_INTERVAL_MS, scope } = options;
  const prefix = deps.config.REDIS_PREFIX;
  const queue = createQueue('maintenance', deps.redis, prefix);
  // Connection errors are the shared client's (it reconnects); a failed check is logged below.
  queue.on('error', () => undefined);
  await ensureUpkeepSchedule(queue as Queue<unknown>, intervalMs);
  let checking = false;
  const check = (why: string) => {
    if (checking) return;
    checking = true;
    ensureUpkeepSchedule(queue as Queue<unknown>, intervalMs)
      .then((created) => created && deps.log.warn({ why }, 'upkeep schedule was missing from Redis; created it again'))
      .catch((err: unknown) => deps.log.warn({ err, why }, 'could not check the upkeep schedule; will try again'))
      .finally(() => (checking = false));
  };
  const onReady = () => check('reconnected');
  deps.redis.on('ready', onReady);
  const timer = setInterval(() => check('interval'), intervalMs);
  timer.unref();
  const pass = async (): Promise<void> => {
    const [report, swept] = await Promise.all([reconcile(deps.db, queues, new Date(), scope), scope ? Promise.resolve(0) : sweepExpired(deps.db, deps.store, deps.log, { secrets: deps.secrets, allowPrivate: deps.config.ALLOW_PRIVATE_URLS })]);
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
    clearInterval(timer);
    deps.redis.off('ready', onReady);
    await worker.close();
    await queue.close();
  };
}
