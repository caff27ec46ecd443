import express, { type Express } from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import { redactUrl } from '@ap/log';
import { runReadinessChecks, type ServiceContext } from '@ap/runtime';
import { signDownloadToken } from '@ap/tokens';
import type { WorkQueues } from '@ap/jobs';
import { authenticate } from './http/auth';
import { perKeyRateLimit } from './http/rate-limit';
import { jobsRouter } from './routes/jobs';
import { downloadRouter } from './routes/download';
import { errorHandler, notFoundHandler } from './http/errors';
import { apiKeysRouter } from './routes/api-keys';
import { authRouter } from './routes/auth';
import { dashboardRouter } from './routes/dashboard';
import type { LayoutReaderOptions } from '@ap/packer';
import { createStreamServer } from './stream/serve';

export type ApiContext = Pick<ServiceContext, 'config' | 'log' | 'db' | 'redis' | 'store' | 'readiness' | 'fetcher'> & { queues: WorkQueues };

export interface AppOptions {
  /** Stream-download tunables (tests and benches shrink them). */
  stream?: Partial<LayoutReaderOptions>;
}

export function createApp(ctx: ApiContext, options: AppOptions = {}): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', 'loopback, linklocal, uniquelocal');
  app.set('json replacer', (_key: string, value: unknown) => (typeof value === 'bigint' ? Number(value) : value));
  app.use(helmet());
  app.use(
    pinoHttp({
      logger: ctx.log,
      // Method, path (download tokens redacted) and status: no headers, which carry keys and cookies.
      serializers: {
        req: (req: { method: string; url: string }) => ({ method: req.method, url: redactUrl(req.url) }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
      autoLogging: { ignore: (req) => req.url === '/healthz' || req.url === '/readyz' },
    }),
  );

  app.get('/healthz', (_req, res) => {
    res.json({ success: true, status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    const failing = await runReadinessChecks(ctx.readiness);
    res.status(failing.length ? 503 : 200).json({ success: failing.length === 0, status: failing.length ? 'unavailable' : 'ready', failing });
  });

  // Downloads need no API key: the signed token in the URL authorises them.
  const serveStream = createStreamServer({ db: ctx.db, fetcher: ctx.fetcher, log: ctx.log }, options.stream);
  app.use('/download', downloadRouter({ db: ctx.db, store: ctx.store, log: ctx.log, tokenSecret: ctx.config.DOWNLOAD_TOKEN_SECRET, serveStream }));

  // The dashboard's static files (the page calls the API below with its session token).
  app.use('/dashboard', dashboardRouter());

  app.use(express.json({ limit: '10mb', type: () => true }));

  app.use('/auth', authRouter(ctx.db, ctx.config.SESSION_SECRET));
  const protect = [
    authenticate(ctx.db, ctx.config.SESSION_SECRET),
    perKeyRateLimit(ctx.redis, ctx.config.REDIS_PREFIX, ctx.config.RATE_LIMIT_PER_MINUTE),
  ];
  const downloadUrl = (zipId: string, expiresAt: Date) =>
    `${ctx.config.PUBLIC_BASE_URL}/download/${signDownloadToken({ zipId, expiresAt }, ctx.config.DOWNLOAD_TOKEN_SECRET)}`;
  app.use('/api-keys', protect, apiKeysRouter(ctx.db));
  app.use('/jobs', protect, jobsRouter({ db: ctx.db, queues: ctx.queues, store: ctx.store, log: ctx.log, downloadUrl }));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.log));
  return app;
}
