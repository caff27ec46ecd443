import { loadConfig } from '@ap/config';
import { createWorkQueues, reconcile, sweepExpired } from '@ap/jobs';
import { createWorker } from '@ap/queue';
import { createServiceContext, onShutdown, startHealthServer } from '@ap/runtime';
import { signDownloadToken } from '@ap/tokens';
import { createDeliveryProcessor, createDeliverySender } from '@ap/webhooks';
import { createPreparerProcessor } from './processor';

/** How often lost work is re-enqueued and expired objects are deleted. */
const MAINTENANCE_INTERVAL_MS = 30_000;

const ctx = createServiceContext('preparer', loadConfig());
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX);
const concurrency = ctx.config.PREPARER_CONCURRENCY;
const worker = createWorker('prepare', createPreparerProcessor(ctx, queues), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: ctx.config.WORKER_LOCK_MS });
worker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'prepare job failed'));
// Webhook deliveries are sent from here: the preparer is light, and its attempts are mostly
// waiting on receivers (docs/decisions.md "Webhooks").
const deliveries = createDeliverySender({
  db: ctx.db,
  log: ctx.log,
  queue: queues.webhook,
  allowPrivate: ctx.config.ALLOW_PRIVATE_URLS,
  retryBaseMs: ctx.config.WEBHOOK_RETRY_BASE_MS,
  downloadUrl: (zipId, expiresAt) => `${ctx.config.PUBLIC_BASE_URL}/download/${signDownloadToken({ zipId, expiresAt }, ctx.config.DOWNLOAD_TOKEN_SECRET)}`,
});
const webhookWorker = createWorker('webhook', createDeliveryProcessor(deliveries), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency: 16, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: ctx.config.WORKER_LOCK_MS });
webhookWorker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'webhook job failed'));
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness);
ctx.log.info({ healthPort: health.port, concurrency }, 'preparer ready');

// Every replica runs upkeep; both tasks are idempotent, so overlapping runs are harmless.
let running = false;
const maintenance = setInterval(() => {
  if (running) return;
  running = true;
  Promise.all([reconcile(ctx.db, queues), sweepExpired(ctx.db, ctx.store, ctx.log)])
    .then(([report, swept]) => {
      if (report.prepares || report.packs || report.deliveries || swept) ctx.log.info({ ...report, swept }, 'maintenance');
    })
    .catch((err: unknown) => ctx.log.warn({ err }, 'maintenance failed'))
    .finally(() => (running = false));
}, MAINTENANCE_INTERVAL_MS);

onShutdown(ctx.log, async () => {
  clearInterval(maintenance);
  await Promise.all([worker.close(), webhookWorker.close()]);
  deliveries.close();
  health.close();
  await queues.close();
  await ctx.close();
});
