// What every way of packing a bin shares: where its ZIP goes, the packer's settings as the
// engine reads them, and the user's next bins once one ends.
import type { WorkQueues } from '@ap/queue';
import { destinationBlocked, destinationKey, destinationRules, destinationStore, objectKeyFor, queueBinsOf } from '@ap/jobs';
import type { binWithJob } from '@ap/db';
import { BinFailure, type PackTuning } from '@ap/archive';
import type { ServiceContext } from '@ap/service-kit';

/**
 * Where a finished job's webhook deliveries are queued, and where the user's next bin goes once
 * this one ends (without them, upkeep does both).
 */
export type EventQueues = Pick<WorkQueues, 'webhook' | 'pack' | 'planConcurrentBins'>;

export type BinWithJob = NonNullable<Awaited<ReturnType<typeof binWithJob>>>;

/** Where a bin's ZIP goes: a store, its key there, and whether it is the job's destination bucket. */
export interface BinTarget {
  store: ServiceContext['store'];
  key: string;
  destination: boolean;
}

/**
 * Where a bin's ZIP is written: our bucket under its object key, or the job's destination bucket
 * under its name there (docs/private-sources.md#destination-buckets), with the source's credentials.
 */
export async function binTarget(ctx: ServiceContext, zip: BinWithJob): Promise<BinTarget> {
  const destination = await destinationStore(ctx.db, ctx.secrets, zip.job, destinationRules(ctx.config)).catch((err: unknown) => {
    const refused = destinationBlocked(err, { allowPrivate: ctx.config.ALLOW_PRIVATE_URLS });
    throw refused ? new BinFailure(refused.message) : err;
  });
  if (destination) return { store: destination, key: destinationKey(zip.job, zip.filename), destination: true };
  return { store: ctx.store, key: objectKeyFor(zip.jobId, zip.id), destination: false };
}


/** A bin ended: the user's cap has room for their next one (and fail-fast may have freed more). */
export async function queueNextBins(ctx: ServiceContext, jobId: string, queues: EventQueues | undefined): Promise<void> {
  if (!queues) return;
  try {
    const job = await ctx.db.job.findUnique({ where: { id: jobId }, select: { userId: true } });
    if (job) await queueBinsOf(ctx.db, queues, job.userId);
  } catch (err) {
    // Upkeep admits it within one interval.
    ctx.log.warn({ jobId, err }, 'could not queue the next bins of the user');
  }
}

/**
 * A bin whose completion found no record to make: when its job was deleted meanwhile (delete
 * wins every race), the ZIP it has just written goes; otherwise another holder records it.
 */
export async function removeIfDeleted(ctx: ServiceContext, zipId: string, target: BinTarget): Promise<void> {
  if (await ctx.db.zip.findUnique({ where: { id: zipId }, select: { id: true } })) return;
  await target.store.deleteMany([target.key]);
  ctx.log.info({ zipId }, 'bin completed after its job was deleted: its ZIP removed');
}

/** The packer's settings as the engine reads them. */
export function packTuning(config: ServiceContext['config']): PackTuning {
  return { fetchConcurrency: config.FETCH_CONCURRENCY, fetchBudgetBytes: config.FETCH_BUDGET_BYTES, probeConcurrency: config.PROBE_CONCURRENCY };
}
