import { Router, type RequestHandler } from 'express';
import {
  ApiError,
  jobCreateSchema,
  listJobsQuerySchema,
  retrySchema,
  type JobIdResponse, type MessageResponse,
  type ListJobsResponse,
} from '@ap/contract';
import { failedFiles, jobFileViewPages, userJobsPage, userJobWithBins, type Db } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import { createJob, deleteJob, retryJob } from '@ap/jobs';
import type { WorkQueues } from '@ap/queue';
import type { Logger } from '@ap/log';
import { metrics } from '@ap/service-kit';
import type { ObjectStore } from '@ap/storage';
import { authOf } from '../http/auth';
import { isUuid } from '../http/serialize';
import { parseOrThrow } from '../http/validate';
import { admitJob } from '../domain/admission';
import { jobListItem, writeJobFull, type ViewContext } from './job-views';

export interface JobsDeps {
  db: Db;
  queues: WorkQueues;
  store: ObjectStore;
  log: Logger;
  downloadUrl: ViewContext['downloadUrl'];
  /** The Idempotency-Key middleware of create routes. */
  idempotent: RequestHandler;
  /** Seals the files' request headers and an encrypted job's archive password; opens a destination's source secret (DELETE). */
  secrets: Pick<SecretBox, 'seal' | 'open'>;
  /** ALLOW_PRIVATE_URLS: whether a destination on a private address may be reached. */
  allowPrivate: boolean;
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
    const job = await admitJob(deps, user, body);
    await createJob(db, queues, job, (err) => log.warn({ err }, 'job committed but not enqueued; the reconciler will enqueue it'));
    metrics.jobsCreatedTotal.inc({ mode: body.mode });
    res.status(201).json({ success: true, job_id: job.id } satisfies JobIdResponse);
  });

  router.get('/', async (req, res) => {
    const { user } = authOf(req);
    const query = parseOrThrow(listJobsQuerySchema, req.query);
    const cursor = query.cursor ? decodeCursor(query.cursor) : null;
    const { rows: page, total } = await userJobsPage(db, { userId: user.id, status: query.status, before: cursor ? { createdAt: new Date(cursor.t), id: cursor.id } : null, take: query.limit + 1 });
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
    const job = isUuid(id) ? await userJobWithBins(db, id, user.id) : null;
    if (!job) throw new ApiError('NOT_FOUND', 'job not found');
    const failed = await failedFiles(db, job.id);
    await writeJobFull(res, job, failed, jobFileViewPages(db, job.id), { now: new Date(), downloadUrl: deps.downloadUrl });
  });

  router.post('/:id/retry', deps.idempotent, async (req, res) => {
    const { user } = authOf(req);
    const id = String(req.params.id);
    const body = parseOrThrow(retrySchema, req.body ?? {});
    const outcome = isUuid(id) ? await retryJob({ db, queues, store, onEnqueueError: (err) => log.warn({ err }, 'job retried but not enqueued; the reconciler will enqueue it'), onCleanupError: (err) => log.warn({ err, jobId: id }, 'job retried from scratch; its old objects could not be deleted') }, id, user.id, body.from_checkpoint) : 'not-found';
    if (outcome === 'not-found') throw new ApiError('NOT_FOUND', 'job not found');
    if (outcome === 'not-failed') throw new ApiError('INVALID_REQUEST', 'only jobs with status failed can be retried');
    res.json({ success: true, job_id: id } satisfies JobIdResponse);
  });

  // Gone at once for the user and every link holder: the job reads as 404 afterwards.
  router.delete('/:id', async (req, res) => {
    const id = String(req.params.id);
    const deleted = isUuid(id) && (await deleteJob({ db, store, destinations: { secrets: deps.secrets, allowPrivate: deps.allowPrivate }, onCleanupError: (err) => log.warn({ err, jobId: id }, 'job deleted; some of its objects could not be deleted') }, id, authOf(req).user.id));
    if (!deleted) throw new ApiError('NOT_FOUND', 'job not found');
    res.json({ success: true, message: 'job deleted' } satisfies MessageResponse);
  });

  return router;
}
