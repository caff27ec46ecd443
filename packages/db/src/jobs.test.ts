// The jobs owner's transitions against the run's Postgres: each is guarded, so a late or
// concurrent caller changes nothing; the split strategy's two spellings; keyset pages.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { endJobRow, insertJob, jobById, jobLeavesPreparing, reopenFailedJob, splitStrategyOf, userJobsPage, type NewJobRow } from './index';
import { createDb, type Db } from './client';

let db: Db;
let userId: string;
beforeAll(async () => {
  db = createDb(process.env.DATABASE_URL!, 2);
  userId = (await db.user.create({ data: { email: `jobs-${randomUUID()}@example.test` } })).id;
});
afterAll(async () => {
  await db.user.delete({ where: { id: userId } });
  await db.$disconnect();
});

/** A job of the test user's; completed unless told, so no reconciler of another test file takes it. */
async function newJob(row: Partial<NewJobRow> = {}): Promise<string> {
  const id = randomUUID();
  const createdAt = row.createdAt instanceof Date ? row.createdAt : new Date();
  await insertJob(db, { id, userId, status: 'completed', expiresIn: 3600, urlCount: 1, splitStrategy: 'preserve-order', createdAt, expiresAt: new Date(createdAt.getTime() + 3600_000), ...row });
  return id;
}

describe('the jobs owner', () => {
  it('writes the API\'s split strategy in the column\'s spelling and reads it back in the API\'s', async () => {
    for (const strategy of ['preserve-order', 'ffd'] as const) {
      const job = (await jobById(db, await newJob({ splitStrategy: strategy })))!;
      const [column] = await db.$queryRaw<{ split_strategy: string }[]>`SELECT split_strategy::text FROM jobs WHERE id = ${job.id}::uuid`;
      expect(column!.split_strategy).toBe(strategy);
      expect(splitStrategyOf(job)).toBe(strategy);
    }
  });

  it('moves a job out of preparing once, and only at its attempt', async () => {
    const id = await newJob({ status: 'preparing', attempt: 2 });
    expect(await jobLeavesPreparing(db, { jobId: id, attempt: 1, zipCount: 3 })).toBe(false);
    expect(await jobLeavesPreparing(db, { jobId: id, attempt: 2, zipCount: 3 })).toBe(true);
    expect(await jobLeavesPreparing(db, { jobId: id, attempt: 2, zipCount: 3 })).toBe(false);
    expect(await jobById(db, id)).toMatchObject({ status: 'pending', zipCount: 3 });
  });

  it('ends a job only where its guard matches, and reopens a failed one for one retry', async () => {
    const id = await newJob({ status: 'processing' });
    const now = new Date();
    expect(await endJobRow(db, { jobId: id, where: { status: 'preparing' }, status: 'failed', now })).toBe(false);
    expect(await endJobRow(db, { jobId: id, where: { status: 'processing' }, status: 'failed', data: { error: 'gone' }, now })).toBe(true);
    expect(await jobById(db, id)).toMatchObject({ status: 'failed', error: 'gone', completedAt: now });
    expect(await reopenFailedJob(db, id, 0)).toBe(true);
    expect(await reopenFailedJob(db, id, 0)).toBe(false);
    expect(await jobById(db, id)).toMatchObject({ status: 'failed', attempt: 1, error: null, completedAt: null, enqueuedAt: null });
  });

  it('pages a user\'s jobs newest first after the last row seen, counting them all', async () => {
    const t = Date.now() - 86_400_000;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await newJob({ status: 'failed', createdAt: new Date(t + (i < 3 ? 0 : i) * 1000) }));
    const seen: string[] = [];
    let before: { createdAt: Date; id: string } | null = null;
    for (;;) {
      const page: Awaited<ReturnType<typeof userJobsPage>> = await userJobsPage(db, { userId, status: 'failed', before, take: 2 });
      expect(page.total).toBeGreaterThanOrEqual(5);
      seen.push(...page.rows.map((r) => r.id));
      const last = page.rows[page.rows.length - 1];
      if (!last || page.rows.length < 2) break;
      before = { createdAt: last.createdAt, id: last.id };
    }
    const mine = seen.filter((id) => ids.includes(id));
    // Three share one created_at: id breaks the tie, and no row is seen twice or skipped.
    expect(mine).toEqual([ids[4], ids[3], ...[ids[0], ids[1], ids[2]].sort().reverse()]);
  });
});
