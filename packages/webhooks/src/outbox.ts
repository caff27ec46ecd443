// The outbox (webhook_deliveries): the one owner of its rows. Events are written in the
// transaction that causes them, so a lost Redis or a crashed worker loses no event; the queue
// only carries "send attempt N of delivery D now", and the reconciler re-adds what it lost.
import { randomUUID } from 'node:crypto';
import type { WebhookEvent } from '@ap/contract';
import { failedFiles, jobBins, jobForEvent, type Db, type Prisma } from '@ap/db';
import { eventBody, type DownloadReport } from './body';

/** A transaction or the client itself (download.completed is written outside any status change). */
export type OutboxDb = Prisma.TransactionClient | Db;

/** A webhook row's `events` column (a JSON array of names). */
export function eventsOf(value: unknown): WebhookEvent[] {
  return Array.isArray(value) ? (value.filter((v) => typeof v === 'string') as WebhookEvent[]) : [];
}

/**
 * Writes one pending delivery per live webhook of the job's owner that asks for `event`, with
 * the body as of now (inside the status change's transaction: the state it committed). Returns
 * the new delivery ids, to be put on the queue after commit. Costs one indexed query when the
 * user has no such webhook.
 */
export async function recordJobEvent(
  db: OutboxDb,
  input: { jobId: string; event: WebhookEvent; now?: Date; download?: DownloadReport },
): Promise<string[]> {
  const now = input.now ?? new Date();
  const job = await jobForEvent(db, input.jobId);
  if (!job) return [];
  const hooks = await db.webhook.findMany({ where: { userId: job.userId, deletedAt: null }, select: { id: true, events: true } });
  const targets = hooks.filter((h) => eventsOf(h.events).includes(input.event));
  if (targets.length === 0) return [];
  const zips = await jobBins(db, job.id);
  const failed = await failedFiles(db, job.id);
  const rows = targets.map((hook) => {
    const id = randomUUID();
    const payload = eventBody({ deliveryId: id, event: input.event, job, zips, failedFiles: failed, now, ...(input.download ? { download: input.download } : {}) });
    return { id, webhookId: hook.id, event: input.event, jobId: job.id, payload, nextAttemptAt: now, createdAt: now };
  });
  await db.webhookDelivery.createMany({ data: rows });
  return rows.map((r) => r.id);
}

/** Pending deliveries whose attempt is due since `dueBefore` and that no worker holds: the reconciler's list. */
export async function dueDeliveries(db: Db, dueBefore: Date, now = new Date(), take = 1000): Promise<{ id: string; attempts: number }[]> {
  return db.webhookDelivery.findMany({
    where: { status: 'pending', nextAttemptAt: { lte: dueBefore }, OR: [{ lockedUntil: null }, { lockedUntil: { lt: now } }] },
    select: { id: true, attempts: true },
    orderBy: { nextAttemptAt: 'asc' },
    take,
  });
}
