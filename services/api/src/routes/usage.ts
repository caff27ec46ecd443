// docs/product-rules.md#usage-and-stats: GET /usage (this UTC month against the plan) and
// GET /jobs/stats (the user's jobs by status).
import { Router } from 'express';
import { JOB_STATUSES, PLANS, type JobStatsView, type UsageView } from '@ap/contract';
import { userJobCountsByStatus, type Db } from '@ap/db';
import { authOf } from '../http/auth';
import { iso } from '../http/serialize';
import { BYTE_SECONDS_PER_GB_DAY, monthStart, usageThisMonth } from '@ap/jobs';

export function usageRouter(db: Db): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const { user } = authOf(req);
    const now = new Date();
    const start = monthStart(now);
    const end = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
    const [streamBytes, storedByteSeconds] = [await usageThisMonth(db, user.id, 'stream_bytes', now), await usageThisMonth(db, user.id, 'stored_byte_seconds', now)];
    const plan = PLANS[user.plan];
    const usage: UsageView = {
      plan: user.plan,
      period_start: iso(start),
      period_end: iso(end),
      overage_enabled: user.overageEnabled,
      stream_bytes: Number(streamBytes),
      stream_quota_bytes: plan.streamQuotaBytes,
      stored_gb_days: Number(storedByteSeconds) / BYTE_SECONDS_PER_GB_DAY,
      stored_quota_gb_days: plan.storedQuotaGbDays,
    };
    res.json({ success: true, usage });
  });
  return router;
}

/** Mounted before /jobs/:id, so "stats" is never read as a job id. */
export function jobStatsRouter(db: Db): Router {
  const router = Router();
  router.get('/', async (req, res) => {
    const stats = Object.fromEntries([['total', 0], ...JOB_STATUSES.map((s) => [s, 0])]) as JobStatsView;
    for (const { status, count } of await userJobCountsByStatus(db, authOf(req).user.id)) {
      stats[status] = count;
      stats.total += count;
    }
    res.json({ success: true, stats });
  });
  return router;
}
