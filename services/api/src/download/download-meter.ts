// What a download response actually delivered, for download.completed (docs/webhooks.md#webhooks): body bytes handed to the connection, the range served, and whether the ZIP's
// last byte went out. Measured on the response itself, so stored and stream downloads are
// metered alike; reported only after the response has ended, never in its way.
import type { Request, Response } from 'express';

export interface DownloadEnd {
  zipId: string;
  jobId: string;
  bytesSent: number;
  /** The range served (206); null when the whole ZIP was asked for (200). */
  range: { start: number; end: number } | null;
  complete: boolean;
}

const CONTENT_RANGE = /^bytes (\d+)-(\d+)\/(\d+)$/;

export function meterDownload(req: Request, res: Response, zip: { zipId: string; jobId: string }, report: (end: DownloadEnd) => void): void {
  if (req.method !== 'GET') return;
  let written = 0;
  const write = res.write;
  const end = res.end;
  const count = (chunk: unknown) => {
    if (typeof chunk === 'string') written += Buffer.byteLength(chunk);
    else if (chunk instanceof Uint8Array) written += chunk.length;
  };
  res.write = function (this: Response, chunk: unknown, ...rest: unknown[]) {
    count(chunk);
    return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
  } as Response['write'];
  res.end = function (this: Response, chunk?: unknown, ...rest: unknown[]) {
    if (typeof chunk !== 'function') count(chunk);
    return (end as (...args: unknown[]) => Response).call(this, chunk, ...rest);
  } as Response['end'];

  res.once('close', () => {
    // Only responses that carried the ZIP (not 304, 416 or an error envelope).
    if (res.statusCode !== 200 && res.statusCode !== 206) return;
    // Bytes still queued when the connection went away never reached the client.
    const unsent = res.writableFinished ? 0 : res.writableLength + (res.socket?.writableLength ?? 0);
    const bytesSent = Math.max(0, written - unsent);
    let range: DownloadEnd['range'] = null;
    let size: number | null = null;
    const contentRange = CONTENT_RANGE.exec(String(res.getHeader('content-range') ?? ''));
    if (res.statusCode === 206 && contentRange) {
      range = { start: Number(contentRange[1]), end: Number(contentRange[2]) };
      size = Number(contentRange[3]);
    } else if (res.statusCode === 200 && res.getHeader('content-length') !== undefined) {
      size = Number(res.getHeader('content-length'));
    }
    const start = range?.start ?? 0;
    // The last byte went out: the span reached the ZIP's end and all of it was sent (a chunked
    // ZIP of unknown size: the response finished cleanly).
    const complete = size === null ? res.writableFinished : (range?.end ?? size - 1) === size - 1 && bytesSent === size - start;
    setImmediate(() => report({ ...zip, bytesSent, range, complete }));
  });
}
