/**
 * A body's source: a resource the fetcher has opened once, whose length and validator are
 * known, and any sub-range of which it can stream again. A resume reopens `[received, end)`
 * after a cut; a segment is `[from, to)` on a connection of its own (body.ts concatenates
 * them). Both are ranged GETs carrying the first response's validator, so a changed file is a
 * "changed" error, never spliced bytes.
 */
import type { Readable } from 'node:stream';
import { toFetchError, type ErrorContext } from './classify';
import type { HttpClient } from './client';
import { BodyStream, type BodyStreamOptions } from './body';
import { FetchError } from './errors';
import { header, parseContentLength, parseContentRange } from './headers';
import { metadata, statusError, strongEtag } from './response';
import type { Retrier } from './retry';
import { limitLength, skipTake } from './streams';

/** Where a body is in its resource, and the validators its continuations and segments send. */
export interface BodySource {
  url: string;
  /** The body's first byte in the resource. */
  start: number;
  total: number | null;
  etag?: string;
  lastModified?: string;
  /** The Last-Modified is a strong validator (response.ts `strongLastModified`): sent as a precondition. */
  modifiedStrong?: boolean;
}

export interface SourceReader {
  /** The BodyStream options of this fetcher's retries and timeouts. */
  bodyOptions(size: number | null, signal: AbortSignal | undefined, lengthName: string): BodyStreamOptions;
  /**
   * Body bytes [offset, end) (relative to `source.start`). An origin that answers 200 with the
   * same validator and length has its first bytes skipped, or with `refuseWhole` is answered
   * null (the response dropped).
   */
  openRange(source: BodySource, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: true): Promise<Readable | null>;
  openRange(source: BodySource, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: false): Promise<Readable>;
  /**
   * Body bytes [from, to) on a connection of their own (ranged mode, body.ts): a continuable
   * body of its own, checked like a continuation; null when the origin sent the whole body.
   */
  openSegment(source: BodySource, from: number, to: number, signal: AbortSignal | undefined): Promise<Readable | null>;
}

const noop = (): void => {};

export function createSourceReader(client: HttpClient, retrier: Retrier, ctx: ErrorContext, idleTimeoutMs: number): SourceReader {
  const { attempt } = client;
  const { withRetries, retries, backoff } = retrier;

  function bodyOptions(size: number | null, signal: AbortSignal | undefined, lengthName: string): BodyStreamOptions {
    return {
      size,
      retries,
      backoff: (n: number) => backoff(n, undefined) ?? 0,
      signal,
      lengthName,
      holdLimitMs: Math.max(1, Math.floor(idleTimeoutMs / 2)),
      toError: (error: unknown) => toFetchError(error, ctx),
    };
  }

  async function openSegment(source: BodySource, from: number, to: number, signal: AbortSignal | undefined): Promise<Readable | null> {
    const first = await withRetries(source.url, signal, () => openRange(source, from, to, signal, true));
    if (first === null) return null;
    const segment = new BodyStream(first, {
      ...bodyOptions(to - from, signal, 'the requested range'),
      resume: async (offset, end, resumeSignal) => {
        const next = await openRange(source, from + offset, from + end, resumeSignal, true);
        if (next === null) throw new FetchError('range', 'server stopped honouring ranges', { retryable: false });
        return next;
      },
    });
    segment.on('error', noop);
    return segment;
  }

  async function openRange(source: BodySource, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: true): Promise<Readable | null>;
  async function openRange(source: BodySource, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: false): Promise<Readable>;
  async function openRange(source: BodySource, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: boolean): Promise<Readable | null> {
    const { url } = source;
    const from = source.start + offset;
    const last = source.start + end - 1;
    const headers: Record<string, string> = { range: `bytes=${from}-${last}` };
    // If-Match on a strong ETag, else If-Unmodified-Since on a strong Last-Modified (a changed
    // file: 412), with If-Range where no ETag exists (RFC 9110 13.1.5 allows a date only then).
    // A weak one is only compared with the answer's.
    const etag = strongEtag(source.etag);
    if (etag) headers['if-match'] = etag;
    else if (source.lastModified && source.modifiedStrong) {
      headers['if-unmodified-since'] = source.lastModified;
      if (source.etag === undefined) headers['if-range'] = source.lastModified;
    }
    const { stream, response } = await attempt(url, 'GET', headers, signal);
    try {
      const status = response.statusCode;
      const changed = (why: string) => new FetchError('changed', `file changed while it was fetched (${why})`, { retryable: false, status });
      if (status === 412) throw changed(etag ? 'ETag no longer matches' : 'modified since');
      if (status < 200 || status >= 300) throw statusError(response);
      const meta = metadata(response);
      if (etag && meta.etag !== undefined && meta.etag !== etag) throw changed('ETag differs');
      if (!etag && source.lastModified && meta.lastModified !== undefined && meta.lastModified !== source.lastModified) throw changed('Last-Modified differs');
      const want = last - from + 1;
      const contentLength = parseContentLength(header(response.headers, 'content-length'));
      if (status === 206) {
        const cr = parseContentRange(header(response.headers, 'content-range'));
        if (!cr || cr.start !== from || cr.end !== last) throw new FetchError('range', 'server returned a different range when continuing a body', { retryable: false, status });
        if (source.total !== null && cr.total !== null && cr.total !== source.total) throw changed(`size ${cr.total} bytes, expected ${source.total}`);
        return limitLength(stream, contentLength === undefined ? { length: want, what: 'the requested range' } : undefined);
      }
      // 200: the whole resource again (If-Range fell through, or no range support).
      if (refuseWhole) {
        stream.destroy();
        return null;
      }
      if (source.total === null || (contentLength !== undefined && contentLength !== source.total)) throw changed('the whole body came back with another length');
      const whole = limitLength(stream, contentLength === undefined ? { length: source.total, what: 'declared length' } : undefined);
      return skipTake(whole, from, want);
    } catch (error) {
      stream.destroy();
      throw error;
    }
  }

  return { bodyOptions, openRange, openSegment };
}
