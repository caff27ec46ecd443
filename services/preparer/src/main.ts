import { loadConfig } from '@ap/config';
import { startMaintenance } from '@ap/jobs';
import { createWorker, createWorkQueues } from '@ap/queue';
import { createServiceContext, exitIfPortInUse, metrics, onShutdown, startHealthServer } from '@ap/service-kit';
import { downloadUrlSigner } from '@ap/tokens';
import { createDeliveryProcessor, createDeliverySender, WEBHOOK_WORKER_CONCURRENCY } from '@ap/webhooks';
import { createPreparerProcessor } from './processor';

const ctx = createServiceContext('preparer', loadConfig());
// The operations port first: a port in use ends the process before it joins the queues.
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness).catch(exitIfPortInUse(ctx.log));
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX, { planConcurrentBins: ctx.config.PLAN_CONCURRENT_BINS });
const concurrency = ctx.config.PREPARER_CONCURRENCY;
const worker = createWorker('prepare', createPreparerProcessor(ctx, queues), ctx.redis, ctx.config.REDIS_PREFIX, {
  concurrency,
  lockDuration: ctx.config.WORKER_LOCK_MS,
  stalledInterval: Math.max(1_000, Math.min(ctx.config.WORKER_LOCK_MS, 5_000)),
  log: ctx.log,
});
worker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'prepare job failed'));
// Webhook deliveries are sent from here: the preparer is light, and its attempts are mostly
// waiting on receivers (docs/webhooks.md#webhooks).
const deliveries = createDeliverySender({
  db: ctx.db,
  log: ctx.log,
  secrets: ctx.secrets,
  queue: queues.webhook,
  allowPrivate: ctx.config.ALLOW_PRIVATE_URLS,
  retryBaseMs: ctx.config.WEBHOOK_RETRY_BASE_MS,
  downloadUrl: downloadUrlSigner(ctx.config.PUBLIC_BASE_URL, ctx.config.DOWNLOAD_TOKEN_SECRET),
  onAttempt: (result) => metrics.webhookDeliveriesTotal.inc({ result }),
});
const webhookWorker = createWorker('webhook', createDeliveryProcessor(deliveries), ctx.redis, ctx.config.REDIS_PREFIX, {
  concurrency: WEBHOOK_WORKER_CONCURRENCY,
  lockDuration: ctx.config.WORKER_LOCK_MS,
  stalledInterval: ctx.config.WORKER_LOCK_MS,
  log: ctx.log,
});
webhookWorker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'webhook job failed'));
metrics.watchQueues([queues.prepare, queues.pack, queues.webhook]);
ctx.log.info({ healthPort: health.port, concurrency }, 'preparer ready');

// Upkeep (re-enqueue lost work and lost webhook deliveries, delete expired objects) runs once per
// interval across the replicas: each upserts the one schedule and takes its turn.
const stopMaintenance = await startMaintenance(ctx, queues);

onShutdown(ctx.log, async () => {
  await stopMaintenance();
  await Promise.all([worker.close(), webhookWorker.close()]);
  await deliveries.close();
  health.close();
  await queues.close();
  await ctx.close();
});
