// The owner of the jobs table: the row type and the named reads and transitions the API, the
// preparer, the packer and the job lifecycle use on a job, instead of each writing its own
// queries. A job's status moves preparing -> pending -> processing -> completed | failed; each
// transition here is guarded (by status and attempt) so that late or concurrent callers lose.
import type { Db, DbTx } from './client';
import type { Job, JobStatus, Prisma, SplitStrategy } from './generated/client';

/** A job as `jobs` holds it. */
export type JobRow = Job;

/** How a split job orders its files into bins, as the API spells it. */
export type SplitStrategyName = 'preserve-order' | 'ffd';

/** The column's spelling of a split strategy (the API's `preserve-order` is `preserve_order`). */
const splitStrategyColumn = (name: SplitStrategyName): SplitStrategy => (name === 'ffd' ? 'ffd' : 'preserve_order');

/** A job's split strategy as the API spells it. */
export const splitStrategyOf = (job: { splitStrategy: SplitStrategy }): SplitStrategyName => (job.splitStrategy === 'ffd' ? 'ffd' : 'preserve-order');

/** A job as it is first written: its columns, the split strategy as the API spells it. */
export type NewJobRow = Omit<Prisma.JobUncheckedCreateInput, 'splitStrategy' | 'files' | 'zips'> & { splitStrategy: SplitStrategyName };

export async function insertJob(tx: DbTx, row: NewJobRow): Promise<void> {
  await tx.job.create({ data: { ...row, splitStrategy: splitStrategyColumn(row.splitStrategy) } });
}

export function jobById(db: DbTx, jobId: string): Promise<JobRow | null> {
  return db.job.findUnique({ where: { id: jobId } });
}

/** A job of this user's; null when it is someone else's or none. */
export function userJob(db: DbTx, jobId: string, userId: string): Promise<JobRow | null> {
  return db.job.findFirst({ where: { id: jobId, userId } });
}

/** A job of this user's with its bins in sequence order (the job view). */
export function userJobWithBins(db: DbTx, jobId: string, userId: string) {
  return db.job.findFirst({ where: { id: jobId, userId }, include: { zips: { orderBy: { sequence: 'asc' } } } });
}
export type JobWithBins = NonNullable<Awaited<ReturnType<typeof userJobWithBins>>>;

/** What the job list shows of a job: its figures and every bin's progress. */
export const JOB_LIST_SELECT = {
  id: true,
  status: true,
  urlCount: true,
  fileCount: true,
  zipFilename: true,
  maxZipSizeBytes: true,
  zipCount: true,
  totalSize: true,
  failOnUrlError: true,
  createdAt: true,
  completedAt: true,
  expiresAt: true,
  mode: true,
  format: true,
  zips: { orderBy: { sequence: 'asc' }, select: { sequence: true, filename: true, size: true, status: true, bytesDone: true, plannedSize: true } },
} satisfies Prisma.JobSelect;
export type JobListRow = Prisma.JobGetPayload<{ select: typeof JOB_LIST_SELECT }>;

/**
 * A page of a user's jobs, newest first, after `before` (the last row of the previous page):
 * keyset pagination on (created_at, id), so a page costs O(take) at any depth. Also the count of
 * all the user's jobs the filter admits.
 */
export async function userJobsPage(
  db: DbTx,
  query: { userId: string; status?: JobStatus | undefined; before: { createdAt: Date; id: string } | null; take: number },
): Promise<{ rows: JobListRow[]; total: number }> {
  const where: Prisma.JobWhereInput = { userId: query.userId, ...(query.status ? { status: query.status } : {}) };
  const before = query.before;
  const rows = await db.job.findMany({
    where: before ? { ...where, OR: [{ createdAt: { lt: before.createdAt } }, { createdAt: before.createdAt, id: { lt: before.id } }] } : where,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: query.take,
    select: JOB_LIST_SELECT,
  });
  return { rows, total: await db.job.count({ where }) };
}

