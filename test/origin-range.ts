// The byte-range answer of the test and bench origins (single ranges, suffix ranges).
import type { IncomingMessage, ServerResponse } from 'node:http';

export type OriginRange = { status: 200; start: number; end: number } | { status: 206; start: number; end: number; contentRange: string } | { status: 416; contentRange: string };

/** Which bytes [start, end) an origin sends for this Range header. */
export function originRange(header: string | undefined, size: number): OriginRange {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header ?? '');
  if (!m || (!m[1] && !m[2])) return { status: 200, start: 0, end: size };
  const start = m[1] ? Number(m[1]) : Math.max(0, size - Number(m[2]));
  const end = m[1] && m[2] ? Math.min(size, Number(m[2]) + 1) : size;
  if (start >= size || start >= end) return { status: 416, contentRange: `bytes */${size}` };
  return { status: 206, start, end, contentRange: `bytes ${start}-${end - 1}/${size}` };
}

/** An origin's validators: an ETag (a string alone), a Last-Modified, or none of them. */
export type OriginValidators = string | { etag?: string; lastModified?: string };

/**
 * Writes an origin's response head for a body of `size` bytes: 200 or 206 with its length,
 * or a complete 416. Returns the bytes [start, end) to send, or null after a 416.
 */
export function writeOriginHead(req: IncomingMessage, res: ServerResponse, size: number, validators: OriginValidators): { start: number; end: number } | null {
  const { etag, lastModified } = typeof validators === 'string' ? { etag: validators, lastModified: undefined } : validators;
  const headers: Record<string, string> = { 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' };
  if (etag !== undefined) headers.etag = etag;
  if (lastModified !== undefined) headers['last-modified'] = lastModified;
  const range = originRange(req.headers.range, size);
  if (range.status === 416) {
    res.writeHead(416, { 'content-range': range.contentRange }).end();
    return null;
  }
  if (range.status === 206) headers['content-range'] = range.contentRange;
  headers['content-length'] = String(range.end - range.start);
  res.writeHead(range.status, headers);
  return { start: range.start, end: range.end };
}
