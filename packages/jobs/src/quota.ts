import { PLANS } from '@ap/contract';
import type { DbTx, Plan } from '@ap/db';

/** Stored usage is recorded in byte-seconds; the plans count GB-days (1 GB = 10^9 bytes). */
export const BYTE_SECONDS_PER_GB_DAY = 1e9 * 86_400;

/** First day of the current calendar month (UTC): usage records are bucketed by it. */
export function monthStart(now = new Date()): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

export async function usageThisMonth(db: DbTx, userId: string, kind: 'stored_byte_seconds' | 'stream_bytes', now = new Date()): Promise<bigint> {
  const { _sum } = await db.usageRecord.aggregate({ where: { userId, kind, month: monthStart(now) }, _sum: { amount: true } });
  return _sum.amount ?? 0n;
}

/**
 * Stored quota (docs/product-rules.md#expiry-quotas): GB-days charged this month have reached the plan's allowance.
 * Checked when a stored job is created and again when each of its bins starts packing.
 */
export async function storedQuotaExceeded(db: DbTx, user: { id: string; plan: Plan }): Promise<boolean> {
  const used = Number(await usageThisMonth(db, user.id, 'stored_byte_seconds')) / BYTE_SECONDS_PER_GB_DAY;
  return used >= PLANS[user.plan].storedQuotaGbDays;
}

/** Stream quota: bytes delivered by stream downloads this month have reached the plan's allowance. */
export async function streamQuotaExceeded(db: DbTx, user: { id: string; plan: Plan }): Promise<boolean> {
  return Number(await usageThisMonth(db, user.id, 'stream_bytes')) >= PLANS[user.plan].streamQuotaBytes;
}

export const STORED_QUOTA_USED_UP = 'the monthly stored quota of your plan is used up and overage is disabled';
