import { Router, type Request, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, errorEnvelope } from '@ap/contract';
import { binForDownload, type Db } from '@ap/db';
import type { Logger } from '@ap/log';
import type { ObjectStore } from '@ap/storage';
import type { DestinationColumns } from '@ap/jobs';
import { verifyDownloadToken } from '@ap/tokens';
import { meterDownload, type DownloadEnd } from '../http/download-meter';
import type { StreamSlots } from '../http/stream-slots';

export interface DownloadDeps {
  db: Db;
  store: ObjectStore;
  log: Logger;
  tokenSecret: string;
  /** Serves a stream-mode ZIP; absent until stream mode is enabled. */
  serveStream?: (req: Request, res: Response, zipId: string) => Promise<void>;
  /** Told what each download response delivered once it has ended (download.completed). */
  onDownloadEnd?: (end: DownloadEnd) => void;
  /** Stream downloads in flight per user (STREAM_DOWNLOADS_PER_USER). */
  streamSlots?: StreamSlots;
  /** The store of a job's destination bucket, where its ZIPs are (null: `store`). */
  destinationStoreOf?: (job: DestinationColumns) => Promise<ObjectStore | null>;
}

/** When a user at the stream download cap is told to try again (seconds). */
const STREAM_SLOT_RETRY_AFTER_S = 5;

/** RFC 6266 / RFC 5987: an ASCII fallback plus the exact UTF-8 name. */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(filename).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** `If-Range` holds an ETag or a date; the range applies only if it still matches (RFC 9110 13.1.5). */
export function ifRangeMatches(req: Request, etag: string, lastModified: Date): boolean {
  const value = req.get('if-range');
  if (value === undefined) return true;
  if (value.startsWith('"') || value.startsWith('W/')) return value === etag; // weak tags never match
  const date = Date.parse(value);
  return !Number.isNaN(date) && Math.floor(lastModified.getTime() / 1000) * 1000 <= date;
}

/**
 * Resolves the single byte range to serve, or null for the whole body. Multiple ranges are
 * answered with the whole body (allowed by RFC 9110), unsatisfiable ones with 416.
 */
export function resolveRange(req: Request, size: number, etag: string, lastModified: Date): { start: number; end: number } | 'unsatisfiable' | null {
  if (!req.get('range') || !ifRangeMatches(req, etag, lastModified)) return null;
  const ranges = req.range(size, { combine: true });
  if (ranges === -2 || ranges === undefined) return null; // malformed: ignore, as RFC 9110 says
  if (ranges === -1) return 'unsatisfiable';
  if (ranges.type !== 'bytes' || ranges.length !== 1) return null;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}

/**
 * The head every download answers with (stored and stream alike): type, disposition,
 * validators, and the status, Content-Range and Content-Length of the range asked for.
 * Returns the byte span to send, or null when the answer (416, 304) is already complete.
 */
export function answerRange(
  req: Request,
  res: Response,
  meta: { filename: string; size: number; etag: string; lastModified: Date },
): { start: number; end: number; partial: boolean } | null {
  const { size, etag, lastModified } = meta;
  res.set({
    'Content-Type': 'application/zip',
    'Content-Disposition': contentDisposition(meta.filename),
    'Accept-Ranges': 'bytes',
    ETag: etag,
    'Last-Modified': lastModified.toUTCString(),
    'Cache-Control': 'private, no-transform',
  });
  const range = resolveRange(req, size, etag, lastModified);
  if (range === 'unsatisfiable') {
    // The error is JSON, not a ZIP attachment (the head above was set for the ZIP).
    res.removeHeader('Content-Disposition');
    res
      .status(416)
      .set('Content-Range', `bytes */${size}`)
      .type('application/json')
      .json(errorEnvelope('INVALID_REQUEST', `requested range not satisfiable (size ${size})`));
    return null;
  }
  if (req.fresh && !range) {
    res.status(304).end();
    return null;
  }
  if (range) {
    res.status(206).set({ 'Content-Range': `bytes ${range.start}-${range.end}/${size}`, 'Content-Length': String(range.end - range.start + 1) });
    return { ...range, partial: true };
  }
  res.status(200).set('Content-Length', String(size));
  return { start: 0, end: size - 1, partial: false };
}

export function downloadRouter(deps: DownloadDeps): Router {
  const router = Router();
  router.get('/:token', async (req, res) => {
    const verdict = verifyDownloadToken(req.params.token, deps.tokenSecret, new Date());
    if (!verdict.ok) {
      throw new ApiError(verdict.code, verdict.code === 'EXPIRED_TOKEN' ? 'download link has expired' : 'download link is not valid');
    }
    const zip = await binForDownload(deps.db, verdict.zipId);
    if (!zip) throw new ApiError('INVALID_TOKEN', 'download link is not valid');
    if (zip.job.expiresAt <= new Date() || zip.job.purgedAt) throw new ApiError('EXPIRED_TOKEN', 'download link has expired');
    if (zip.job.status !== 'completed' || zip.status !== 'completed') throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');
    if (zip.job.mode === 'stream') {
      if (!deps.serveStream) throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');
      // Checked before any byte: one more download than the cap is refused, not queued.
      const slot = req.method === 'HEAD' || !deps.streamSlots ? null : await deps.streamSlots.take(zip.job.userId);
      if (slot === null && req.method !== 'HEAD' && deps.streamSlots) {
        throw new ApiError('RATE_LIMITED', 'too many stream downloads of this account are running; retry when one has ended').withHeaders({ 'Retry-After': String(STREAM_SLOT_RETRY_AFTER_S) });
      }
      res.once('close', () => slot?.release());
      if (deps.onDownloadEnd) meterDownload(req, res, { zipId: zip.id, jobId: zip.jobId }, deps.onDownloadEnd);
      await deps.serveStream(req, res, zip.id);
      return;
    }
    if (deps.onDownloadEnd) meterDownload(req, res, { zipId: zip.id, jobId: zip.jobId }, deps.onDownloadEnd);
    if (!zip.objectKey || zip.size === null || !zip.etag) throw new ApiError('INVALID_TOKEN', 'this ZIP is not available');

    const range = answerRange(req, res, { filename: zip.filename, size: Number(zip.size), etag: `"${zip.etag}"`, lastModified: zip.completedAt ?? zip.updatedAt });
    if (!range) return;
    const store = (await deps.destinationStoreOf?.(zip.job)) ?? deps.store;
    const object = await store.read(zip.objectKey, range.partial ? range : undefined);
    if (req.method === 'HEAD') {
      object.body.destroy();
      res.end();
      return;
    }
    // A client that goes away aborts the S3 read at once.
    await pipeline(object.body, res).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ERR_STREAM_PREMATURE_CLOSE') deps.log.warn({ err: err.message, zipId: zip.id }, 'download interrupted');
    });
  });
  return router;
}
