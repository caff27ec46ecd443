import express, { type Express } from 'express';
import helmet from 'helmet';
import { pinoHttp } from 'pino-http';
import { SharedBudget } from '@ap/fetch';
import { redactUrl } from '@ap/log';
import { runReadinessChecks, type ServiceContext } from '@ap/service-kit';
import { downloadUrlSigner } from '@ap/tokens';
import { API_ROUTES, type HealthResponse, type ReadinessResponse } from '@ap/contract';
import { announceDeliveries, destinationRules, destinationStore } from '@ap/jobs';
import type { WorkQueues } from '@ap/queue';
import { recordJobEvent } from '@ap/webhooks';
import { authenticate } from './http/auth';
import { bodyDeadline } from './http/body-deadline';
import { perUserRateLimit } from './http/rate-limit';
import { limitUnauthenticated } from './http/unauthenticated-limit';
import { jobsRouter } from './routes/jobs';
import { downloadRouter } from './download/route';
import { errorHandler, notFoundHandler } from './http/errors';
import { methodGuard, routeMethodsOf } from './http/methods';
import { apiKeysRouter } from './routes/api-keys';
import { authRouter } from './routes/auth';
import { createLoginThrottle, LOGIN_THROTTLE_DEFAULTS, type LoginThrottleLimits } from './http/login-throttle';
import { referenceRouter } from './routes/reference';
import { dashboardRouter } from './routes/dashboard';
import { plannedZips, type PlannedZipOptions } from './download/planned';
import { createDurableWriter } from './download/durable-usage';
import { perZipDownloadLimit } from './download/download-limit';
import { httpMetrics } from './http/metrics';
import { idempotency } from './http/idempotency';
import { streamSlots } from './download/stream-slots';
import { webhooksRouter } from './routes/webhooks';
import { sourcesRouter } from './routes/sources';
import { jobStatsRouter, usageRouter } from './routes/usage';
import type { DownloadEnd } from './download/download-meter';

export type ApiContext = Pick<ServiceContext, 'config' | 'log' | 'db' | 'redis' | 'store' | 'readiness' | 'fetcher' | 'secrets'> & { queues: WorkQueues };

export interface AppOptions {
  /** Stream-download tunables (tests and benches shrink them). */
  stream?: PlannedZipOptions;
  /** Login throttle limits (benches raise them). */
  loginThrottle?: Partial<LoginThrottleLimits>;
  /** The clock Idempotency-Keys expire by (tests move it). */
  clock?: () => Date;
}

/** Download handlers and their outbox writes (download.completed) still running, per app. */
const pendingWork = new WeakMap<Express, Set<Promise<unknown>>>();

/**
 * Resolves once the downloads' work is done (a handler whose client left still records its CRC
 * checkpoints; an ended download writes its event): after the server has closed and before the
 * context does, so no event is lost at shutdown and no query starts on a closed database.
 */
export async function settleDownloads(app: Express): Promise<void> {
  const pending = pendingWork.get(app);
  while (pending?.size) await Promise.allSettled([...pending]);
}

