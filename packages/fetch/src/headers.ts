import type { IncomingHttpHeaders } from 'node:http';

export function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** A non-negative integer Content-Length, else undefined. */
export function parseContentLength(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+\s*$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

export interface ContentRange {
  /** Absent for `bytes * /total` (416 answers). */
  start?: number;
  end?: number;
  /** null for `/*` (total unknown). */
  total: number | null;
}

/** `bytes 0-0/1234`, `bytes 0-0/*`, `bytes * /1234`. */
export function parseContentRange(value: string | undefined): ContentRange | undefined {
  if (value === undefined) return undefined;
  const m = /^\s*bytes\s+(?:(\d+)-(\d+)|\*)\/(\d+|\*)\s*$/i.exec(value);
  if (!m) return undefined;
  const total = m[3] === '*' || m[3] === undefined ? null : Number(m[3]);
  if (total !== null && !Number.isSafeInteger(total)) return undefined;
  if (m[1] === undefined || m[2] === undefined) return { total };
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end < start) return undefined;
  if (total !== null && end >= total) return undefined;
  return { start, end, total };
}

/** Retry-After as delay in ms (delta-seconds or HTTP-date), else undefined. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}
