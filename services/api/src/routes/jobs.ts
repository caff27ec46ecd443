import { Router, type RequestHandler } from 'express';
import {
  ApiError,
  checkArchiveLimit,
  checkPlanLimits,
  jobCreateSchema,
  listJobsQuerySchema,
  renderZipFilenames,
  retrySchema,
  type GetJobResponse,
  type JobIdResponse,
  type ListJobsResponse,
} from '@ap/contract';
import { type Db, type Prisma, jobFileViews } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import { createJob, retryJob } from '@ap/jobs';
import type { WorkQueues } from '@ap/queue';
import type { Logger } from '@ap/log';
import { metrics } from '@ap/service-kit';
import type { ObjectStore } from '@ap/storage';
import { authOf } from '../http/auth';
import { destinationWithSource, filesWithSources } from './sources';
import { isUuid } from '../http/serialize';
import { parseOrThrow } from '../http/validate';
import { storedQuotaExceeded } from '../domain/quota';
import { jobFull, jobFullInclude, jobListItem, jobListSelect, type ViewContext } from './job-views';

export interface JobsDeps {
  db: Db;
  queues: WorkQueues;
  store: ObjectStore;
  log: Logger;
  downloadUrl: ViewContext['downloadUrl'];
  /** The Idempotency-Key middleware of create routes. */
  idempotent: RequestHandler;
  /** Seals the files' request headers and an encrypted job's archive password. */
  secrets: Pick<SecretBox, 'seal'>;
}

interface Cursor {
  t: string;
  id: string;
}

const encodeCursor = (c: Cursor) => Buffer.from(JSON.stringify([c.t, c.id])).toString('base64url');

/**
 * The only timestamps a cursor carries are `toISOString()` of a stored `created_at`: four-digit
 * years 0001-9999, to the millisecond, in UTC. Anything else (year 0 or negative, six-digit
 * years, other formats Date.parse takes) was never handed out, and Postgres may refuse it.
 */
const CURSOR_TIME = /^(\d{4})-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const isCursorTime = (t: string): boolean => {
  const m = CURSOR_TIME.exec(t);
  if (!m || m[1] === '0000') return false;
  const ms = Date.parse(t);
  return !Number.isNaN(ms) && new Date(ms).toISOString() === t;
};

function decodeCursor(value: string): Cursor {
  try {
    const [t, id] = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as [unknown, unknown];
    if (typeof t === 'string' && isCursorTime(t) && typeof id === 'string' && isUuid(id)) return { t, id };
  } catch {
    // fall through
  }
  throw new ApiError('INVALID_REQUEST', 'cursor is not a value returned in meta.next_cursor');
}

export function jobsRouter(deps: JobsDeps): Router {
  const { db, queues, store, log } = deps;
  const router = Router();

  router.post('/', deps.idempotent, async (req, res) => {
    const { user } = authOf(req);
    const body = parseOrThrow(jobCreateSchema, req.body);
    const archiveProblem = checkArchiveLimit(user.plan, body.mode, body.max_zip_size_bytes ?? null);
    if (archiveProblem) throw new ApiError('INVALID_REQUEST', archiveProblem);
    const files = await filesWithSources(db, user.id, body.files);
    const destination = await destinationWithSource(db, user.id, body.destination);
    const planProblem = checkPlanLimits(user.plan, body);
    if (planProblem) throw new ApiError('PLAN_LIMIT_EXCEEDED', planProblem.message);
    if (body.mode === 'stored' && !user.overageEnabled && (await storedQuotaExceeded(db, user))) {
      throw new ApiError('QUOTA_EXCEEDED', 'the monthly stored quota of your plan is used up and overage is disabled');
    }
    const jobId = await createJob(
      db,
      queues,
      {
        userId: user.id,
        mode: body.mode,
        files,
        zipFilename: body.zip_filename ?? null,
        expiresIn: body.expires_in,
        failOnUrlError: body.fail_on_url_error,
        metadata: body.metadata ?? null,
        maxZipSizeBytes: body.max_zip_size_bytes ?? null,
        splitStrategy: body.split_strategy,
        allowOversizeZips: body.allow_oversize_zips,
        failOnZipError: body.fail_on_zip_error,
        compression: body.compression,
        compressionLevel: body.compression_level ?? null,
        encryption: body.encryption ? { method: body.encryption.method, seal: (place) => deps.secrets.seal(body.encryption!.password, place) } : null,
        destination,
      },
      (err) => log.warn({ err }, 'job committed but not enqueued; the reconciler will enqueue it'),
      (id, createdAt) => {
        const rendered = renderZipFilenames({ template: body.zip_filename ?? null, jobId: id, createdAt, total: 1 });
        if (!rendered.ok) throw new ApiError('INVALID_REQUEST', rendered.message);
        return rendered.names[0]!;
      },
      deps.secrets,
    );
    metrics.jobsCreatedTotal.inc({ mode: body.mode });
    res.status(201).json({ success: true, job_id: jobId } satisfies JobIdResponse);
  });

  router.get('/', async (req, res) => {
    const { user } = authOf(req);
    const query = parseOrThrow(listJobsQuerySchema, req.query);
    const where: Prisma.JobWhereInput = { userId: user.id, ...(query.status ? { status: query.status } : {}) };
    const cursor = query.cursor ? decodeCursor(query.cursor) : null;
    // Keyset pagination on (created_at, id) descending: a page costs O(limit) at any depth.
    const page = await db.job.findMany({
      where: cursor
        ? { ...where, OR: [{ createdAt: { lt: new Date(cursor.t) } }, { createdAt: new Date(cursor.t), id: { lt: cursor.id } }] }
        : where,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: query.limit + 1,
      select: jobListSelect,
    });
    const total = await db.job.count({ where });
    const hasMore = page.length > query.limit;
    const items = page.slice(0, query.limit);
    const last = items[items.length - 1];
    res.json({
      success: true,
      jobs: items.map(jobListItem),
      meta: {
        limit: query.limit,
        total,
        next_cursor: hasMore && last ? encodeCursor({ t: last.createdAt.toISOString(), id: last.id }) : null,
        has_more: hasMore,
      },
    } satisfies ListJobsResponse);
  });

  router.get('/:id', async (req, res) => {
    const { user } = authOf(req);
    const id = req.params.id;
    const job = isUuid(id) ? await db.job.findFirst({ where: { id, userId: user.id }, include: jobFullInclude }) : null;
    if (!job) throw new ApiError('NOT_FOUND', 'job not found');
    const files = await jobFileViews(db, job.id);
    res.json({ success: true, job: jobFull({ ...job, files }, { now: new Date(), downloadUrl: deps.downloadUrl }) } satisfies GetJobResponse);
  });

  router.post('/:id/retry', deps.idempotent, async (req, res) => {
    const { user } = authOf(req);
    const id = String(req.params.id);
    const body = parseOrThrow(retrySchema, req.body ?? {});
    const outcome = isUuid(id) ? await retryJob({ db, queues, store, onEnqueueError: (err) => log.warn({ err }, 'job retried but not enqueued; the reconciler will enqueue it') }, id, user.id, body.from_checkpoint) : 'not-found';
    if (outcome === 'not-found') throw new ApiError('NOT_FOUND', 'job not found');
    if (outcome === 'not-failed') throw new ApiError('INVALID_REQUEST', 'only jobs with status failed can be retried');
    res.json({ success: true, job_id: id } satisfies JobIdResponse);
  });

  return router;
}
