// The HTTP of a download, stored and stream alike: the head (type, disposition, validators),
// conditional and range requests (RFC 9110), and the response's end as a signal.
import type { Request, Response } from 'express';
import { errorEnvelope } from '@ap/contract';

/** Bytes [start, end] of a ZIP, inclusive as HTTP ranges are. */
export interface ByteSpan {
  start: number;
  end: number;
}

/** What a download's head says of its ZIP. */
export interface ZipHead {
  filename: string;
  /** Exact size; null when a file's size is unknown (no validators, no ranges: a chunked 200). */
  size: number | null;
  /** Strong ETag, quoted. */
  etag: string | null;
  lastModified: Date | null;
  /** The archive's Content-Type (per format); default application/zip. */
  contentType?: string;
}

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
  // A date matches only the exact Last-Modified sent (to the second, as HTTP dates go), never a later one.
  return !Number.isNaN(date) && Math.floor(lastModified.getTime() / 1000) * 1000 === date;
}

/**
 * Resolves the single byte range to serve, or null for the whole body. Multiple ranges are
 * answered with the whole body (allowed by RFC 9110), unsatisfiable ones with 416.
 */
export function resolveRange(req: Request, size: number, etag: string, lastModified: Date): ByteSpan | 'unsatisfiable' | null {
  if (!req.get('range') || !ifRangeMatches(req, etag, lastModified)) return null;
  const ranges = req.range(size, { combine: true });
  if (ranges === -2 || ranges === undefined) return null; // malformed: ignore, as RFC 9110 says
  if (ranges === -1) return 'unsatisfiable';
  if (ranges.type !== 'bytes' || ranges.length !== 1) return null;
  return { start: ranges[0]!.start, end: ranges[0]!.end };
}

/**
 * Sets the head every download answers with, and the status, Content-Range and Content-Length
 * of the range asked for. Returns the span to send (null: the whole ZIP of unknown size), or
 * 'answered' when the response (416, 304) is already complete.
 */
export function answerRange(req: Request, res: Response, zip: ZipHead): { span: ByteSpan | null } | 'answered' {
  res.set({ 'Content-Type': zip.contentType ?? 'application/zip', 'Content-Disposition': contentDisposition(zip.filename), 'Cache-Control': 'private, no-transform' });
  const { size, etag, lastModified } = zip;
  if (size === null || etag === null || lastModified === null) {
    res.status(200);
    return { span: null };
  }
  res.set({ 'Accept-Ranges': 'bytes', ETag: etag, 'Last-Modified': lastModified.toUTCString() });
  const range = resolveRange(req, size, etag, lastModified);
  if (range === 'unsatisfiable') {
    // The error is JSON, not a ZIP attachment (the head above was set for the ZIP).
    res.removeHeader('Content-Disposition');
    res
      .status(416)
      .set('Content-Range', `bytes */${size}`)
      .type('application/json')
      .json(errorEnvelope('INVALID_REQUEST', `requested range not satisfiable (size ${size})`));
    return 'answered';
  }
  if (req.fresh && !range) {
    res.status(304).end();
    return 'answered';
  }
  if (range) {
    res.status(206).set({ 'Content-Range': `bytes ${range.start}-${range.end}/${size}`, 'Content-Length': String(range.end - range.start + 1) });
    return { span: range };
  }
  res.status(200).set('Content-Length', String(size));
  return { span: { start: 0, end: size - 1 } };
}

/** Aborted when the response has ended, however (sent, failed or the client gone). Listen before any await. */
export function responseEnded(res: Response): AbortSignal {
  const ended = new AbortController();
  res.once('close', () => ended.abort(new Error('client went away')));
  return ended.signal;
}

/** Runs `fn` once `signal` aborts, at once when it already has. */
export function whenAborted(signal: AbortSignal, fn: () => void): void {
  if (signal.aborted) fn();
  else signal.addEventListener('abort', fn, { once: true });
}
