import { loadConfig } from '@ap/config';
import { createServiceContext, onShutdown } from '@ap/runtime';
import { createWorkQueues } from '@ap/jobs';
import { createApp } from './app';
import { answerClientErrors } from './http/client-errors';

const ctx = createServiceContext('api', loadConfig());
const queues = createWorkQueues(ctx.redis, ctx.config.REDIS_PREFIX);
const app = createApp({ ...ctx, queues });
const server = app.listen(ctx.config.PORT, () => {
  ctx.log.info({ port: ctx.config.PORT, url: ctx.config.PUBLIC_BASE_URL }, 'api listening');
});
answerClientErrors(server);
// Downloads can run for hours; only idle keep-alive sockets are timed out.
server.requestTimeout = 0;
server.keepAliveTimeout = 65_000;

onShutdown(ctx.log, async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await queues.close();
  await ctx.close();
});
