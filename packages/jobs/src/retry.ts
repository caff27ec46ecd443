import { assignJobFilesToBin, clearFileErrors, createSingleBin, deleteJobBins, jobBins, markJobEnqueued, reopenFailedJob, rerunBins, resetJobFiles, restartJob, setJobStatus, userJob, type Db } from '@ap/db';
import type { ObjectStore } from '@ap/storage';
import { needsPreparing } from './create';
import { newZipId } from './ids';
import { deleteJobObjects } from './objects';
import type { WorkQueues } from '@ap/queue';
import { enqueueSoon } from './enqueue-soon';
import { queueBinsOf, queuePrepare } from './fair-share';

export type RetryOutcome = 'retried' | 'not-failed' | 'not-found';

/**
 * Retries a failed job (docs/product-rules.md#lifecycle). From a checkpoint: completed bins and their
 * objects stay, the others run again (resuming recorded multipart parts where possible). From
 * scratch: every object of the job is deleted and the job starts again from probing.
 * The status check and the reset are one conditional update, so concurrent retries run once;
 * objects are deleted only by the retry that won it, after its bins are gone
 * (docs/api-hardening.md#retry-from-scratch).
 */
export async function retryJob(
  deps: { db: Db; queues: WorkQueues; store: ObjectStore; onEnqueueError?: (err: unknown) => void; onCleanupError?: (err: unknown) => void },
  jobId: string,
  userId: string,
  fromCheckpoint: boolean,
): Promise<RetryOutcome> {
  const { db, queues, store } = deps;
  const job = await userJob(db, jobId, userId);
  if (!job) return 'not-found';
  if (job.status !== 'failed') return 'not-failed';
  const attempt = job.attempt + 1;
  const preparing = needsPreparing(job);
  const bins = await jobBins(db, jobId);

  const binsToRun: string[] = [];
  let binsDropped = false;
  const won = await db.$transaction(async (tx) => {
    if (!(await reopenFailedJob(tx, jobId, job.attempt))) return false;
    const layoutKnown = bins.length > 0;
    if (fromCheckpoint && (layoutKnown || !preparing)) {
      const rerun = bins.filter((z) => z.status !== 'completed').map((z) => z.id);
      await rerunBins(tx, rerun, attempt);
      await clearFileErrors(tx, jobId, rerun);
      await setJobStatus(tx, jobId, 'pending');
      binsToRun.push(...rerun);
      return true;
    }
    // From scratch (or a split/stream job whose layout was never computed): back to the start.
    await deleteJobBins(tx, jobId);
    binsDropped = true;
    await resetJobFiles(tx, jobId);
    if (preparing) {
      await restartJob(tx, jobId, 'preparing');
    } else {
      // A plain stored job always has its single ZIP, created with the job.
      const zipId = newZipId();
      await createSingleBin(tx, { id: zipId, jobId, filename: bins[0]!.filename, fileCount: job.urlCount, attempt });
      await assignJobFilesToBin(tx, jobId, zipId);
      await restartJob(tx, jobId, 'single-bin');
      binsToRun.push(zipId);
    }
    return true;
  });
  if (!won) return 'not-failed';
  // Their rows are gone, so nothing serves or resumes them any more. A failure leaves only
  // unreferenced objects behind, never a bin without its object.
  // A destination's objects are the customer's (a retry writes them again, over the same keys).
  if (binsDropped && job.destinationSourceId === null) await deleteJobObjects(store, jobId, bins).catch(deps.onCleanupError ?? (() => undefined));

  // As at creation, waited for briefly: `enqueued_at` stays null until it is done, for the reconciler.
  await enqueueSoon(
    queues,
    async () => {
      if (binsToRun.length === 0) await queuePrepare(db, queues, { jobId, attempt });
      else await queueBinsOf(db, queues, userId);
      await markJobEnqueued(db, jobId);
    },
    deps.onEnqueueError ?? (() => undefined),
  );
  return 'retried';
}
