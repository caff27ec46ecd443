import { loadConfig } from '@ap/config';
import { createWorkQueues, startMaintenance } from '@ap/jobs';
import { createWorker } from '@ap/queue';
import { createServiceContext, metrics, onShutdown, startHealthServer } from '@ap/runtime';
import { createPreparerProcessor } from './processor';

const ctx = createServiceContext('preparer', loadConfig());
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX);
const concurrency = ctx.config.PREPARER_CONCURRENCY;
const worker = createWorker('prepare', createPreparerProcessor(ctx, queues), ctx.redis, ctx.config.REDIS_PREFIX, {
  concurrency,
  lockDuration: ctx.config.WORKER_LOCK_MS,
  stalledInterval: Math.max(1_000, Math.min(ctx.config.WORKER_LOCK_MS, 5_000)),
  log: ctx.log,
});
worker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'prepare job failed'));
metrics.watchQueues([queues.prepare, queues.pack]);
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness);
ctx.log.info({ healthPort: health.port, concurrency }, 'preparer ready');

// Every replica runs upkeep (re-enqueue lost work, delete expired objects).
const stopMaintenance = startMaintenance(ctx, queues);

onShutdown(ctx.log, async () => {
  await stopMaintenance();
  await worker.close();
  health.close();
  await queues.close();
  await ctx.close();
});