export function createApp(ctx: ApiContext, options: AppOptions = {}): Express {
  const app = express();
  const pending = new Set<Promise<unknown>>();
  pendingWork.set(app, pending);
  const track = (work: Promise<unknown>) => {
    const settled: Promise<void> = work.then(
      () => void pending.delete(settled),
      () => void pending.delete(settled),
    );
    pending.add(settled);
  };
  app.disable('x-powered-by');
  // X-Forwarded-For is believed only from the proxies the operator names (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse).
  app.set('trust proxy', ctx.config.TRUSTED_PROXIES.length ? ctx.config.TRUSTED_PROXIES : false);
  app.set('json replacer', (_key: string, value: unknown) => (typeof value === 'bigint' ? Number(value) : value));
  app.use(httpMetrics());
  app.use(bodyDeadline(ctx.config.REQUEST_TIMEOUT_MS));
  // No upgrade-insecure-requests: over plain http on any host but localhost it sends the
  // dashboard's and /docs' own scripts to https://, where nothing answers (TLS is the proxy's).
  app.use(helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: null } } }));
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

  // OPTIONS and methods a known path does not take: answered here, before any route or auth.
  app.use(methodGuard(routeMethodsOf(API_ROUTES)));

  app.get('/healthz', (_req, res) => {
    res.json({ success: true, status: 'ok' } satisfies HealthResponse);
  });
  app.get('/readyz', async (_req, res) => {
    const failing = await runReadinessChecks(ctx.readiness);
    res.status(failing.length ? 503 : 200).json({ success: failing.length === 0, status: failing.length ? 'unavailable' : 'ready', failing } satisfies ReadinessResponse);
  });

  app.use(referenceRouter(ctx.config.PUBLIC_BASE_URL));

  // Downloads need no API key: the signed token in the URL authorises them.
  const plannedZip = plannedZips(
    { db: ctx.db, fetcher: ctx.fetcher, log: ctx.log, secrets: ctx.secrets },
    {
      fetchAhead: { concurrency: ctx.config.FETCH_CONCURRENCY, budgetBytes: ctx.config.FETCH_BUDGET_BYTES, shared: new SharedBudget(ctx.config.STREAM_FETCH_BUDGET_BYTES) },
      ...options.stream,
    },
  );
  // download.completed: written to the outbox after the response has ended, never failing the
  // download; a write Postgres does not take is tried again until it does, as stream usage is
  // (an event is owed once its bytes went out).
  const events = createDurableWriter(ctx.log);
  const onDownloadEnd = (end: DownloadEnd) => {
    const download = { zip_id: end.zipId, bytes_sent: end.bytesSent, range: end.range, complete: end.complete };
    track(
      events.write(async () => {
        const ids = await recordJobEvent(ctx.db, { jobId: end.jobId, event: 'download.completed', download });
        await announceDeliveries(ctx.queues, ids, ctx.log);
      }, `download.completed of zip ${end.zipId}`),
    );
  };
  const slots = streamSlots(ctx.redis, ctx.config.REDIS_PREFIX, ctx.config.STREAM_DOWNLOADS_PER_USER, (err) => ctx.log.warn({ err }, 'stream download count unavailable'));
  app.use(
    '/download',
    downloadRouter({
      db: ctx.db,
      log: ctx.log,
      tokenSecret: ctx.config.DOWNLOAD_TOKEN_SECRET,
      readObject: async (key, span, job) => ((await destinationStore(ctx.db, ctx.secrets, job, destinationRules(ctx.config))) ?? ctx.store).read(key, span),
      plannedZip,
      onDownloadEnd,
      track,
      streamSlots: slots,
      perZipLimit: perZipDownloadLimit(ctx.redis, ctx.config.REDIS_PREFIX, ctx.config.DOWNLOAD_RATE_LIMIT, ctx.config.DOWNLOAD_TOKEN_SECRET),
    }),
  );

  // The dashboard's static files (the page calls the API below with its session token).
  app.use('/dashboard', dashboardRouter());

  // Bodies are read only after the credential and the rate limit passed (login's has none to pass).
  const json = express.json({ limit: 10_000_000, type: () => true });

  const loginThrottle = createLoginThrottle(ctx.redis, ctx.config.REDIS_PREFIX, { ...LOGIN_THROTTLE_DEFAULTS, ...options.loginThrottle });
  app.use('/auth', json, authRouter(ctx.db, ctx.config.SESSION_SECRET, loginThrottle));
  const protect = [
    limitUnauthenticated(ctx.redis, ctx.config.REDIS_PREFIX, ctx.config.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE, authenticate(ctx.db, ctx.config.SESSION_SECRET)),
    perUserRateLimit(ctx.redis, ctx.config.REDIS_PREFIX, ctx.config.RATE_LIMIT_PER_MINUTE),
    json,
  ];
  const downloadUrl = downloadUrlSigner(ctx.config.PUBLIC_BASE_URL, ctx.config.DOWNLOAD_TOKEN_SECRET);
  // Create routes take an Idempotency-Key (one line per route: `post(path, idempotent, ...)`).
  const idempotent = idempotency({ db: ctx.db, secret: ctx.config.SESSION_SECRET, now: options.clock });
  app.use('/api-keys', protect, apiKeysRouter(ctx.db, idempotent));
  app.use('/webhooks', protect, webhooksRouter({ db: ctx.db, secrets: ctx.secrets, allowPrivate: ctx.config.ALLOW_PRIVATE_URLS, idempotent }));
  app.use('/usage', protect, usageRouter(ctx.db));
  app.use('/jobs/stats', protect, jobStatsRouter(ctx.db));
  app.use('/jobs', protect, jobsRouter({ db: ctx.db, queues: ctx.queues, store: ctx.store, log: ctx.log, downloadUrl, idempotent, secrets: ctx.secrets, allowPrivate: ctx.config.ALLOW_PRIVATE_URLS }));
  app.use('/sources', protect, sourcesRouter({ db: ctx.db, secrets: ctx.secrets, allowPrivate: ctx.config.ALLOW_PRIVATE_URLS, ownStore: { endpoint: ctx.config.S3_ENDPOINT, bucket: ctx.config.S3_BUCKET }, idempotent }));

  app.use(notFoundHandler);
  app.use(errorHandler(ctx.log));
  return app;
}