/** How many of a user's jobs are in each status (statuses without jobs left out). */
export async function userJobCountsByStatus(db: DbTx, userId: string): Promise<{ status: JobStatus; count: number }[]> {
  const groups = await db.job.groupBy({ by: ['status'], where: { userId }, _count: { _all: true } });
  return groups.map((g) => ({ status: g.status, count: g._count._all }));
}

/** The user a job belongs to; null when the job is gone. */
export async function jobOwnerId(db: DbTx, jobId: string): Promise<string | null> {
  return (await db.job.findUnique({ where: { id: jobId }, select: { userId: true } }))?.userId ?? null;
}

/** When a job expires (its download links with it); null when the job is gone. */
export async function jobExpiresAt(db: DbTx, jobId: string): Promise<Date | null> {
  return (await db.job.findUnique({ where: { id: jobId }, select: { expiresAt: true } }))?.expiresAt ?? null;
}

/** What a webhook event's body says of a job. */
export function jobForEvent(db: DbTx, jobId: string) {
  return db.job.findUnique({
    where: { id: jobId },
    select: { id: true, userId: true, status: true, urlCount: true, fileCount: true, metadata: true, error: true, mode: true },
  });
}

/** The job's work is on its queue (the reconciler re-enqueues jobs where this is not set). */
export async function markJobEnqueued(db: DbTx, jobId: string, now = new Date()): Promise<void> {
  await db.job.update({ where: { id: jobId }, data: { enqueuedAt: now } });
}

/** A preparing job is still being worked on: upkeep leaves it alone for a while longer. */
export async function touchPreparingJob(db: DbTx, jobId: string): Promise<void> {
  await db.job.updateMany({ where: { id: jobId, status: 'preparing' }, data: { updatedAt: new Date() } });
}

/** A stored job's bins are laid out: preparing -> pending; false when another run won. */
export async function jobLeavesPreparing(tx: DbTx, job: { jobId: string; attempt: number; zipCount: number }): Promise<boolean> {
  const { count } = await tx.job.updateMany({ where: { id: job.jobId, status: 'preparing', attempt: job.attempt }, data: { status: 'pending', zipCount: job.zipCount } });
  return count > 0;
}

/**
 * A job ends (`completed` or `failed`), guarded by `where`; false when the guard did not match.
 * Only @ap/jobs `endJob` calls it: an end writes its webhook events in the same transaction.
 */
export async function endJobRow(
  tx: DbTx,
  input: { jobId: string; where?: Omit<Prisma.JobWhereInput, 'id'>; status: 'completed' | 'failed'; data?: Omit<Prisma.JobUpdateManyMutationInput, 'status'>; now: Date },
): Promise<boolean> {
  const { count } = await tx.job.updateMany({ where: { ...input.where, id: input.jobId }, data: { completedAt: input.now, ...input.data, status: input.status } });
  return count > 0;
}

/** A failed job starts its next attempt; false when it is no longer failed at `attempt` (another retry won). */
export async function reopenFailedJob(tx: DbTx, jobId: string, attempt: number): Promise<boolean> {
  const { count } = await tx.job.updateMany({ where: { id: jobId, status: 'failed', attempt }, data: { attempt: attempt + 1, error: null, completedAt: null, enqueuedAt: null } });
  return count > 0;
}

/** A job's status while it runs (pending <-> processing); ends go through endJobRow. */
export async function setJobStatus(tx: DbTx, jobId: string, status: 'pending' | 'processing'): Promise<void> {
  await tx.job.update({ where: { id: jobId }, data: { status } });
}

/** A retried job starts over: from preparing, or (a plain stored job) pending with its one bin. */
export async function restartJob(tx: DbTx, jobId: string, from: 'preparing' | 'single-bin'): Promise<void> {
  const start = from === 'preparing' ? { status: 'preparing' as const, zipCount: 0 } : { status: 'pending' as const, zipCount: 1 };
  await tx.job.update({ where: { id: jobId }, data: { ...start, fileCount: 0, totalSize: 0 } });
}

/** A job read under a row lock, so that bins ending together settle it one after the other. */
export async function lockedJob(tx: DbTx, jobId: string): Promise<JobRow | null> {
  await tx.$queryRaw`SELECT id FROM jobs WHERE id = ${jobId}::uuid FOR UPDATE`;
  return tx.job.findUnique({ where: { id: jobId } });
}

