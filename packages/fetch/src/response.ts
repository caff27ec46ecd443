/** What the fetch layer reads off a response's headers. */
import type { PlainResponse } from 'got';
import { httpError } from './classify';
import { FetchError } from './errors';
import { header, parseRetryAfter } from './headers';
import type { ProbeOk } from './types';

export type ResponseMetadata = Pick<ProbeOk, 'etag' | 'lastModified' | 'contentDisposition' | 'contentType'>;

export function metadata(response: PlainResponse): ResponseMetadata {
  const out: ResponseMetadata = {};
  const etag = header(response.headers, 'etag');
  const lastModified = header(response.headers, 'last-modified');
  const contentDisposition = header(response.headers, 'content-disposition');
  const contentType = header(response.headers, 'content-type');
  if (etag !== undefined) out.etag = etag;
  if (lastModified !== undefined) out.lastModified = lastModified;
  if (contentDisposition !== undefined) out.contentDisposition = contentDisposition;
  if (contentType !== undefined) out.contentType = contentType;
  return out;
}

/** A non-success status as a FetchError (with the server's Retry-After). */
export function statusError(response: PlainResponse): FetchError {
  return httpError(response.statusCode, response.statusMessage, parseRetryAfter(header(response.headers, 'retry-after')));
}

export function changedSize(expected: number, actual: number): FetchError {
  return new FetchError('changed', `file changed since it was probed (size ${actual} bytes, expected ${expected})`, { retryable: false });
}

/**
 * A Last-Modified that is a strong validator (RFC 9110 8.8.2.2): at least 60 s before the
 * response's Date, so no change within its second can hide behind it. Undefined when weak.
 */
export function strongLastModified(lastModified: string | undefined, date: string | undefined): string | undefined {
  if (lastModified === undefined || date === undefined) return undefined;
  const modified = Date.parse(lastModified);
  const sent = Date.parse(date);
  return Number.isFinite(modified) && Number.isFinite(sent) && sent - modified >= 60_000 ? lastModified : undefined;
}

/** The strong ETag to send as If-Match: weak ones never match under its strong comparison. */
export function strongEtag(etag: string | undefined): string | undefined {
  return etag !== undefined && !etag.startsWith('W/') ? etag : undefined;
}
