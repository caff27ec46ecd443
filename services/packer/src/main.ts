import { loadConfig } from '@ap/config';
import { createWorker, createWorkQueues } from '@ap/queue';
import { createServiceContext, exitIfPortInUse, metrics, onShutdown, startHealthServer } from '@ap/service-kit';
import { createPackerProcessor } from './processor';

/** docs/operations.md#the-rules: a packer hands its bin back within 10 s of SIGTERM. */
const HAND_BACK_MS = 10_000;

const ctx = createServiceContext('packer', loadConfig(), { spill: true });
// The operations port first: a port in use ends the process before it joins the queues.
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness).catch(exitIfPortInUse(ctx.log));
const concurrency = ctx.config.PACKER_CONCURRENCY;
const stopping = new AbortController();
// Finished jobs' webhook deliveries are handed to their queue; the queue depths are exported.
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX, { planConcurrentBins: ctx.config.PLAN_CONCURRENT_BINS });
// A bin's lock is renewed while it runs; a killed packer's bin is picked up again after it lapses.
const packBin = createPackerProcessor(ctx, { stopping: stopping.signal, queues });
const idle = collectWhenIdle();
const worker = createWorker('pack', (message, token) => idle.during(() => packBin(message, token)), ctx.redis, ctx.config.REDIS_PREFIX, {
  concurrency,
  lockDuration: ctx.config.WORKER_LOCK_MS,
  stalledInterval: stalledCheckEvery(ctx.config.WORKER_LOCK_MS),
  log: ctx.log,
});
worker.on('failed', (job, err) => ctx.log.warn({ queueJob: job?.id, err: err.message }, 'pack job failed'));
// Queue depth for the autoscaler and dashboards (producers' view of the same queues).
metrics.watchQueues([queues.prepare, queues.pack, queues.webhook]);
ctx.log.info({ healthPort: health.port, concurrency }, 'packer ready');

onShutdown(
  ctx.log,
  async () => {
    idle.stop();
    // Bins in progress stop and go back to the queue with their recorded parts; the worker
    // takes nothing new meanwhile.
    stopping.abort(new Error('the packer is shutting down'));
    await worker.close();
    health.close();
    await queues.close();
    await ctx.close();
  },
  HAND_BACK_MS + 5_000,
);

/** How often the queue looks for messages whose worker died: a dead packer's bin moves on soon after its lock lapses. */
function stalledCheckEvery(lockMs: number): number {
  return Math.max(1_000, Math.min(lockMs, 5_000));
}

/**
 * Once no bin has run for IDLE_GC_MS, two full collections, the second giving back the pages
 * the first emptied: what V8's memory reducer would do, which is off for the packer
 * (scripts/services.ts). Otherwise a bin of many small files leaves ~30 MiB of heap committed
 * on top of the next bin's budget (docs/engine.md#fetching-ahead).
 */
function collectWhenIdle() {
  const IDLE_GC_MS = 10_000;
  const gc = (globalThis as { gc?: () => void }).gc;
  let running = 0;
  let timer: NodeJS.Timeout | undefined;
  const stop = () => clearTimeout(timer);
  return {
    stop,
    async during<T>(work: () => Promise<T>): Promise<T> {
      running++;
      stop();
      try {
        return await work();
      } finally {
        if (--running === 0 && gc) {
          timer = setTimeout(() => {
            gc();
            timer = setTimeout(gc, 1000).unref();
          }, IDLE_GC_MS).unref();
        }
      }
    },
  };
}
