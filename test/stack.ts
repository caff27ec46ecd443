// The real stack in one test process: API on an ephemeral port, preparer and packer workers
// on the run's queues, all against the run's Postgres, Redis and S3.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '@ap/config';
import type { Fetcher } from '@ap/fetch';
import { applyServerSettings, createApp, settleDownloads, type AppOptions } from '@ap/api';
import { createWorkQueues, type WorkQueues } from '@ap/queue';
import { createPackerProcessor } from '@ap/packer';
import { createPreparerProcessor } from '@ap/preparer';
import { createWorker, type Worker } from '@ap/queue';
import { createServiceContext, type ServiceContext } from '@ap/service-kit';
import { downloadUrlSigner } from '@ap/tokens';
import { createDeliveryProcessor, createDeliverySender, WEBHOOK_WORKER_CONCURRENCY } from '@ap/webhooks';
import { testConfig } from './helpers';

export interface Stack {
  url: string;
  ctx: ServiceContext & { queues: WorkQueues };
  workers: Worker[];
  close(): Promise<void>;
}

/**
 * The stalled check of a stack started to take over a killed packer's bins: the bin comes back
 * once the dead packer's lock lapses, not up to two check intervals later.
 */
export const RESCUE_STALLED_CHECK_MS = 250;

/** What a stack's packer does on close, as a packer does on SIGTERM: its bins stop and go back to the queue. */
const handBacks = new WeakMap<Worker, () => Promise<void>>();
/** As a packer after SIGTERM (docs/operations.md#the-rules): bins handed back within 10 s. */
const HAND_BACK_MS = 10_000;

/** A packer worker on the stack's queues, packing up to `slots` bins at once; stalled work looked for every `stalledCheckMs` (default: the lock's length). */
export function startPackerWorker(ctx: Stack['ctx'], slots: number, stalledCheckMs = ctx.config.WORKER_LOCK_MS): Worker {
  const stopping = new AbortController();
  const running = new Set<Promise<unknown>>();
  const packBin = createPackerProcessor(ctx, { queues: ctx.queues, stopping: stopping.signal });
  const worker = createWorker(
    'pack',
    (message, token) => {
      const bin = packBin(message, token);
      running.add(bin);
      void bin.catch(() => undefined).finally(() => running.delete(bin));
      return bin;
    },
    ctx.redis,
    ctx.config.REDIS_PREFIX,
    { concurrency: slots, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: stalledCheckMs, log: ctx.log },
  );
  // Without it a bin still packing when its test ended went on against a closed database.
  handBacks.set(worker, async () => {
    stopping.abort(new Error('the stack is closing'));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...running]), new Promise((r) => (timer = setTimeout(r, HAND_BACK_MS)))]);
    clearTimeout(timer);
  });
  return worker;
}

export async function startStack(
  overrides: Partial<Record<keyof Config, string>> = {},
  options: {
    workers?: boolean;
    /** The webhook delivery worker (hosted by the preparer); default: with the workers. */
    webhooks?: boolean;
    app?: AppOptions;
    /** The fetcher the API and workers use instead of the config's (one trusting a test CA); closed with the stack. */
    fetcher?: Fetcher;
    /**
     * How often the packer worker looks for work whose holder died (BullMQ's stalledInterval);
     * default: the lock's length. A job is taken back only once its lock has lapsed, however
     * often it is looked for, so a rescue may look more often and take a dead packer's bin sooner.
     */
    stalledCheckMs?: number;
  } = {},
): Promise<Stack> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Each stack gets its own queues unless told otherwise, so one stack's workers never take
  // another's work (a test about a strict SSRF guard must not be served by a lenient packer).
  const prefix = `${process.env.REDIS_PREFIX ?? 'ap-test'}-stack-${randomBytes(4).toString('hex')}`;
  let base: ServiceContext;
  try {
    base = createServiceContext('test', testConfig({ PUBLIC_BASE_URL: url, REDIS_PREFIX: prefix, ...overrides }), { spill: true });
  } catch (err) {
    server.close();
    throw err;
  }
  const ctx = { ...base, ...(options.fetcher ? { fetcher: options.fetcher } : {}), queues: createWorkQueues(base.redis, base.config.REDIS_PREFIX, { planConcurrentBins: base.config.PLAN_CONCURRENT_BINS }) };
  const app = createApp(ctx, options.app);
  server.on('request', app);
  applyServerSettings(server, { requestTimeoutMs: ctx.config.REQUEST_TIMEOUT_MS });
  const workers: Worker[] = [];
  if (options.workers !== false) {
    workers.push(createWorker('prepare', createPreparerProcessor(ctx, ctx.queues), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency: 2, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: ctx.config.WORKER_LOCK_MS, log: ctx.log }));
    workers.push(startPackerWorker(ctx, 2, options.stalledCheckMs));
  }
  const closers: (() => Promise<void>)[] = [];
  if (options.webhooks ?? options.workers !== false) {
    const sender = createDeliverySender({
      db: ctx.db,
      log: ctx.log,
      secrets: ctx.secrets,
      queue: ctx.queues.webhook,
      allowPrivate: ctx.config.ALLOW_PRIVATE_URLS,
      retryBaseMs: ctx.config.WEBHOOK_RETRY_BASE_MS,
      downloadUrl: downloadUrlSigner(ctx.config.PUBLIC_BASE_URL, ctx.config.DOWNLOAD_TOKEN_SECRET),
    });
    closers.push(() => sender.close());
    workers.push(createWorker('webhook', createDeliveryProcessor(sender), ctx.redis, ctx.config.REDIS_PREFIX, { concurrency: WEBHOOK_WORKER_CONCURRENCY, lockDuration: ctx.config.WORKER_LOCK_MS, stalledInterval: ctx.config.WORKER_LOCK_MS, log: ctx.log }));
  }
  return {
    url,
    ctx,
    workers,
    async close() {
      await Promise.all(workers.map((w) => handBacks.get(w)?.()));
      // Forced: after a Redis restart a worker's graceful close can wait forever (seen in redis-outage).
      await Promise.all(workers.map((w) => w.close(true)));
      for (const close of closers) await close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await settleDownloads(app);
      await ctx.queues.close();
      await ctx.close();
      options.fetcher?.close();
    },
  };
}
