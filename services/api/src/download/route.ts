// GET /download/:token: the signed token names a bin, read once; the route picks the ZIP's
// servable form (stored object or planned stream), answers the head and ranges, then sends.
import { Router, type Request, type RequestHandler, type Response } from 'express';
import { ApiError, ARCHIVE_CONTENT_TYPES, archiveFormatOf } from '@ap/contract';
import { binForDownload, type Db, type DownloadBin } from '@ap/db';
import type { Logger } from '@ap/log';
import { verifyDownloadToken } from '@ap/tokens';
import { meterDownload, type DownloadEnd } from './download-meter';
import type { StreamSlots } from './stream-slots';
import { answerRange, responseEnded, whenAborted } from './http-range';
import type { ServableZip } from './servable';
import { storedZip, type ReadStoredObject } from './stored';

export interface DownloadDeps {
  db: Db;
  log: Logger;
  tokenSecret: string;
  /** A stored ZIP's bytes. */
  readObject: ReadStoredObject;
  /** The servable form of a stream bin; absent until stream mode is enabled. */
  plannedZip?: (bin: DownloadBin) => Promise<ServableZip>;
  /** Told what each download response delivered once it has ended (download.completed). */
  onDownloadEnd?: (end: DownloadEnd) => void;
  /** Told of each download's handling, to be awaited at shutdown (its reads and records may outlive its response). */
  track?: (handling: Promise<void>) => void;
  /** Stream downloads in flight per user (STREAM_DOWNLOADS_PER_USER). */
  streamSlots?: StreamSlots;
  /** Requests per ZIP and minute (DOWNLOAD_RATE_LIMIT), before the bin is read. */
  perZipLimit?: RequestHandler;
}

/** When a user at the stream download cap is told to try again (seconds). */
const STREAM_SLOT_RETRY_AFTER_S = 5;

export function downloadRouter(deps: DownloadDeps): Router {
  const router = Router();
  const limit: RequestHandler[] = deps.perZipLimit ? [deps.perZipLimit] : [];
  // The response's end is listened for first, before any await (the limit's included): a
  // client that hangs up meanwhile still ends what the request took.
  const listen: RequestHandler = (_req, res, next) => {
    res.locals.ended = responseEnded(res);
    next();
  };
  router.get('/:token', listen, ...limit, (req, res) => {
    const handling = serve(req, res);
    deps.track?.(handling);
    return handling;
  });
  return router;

  async function serve(req: Request, res: Response): Promise<void> {
    const ended = res.locals.ended as AbortSignal;
    const verdict = verifyDownloadToken(String(req.params.token), deps.tokenSecret, new Date());
    if (!verdict.ok) {
      throw new ApiError(verdict.code, verdict.code === 'EXPIRED_TOKEN' ? 'download link has expired' : 'download link is not valid');
    }
    const bin = await binForDownload(deps.db, verdict.zipId);
    // The job was deleted (or retried from scratch): its links are gone, not invalid.
    if (!bin) throw new ApiError('NOT_FOUND', 'this ZIP no longer exists');
    if (bin.job.expiresAt <= new Date() || bin.job.purgedAt) throw new ApiError('EXPIRED_TOKEN', 'download link has expired');
    if (bin.job.status !== 'completed' || bin.status !== 'completed') throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');

    let zip: ServableZip;
    if (bin.job.mode === 'stream') {
      if (!deps.plannedZip) throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');
      // Checked before any byte: one more download than the cap is refused, not queued.
      if (req.method !== 'HEAD' && deps.streamSlots) {
        const slot = await deps.streamSlots.take(bin.job.user.id);
        if (!slot) {
          throw new ApiError('RATE_LIMITED', 'too many stream downloads of this account are running; retry when one has ended').withHeaders({ 'Retry-After': String(STREAM_SLOT_RETRY_AFTER_S) });
        }
        whenAborted(ended, () => slot.release());
      }
      zip = await deps.plannedZip(bin);
    } else {
      zip = storedZip(bin, deps.readObject, deps.log);
    }
    if (ended.aborted) return;

    if (deps.onDownloadEnd) meterDownload(req, res, { zipId: bin.id, jobId: bin.jobId }, deps.onDownloadEnd);
    const answer = answerRange(req, res, { ...zip.head, contentType: ARCHIVE_CONTENT_TYPES[archiveFormatOf(bin.job.format)] });
    if (answer === 'answered') return;
    if (req.method === 'HEAD') return void res.end();
    const body = await zip.open(answer.span, ended);
    await body.writeTo(res);
  }
}
