// Fair share of packers (docs/fair-share.md). A user's bins (or a segmented bin's segments, each
// counted as a bin) are admitted to the pack queue only up to the user's plan cap (PLAN_CONCURRENT_BINS): a bin over the cap waits in Postgres, not in
// a packer. Each admitted bin is queued with its rank among its user's admitted bins as its
// BullMQ priority, so the queue serves every user's first bin, then every user's second, ...
// Admission is in Postgres, so a Redis loss loses no admission: upkeep queues the admitted bins
// again, ranked again.
import { DEFAULT_PLAN_CONCURRENT_BINS } from '@ap/contract';
import { admitBins, preparingRank, type Db } from '@ap/db';
import { enqueue, type PreparePayload, type WorkQueues } from '@ap/queue';


/**
 * Admits what the user's cap allows and puts every admitted bin on the pack queue unless it is
 * there already (message ids are derived from the bin, so this is idempotent); returns how many
 * it added. Called wherever bins appear or end: job creation, layout, retry, a bin's end, upkeep.
 */
export async function queueBinsOf(
  db: Db,
  queues: Pick<WorkQueues, 'pack' | 'planConcurrentBins'>,
  userId: string,
  /** Queue only these jobs' bins (tests whose stacks share one database but not queues). */
  onlyJobs?: readonly string[],
): Promise<number> {
  const defaults: Readonly<Record<string, number>> = DEFAULT_PLAN_CONCURRENT_BINS;
  const caps = queues.planConcurrentBins ?? defaults;
  let added = 0;
  for (const bin of await admitBins(db, userId, (plan) => caps[plan] ?? defaults[plan] ?? 1)) {
    if (onlyJobs && !onlyJobs.includes(bin.jobId)) continue;
    const payload = { jobId: bin.jobId, zipId: bin.zipId, attempt: bin.attempt, ...(bin.segment === null ? {} : { segment: bin.segment }) };
    if (await enqueue.pack(queues, payload, bin.rank)) added++;
  }
  return added;
}


/**
 * Puts a job's prepare message on the queue unless it is there, with the job's place among its
 * user's preparing jobs as its priority (docs/guarantees.md#preparing-fairly-and-bounded).
 */
export async function queuePrepare(db: Db, queues: Pick<WorkQueues, 'prepare'>, payload: PreparePayload): Promise<boolean> {
  return enqueue.prepare(queues, payload, await preparingRank(db, payload.jobId));
}