/** Limits upkeep to some jobs (tests whose stacks share one database). */
const onlyJobs = (jobIds?: readonly string[]) => (jobIds ? { id: { in: [...jobIds] } } : {});

/** Preparing jobs whose prepare never got on the queue, or that no worker has touched for a while. */
export function preparingJobsAdrift(db: DbTx, at: { unenqueuedBefore: Date; staleBefore: Date }, jobIds?: readonly string[]): Promise<{ id: string; attempt: number }[]> {
  return db.job.findMany({
    where: { ...onlyJobs(jobIds), status: 'preparing', OR: [{ enqueuedAt: null, createdAt: { lt: at.unenqueuedBefore } }, { updatedAt: { lt: at.staleBefore } }] },
    select: { id: true, attempt: true },
    take: 1000,
  });
}

/**
 * A preparing job's place among its user's preparing jobs, oldest first (1 = the oldest): the
 * prepare message's priority, so users' first jobs go round-robin
 * (docs/guarantees.md#preparing-fairly-and-bounded). 1 when the job is no longer preparing.
 */
export async function preparingRank(db: DbTx, jobId: string): Promise<number> {
  const rows = await db.$queryRaw<{ rank: bigint }[]>`
    SELECT count(*) AS rank FROM jobs other JOIN jobs job ON job.id = ${jobId}::uuid
    WHERE other.user_id = job.user_id AND other.status = 'preparing'
      AND (other.created_at, other.id) <= (job.created_at, job.id)`;
  return Math.max(1, Number(rows[0]?.rank ?? 1));
}

/** Preparing jobs whose prepare was put on the queue, oldest first: upkeep checks the queue still holds it. */
export function preparingJobsEnqueued(db: DbTx, limit: number, jobIds?: readonly string[]): Promise<{ id: string; attempt: number }[]> {
  return db.job.findMany({
    where: { ...onlyJobs(jobIds), status: 'preparing', enqueuedAt: { not: null } },
    select: { id: true, attempt: true },
    orderBy: { createdAt: 'asc' },
    take: limit,
  });
}

/**
 * Marks as enqueued the given jobs, and every running stored job created before `now` (their
 * bins were just queued by upkeep), where not marked yet.
 */
export async function markEnqueuedByUpkeep(db: DbTx, now: Date, enqueued: readonly string[], jobIds?: readonly string[]): Promise<void> {
  await db.job.updateMany({ where: { ...onlyJobs(jobIds), mode: 'stored', status: { in: ['pending', 'processing'] }, enqueuedAt: null, createdAt: { lt: now } }, data: { enqueuedAt: now } });
  if (enqueued.length) await db.job.updateMany({ where: { id: { in: [...enqueued] }, enqueuedAt: null }, data: { enqueuedAt: now } });
}

/** Users with bins waiting or running in stored jobs (optionally only among some jobs): upkeep admits and queues theirs. */
export async function usersWithOpenBins(db: DbTx, jobIds?: readonly string[]): Promise<string[]> {
  const rows = await db.job.findMany({
    where: { ...onlyJobs(jobIds), mode: 'stored', status: { in: ['pending', 'processing'] }, zips: { some: { status: { in: ['pending', 'processing'] } } } },
    select: { userId: true },
    distinct: ['userId'],
    take: 5000,
  });
  return rows.map((r) => r.userId);
}

/** Expired jobs whose objects are not deleted yet, with their bins' objects. */
export function expiredJobsToPurge(db: Db, now: Date, limit: number) {
  return db.job.findMany({
    where: { expiresAt: { lte: now }, purgedAt: null },
    select: { id: true, destinationSourceId: true, destinationBucket: true, destinationPrefix: true, zips: { select: { id: true, filename: true, objectKey: true, uploadId: true } } },
    take: limit,
  });
}

/** An expired job's objects are deleted. */
export async function markJobPurged(db: Db, jobId: string, now: Date): Promise<void> {
  await db.job.update({ where: { id: jobId }, data: { purgedAt: now } });
}
