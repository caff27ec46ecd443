import http from 'node:http';
import { loadConfig } from '@ap/config';
import { createServiceContext, exitIfPortInUse, listen, metrics, onShutdown, startHealthServer } from '@ap/service-kit';
import { createWorkQueues } from '@ap/queue';
import { createApp, settleDownloads } from './app';
import { applyServerSettings } from './http/server-settings';

/** docs/operations.md#the-rules: on SIGTERM, responses in flight get this long to finish. */
const DRAIN_MS = 25_000;

const ctx = createServiceContext('api', loadConfig(), { spill: true });
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX, { planConcurrentBins: ctx.config.PLAN_CONCURRENT_BINS });
metrics.watchQueues([queues.prepare, queues.pack, queues.webhook]);
const app = createApp({ ...ctx, queues });
const server = http.createServer(app);
applyServerSettings(server, { requestTimeoutMs: ctx.config.REQUEST_TIMEOUT_MS });
await listen(server, ctx.config.PORT).catch(exitIfPortInUse(ctx.log));
ctx.log.info({ port: ctx.config.PORT, url: ctx.config.PUBLIC_BASE_URL }, 'api listening');
// The operations port (/healthz, /readyz, /metrics): /metrics is never on the public port.
const health = await startHealthServer(ctx.config.HEALTH_PORT, ctx.readiness).catch(exitIfPortInUse(ctx.log));
ctx.log.info({ healthPort: health.port }, 'api operations port');

onShutdown(
  ctx.log,
  async () => {
    // Not ready from now on, so a load balancer stops sending requests while responses drain.
    ctx.readiness.draining = () => Promise.reject(new Error('draining'));
    // No new connections; idle keep-alive sockets close now, busy ones after their response.
    const drained = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    // A keep-alive socket whose response just finished is idle now: close it too.
    const sweep = setInterval(() => server.closeIdleConnections(), 500);
    const timer = setTimeout(() => {
      ctx.log.warn('responses still in flight after the drain period; closing their connections');
      server.closeAllConnections();
    }, DRAIN_MS);
    await drained;
    clearInterval(sweep);
    clearTimeout(timer);
    await settleDownloads(app);
    health.close();
    await queues.close();
    await ctx.close();
  },
  DRAIN_MS + 5_000,
);
