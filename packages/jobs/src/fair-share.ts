// Fair share of packers (docs/fair-share.md). A user's bins are admitted to the pack queue only
// up to the user's plan cap (PLAN_CONCURRENT_BINS): a bin over the cap waits in Postgres, not in
// a packer. Each admitted bin is queued with its rank among its user's admitted bins as its
// BullMQ priority, so the queue serves every user's first bin, then every user's second, ...
// Admission is in Postgres, so a Redis loss loses no admission: upkeep queues the admitted bins
// again, ranked again.
import type { Db } from '@ap/db';
import { enqueue, type WorkQueues } from '@ap/queue';

/** Running bins per user by plan when the operator sets nothing (decisions.md "Fair share under load"). */
export const DEFAULT_PLAN_CONCURRENT_BINS: Readonly<Record<string, number>> = { free: 1, starter: 2, pro: 4, scale: 8 };

/** Bins that count against a user's cap: admitted, not ended, under their job's current attempt. */
const ADMITTED_UNFINISHED = `
  z.admitted_at IS NOT NULL AND z.status IN ('pending', 'processing') AND z.attempt = j.attempt
  AND j.mode = 'stored' AND j.status IN ('pending', 'processing')`;

export interface QueuedBin {
  zipId: string;
  jobId: string;
  attempt: number;
  /** 1 = the user's next bin. */
  rank: number;
}

/**
 * Admits the user's oldest waiting bins while the user is under the cap (one admission at a
 * time per user: a transaction-scoped advisory lock), and returns every admitted, unfinished bin
 * with its rank (running bins first, then by admission).
 */
export async function admitBins(db: Db, userId: string, caps: Readonly<Record<string, number>> = DEFAULT_PLAN_CONCURRENT_BINS): Promise<QueuedBin[]> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext('admit-bins:' || ${userId}))`;
    const [user] = await tx.$queryRaw<{ plan: string }[]>`SELECT plan::text AS plan FROM users WHERE id = ${userId}::uuid`;
    if (!user) return [];
    const cap = caps[user.plan] ?? DEFAULT_PLAN_CONCURRENT_BINS[user.plan] ?? 1;
    await tx.$executeRawUnsafe(
      `UPDATE zips SET admitted_at = now()
        WHERE id IN (
          SELECT z.id FROM zips z JOIN jobs j ON j.id = z.job_id
           WHERE j.user_id = $1::uuid AND z.admitted_at IS NULL AND z.status = 'pending' AND z.attempt = j.attempt
             AND j.mode = 'stored' AND j.status IN ('pending', 'processing')
           ORDER BY j.created_at, j.id, z.sequence
           LIMIT GREATEST(0, $2::int - (SELECT count(*) FROM zips z JOIN jobs j ON j.id = z.job_id WHERE j.user_id = $1::uuid AND ${ADMITTED_UNFINISHED})))`,
      userId,
      cap,
    );
    const rows = await tx.$queryRawUnsafe<{ id: string; job_id: string; attempt: number; rank: bigint }[]>(
      `SELECT z.id, z.job_id, z.attempt,
              row_number() OVER (ORDER BY z.status = 'processing' DESC, z.admitted_at, j.created_at, z.sequence) AS rank
         FROM zips z JOIN jobs j ON j.id = z.job_id
        WHERE j.user_id = $1::uuid AND ${ADMITTED_UNFINISHED}`,
      userId,
    );
    return rows.map((r) => ({ zipId: r.id, jobId: r.job_id, attempt: r.attempt, rank: Number(r.rank) }));
  });
}

/**
 * Admits what the user's cap allows and puts every admitted bin on the pack queue unless it is
 * there already (message ids are derived from the bin, so this is idempotent); returns how many it added. Called wherever
 * bins appear or end: job creation, layout, retry, a bin's end, and upkeep.
 */
export async function queueBinsOf(
  db: Db,
  queues: Pick<WorkQueues, 'pack' | 'planConcurrentBins'>,
  userId: string,
  /** Queue only these jobs' bins (tests whose stacks share one database but not queues). */
  onlyJobs?: readonly string[],
): Promise<number> {
  let added = 0;
  for (const bin of await admitBins(db, userId, queues.planConcurrentBins)) {
    if (onlyJobs && !onlyJobs.includes(bin.jobId)) continue;
    if (await enqueue.pack(queues, { jobId: bin.jobId, zipId: bin.zipId, attempt: bin.attempt }, bin.rank)) added++;
  }
  return added;
}

/** Users with bins waiting or running in stored jobs (optionally only among some jobs). */
export async function usersWithBins(db: Db, jobIds?: readonly string[]): Promise<string[]> {
  const rows = await db.job.findMany({
    where: { ...(jobIds ? { id: { in: [...jobIds] } } : {}), mode: 'stored', status: { in: ['pending', 'processing'] }, zips: { some: { status: { in: ['pending', 'processing'] } } } },
    select: { userId: true },
    distinct: ['userId'],
    take: 5000,
  });
  return rows.map((r) => r.userId);
}
