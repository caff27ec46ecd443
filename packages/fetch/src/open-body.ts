/**
 * Opening a body: one ranged or whole GET (with retries until its headers are accepted), its
 * status, range and lengths checked against what was asked and probed, handed out as a
 * BodyStream that a cut resumes and ranged mode splits into segments (source.ts).
 */
import type { PlainResponse, Request as GotRequest } from 'got';
import { BodyStream } from './body';
import type { HttpClient } from './client';
import { FetchError } from './errors';
import { header, parseContentLength, parseContentRange } from './headers';
import { changedSize, metadata, statusError, strongEtag, strongLastModified } from './response';
import type { Retrier } from './retry';
import type { BodySource, SourceReader } from './source';
import { limitLength, type LengthLimit } from './streams';
import type { Fetcher, OpenBodyOptions, OpenedBody } from './types';

const noop = (): void => {};

const rangeRefused = (response: PlainResponse): boolean =>
  response.statusCode === 400 || (response.statusCode === 416 && header(response.headers, 'content-range') === undefined);

export function createOpenBody(client: HttpClient, retrier: Retrier, sources: SourceReader): Fetcher['openBody'] {
  const { attempt, preflight } = client;
  const { withRetries } = retrier;

  async function openBody(url: string, bodyOptions: OpenBodyOptions = {}): Promise<OpenedBody> {
    const { range, expectedSize, ifMatch, signal } = bodyOptions;
    const headers: Record<string, string> = {};
    if (range) {
      if (!Number.isSafeInteger(range.start) || !Number.isSafeInteger(range.end) || range.start < 0 || range.end < range.start) {
        throw new TypeError(`invalid range ${range.start}-${range.end}`);
      }
      headers.range = `bytes=${range.start}-${range.end}`;
    }
    // If-Match uses strong comparison: a weak ETag would never match, so it is not sent.
    const ifMatchStrong = strongEtag(ifMatch);
    if (ifMatchStrong !== undefined) headers['if-match'] = ifMatchStrong;

    try {
      preflight(url);
    } catch (error) {
      (error as FetchError).url = url;
      throw error;
    }
    return withRetries(url, signal, async (attemptNo) => {
      let { stream, response } = await attempt(url, 'GET', headers, signal);
      if (range && rangeRefused(response)) {
        // A gateway that refuses ranges (400, or 416 without Content-Range): the whole body,
        // which the caller skips into (rangeHonoured false).
        stream.destroy();
        const plain = { ...headers };
        delete plain.range;
        ({ stream, response } = await attempt(url, 'GET', plain, signal));
      }
      try {
        return accept(stream, response, attemptNo);
      } catch (error) {
        stream.destroy();
        throw error;
      }
    });

    function accept(stream: GotRequest, response: PlainResponse, attempts: number): OpenedBody {
      const status = response.statusCode;
      const contentLength = parseContentLength(header(response.headers, 'content-length'));
      if (status === 412 && headers['if-match'] !== undefined) {
        throw new FetchError('changed', 'file changed since it was probed (ETag no longer matches)', { retryable: false, status });
      }
      if (status < 200 || status >= 300) throw statusError(response);

      let size: number | null;
      let totalSize: number | null;
      let rangeHonoured = true;
      let enforce: LengthLimit | undefined;
      if (status === 206) {
        if (!range) throw new FetchError('range', 'unexpected partial response (HTTP 206)', { retryable: false, status });
        const cr = parseContentRange(header(response.headers, 'content-range'));
        if (!cr || cr.start !== range.start || cr.end !== range.end) {
          throw new FetchError('range', `server returned a different range (${header(response.headers, 'content-range') ?? 'none'} for ${headers.range})`, {
            retryable: false,
            status,
          });
        }
        size = range.end - range.start + 1;
        totalSize = cr.total;
        if (contentLength !== undefined && contentLength !== size) {
          throw new FetchError('length', `declared length ${contentLength} does not match the requested range (${size} bytes)`, { retryable: false, status });
        }
        if (expectedSize !== undefined && totalSize !== null && totalSize !== expectedSize) throw changedSize(expectedSize, totalSize);
        if (contentLength === undefined) enforce = { length: size, what: 'the requested range' };
      } else {
        rangeHonoured = range === undefined;
        size = status === 204 || status === 205 ? 0 : (contentLength ?? null);
        if (expectedSize !== undefined && size !== null && size !== expectedSize) throw changedSize(expectedSize, size);
        if (size === null && expectedSize !== undefined) {
          size = expectedSize;
          enforce = { length: expectedSize, what: 'expected size' };
        }
        totalSize = size;
      }

      const meta = metadata(response);
      // A body cut midway is continued from its last byte (body.ts, source.ts): for a whole 200 or an
      // honoured range, whose bytes and validator are known.
      const first = status === 206 ? range!.start : 0;
      const canResume = size !== null && size > 0 && (status === 206 || (status === 200 && range === undefined));
      const validator = { etag: meta.etag ?? ifMatchStrong, lastModified: meta.lastModified };
      const modifiedStrong = strongLastModified(meta.lastModified, header(response.headers, 'date')) !== undefined;
      const source: BodySource = { url, start: first, total: totalSize, ...validator, modifiedStrong };
      // Several ranges at once need an origin that says it serves them, and a strong validator
      // that tells a changed file from the same one on every segment: a strong ETag, or a
      // Last-Modified a minute or more before the response's Date (docs/engine.md#fetching-ahead).
      const validated = strongEtag(validator.etag) !== undefined || modifiedStrong;
      const rangeable = canResume && validated && totalSize !== null && (status === 206 || /\bbytes\b/i.test(header(response.headers, 'accept-ranges') ?? ''));
      const body = new BodyStream(limitLength(stream, enforce), {
        ...sources.bodyOptions(size, signal, enforce?.what ?? (status === 206 ? 'the requested range' : 'declared length')),
        ...(canResume ? { resume: (offset: number, end: number, resumeSignal: AbortSignal | undefined) => sources.openRange(source, offset, end, resumeSignal, false) } : {}),
        ...(rangeable ? { segment: (from: number, to: number, segmentSignal: AbortSignal | undefined) => sources.openSegment(source, from, to, segmentSignal) } : {}),
      });
      body.on('error', noop); // same contract as the got stream: kept for pipeline()
      return { stream: body, status, size, totalSize, rangeHonoured, finalUrl: response.url, attempts, ...meta };
    }
  }

  return openBody;
}
