import { loadConfig } from '@ap/config';
import { createWorkQueues } from '@ap/jobs';
import { createWorker } from '@ap/queue';
import { createServiceContext, onShutdown, startHealthServer } from '@ap/runtime';
import { createPackerProcessor } from './processor';

const ctx = createServiceContext('packer', loadConfig());
const concurrency = ctx.config.PACKER_CONCURRENCY;
// Only for handing a finished job's webhook deliveries to their queue.
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX);
// A bin's lock is renewed while it runs; a killed packer's bin is picked up again after it lapses.
const worker = createWorker('pack', createPackerProcessor(ctx, queues), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: ctx.config.WORKER_LOCK_MS });
worker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'pack job failed'));
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness);
ctx.log.info({ healthPort: health.port, concurrency }, 'packer ready');

onShutdown(ctx.log, async () => {
  await worker.close();
  health.close();
  await queues.close();
  await ctx.close();
}, 300_000);
