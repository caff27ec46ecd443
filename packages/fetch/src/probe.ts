/**
 * Probing a file's size: HEAD once; a 2xx with a Content-Length > 0 settles it. Anything else
 * falls to `GET Range: bytes=0-0`, which has the retries (README "Probe"); a range refused
 * without a length (400, or 416 without Content-Range) falls to a plain GET's headers.
 */
import { toFetchError, type ErrorContext } from './classify';
import type { HttpClient } from './client';
import type { FetchError } from './errors';
import { header, parseContentLength, parseContentRange } from './headers';
import { metadata, statusError } from './response';
import type { Retrier } from './retry';
import type { Fetcher, ProbeResult } from './types';

/** Failures the ranged GET would only repeat: they end the probe at the HEAD. */
const FINAL_FOR_URL = new Set<FetchError['kind']>(['blocked', 'protocol', 'invalid-url', 'redirects', 'aborted', 'tls']);

export function createProbe(client: HttpClient, retrier: Retrier, ctx: ErrorContext): Fetcher['probe'] {
  const { attempt, preflight } = client;
  const { withRetries } = retrier;

  async function probe(url: string, probeOptions: { signal?: AbortSignal } = {}): Promise<ProbeResult> {
    const { signal } = probeOptions;
    try {
      preflight(url);
      // HEAD: a single attempt. Whatever goes wrong with it (405, 501, 5xx, connection
      // trouble, no usable length) is settled by the ranged GET, which has the retries; a
      // retryable HEAD failure counts as the first attempt.
      let headFailure: FetchError | undefined;
      try {
        const { stream, response } = await attempt(url, 'HEAD', {}, signal);
        stream.resume(); // no body: lets the socket go back to the pool
        const size = parseContentLength(header(response.headers, 'content-length'));
        // A HEAD claiming 0 bytes is often a dynamic endpoint that does not know; confirm it.
        if (response.statusCode >= 200 && response.statusCode < 300 && size !== undefined && size > 0) {
          return {
            ok: true,
            size,
            finalUrl: response.url,
            acceptRanges: /\bbytes\b/i.test(header(response.headers, 'accept-ranges') ?? ''),
            ...metadata(response),
          };
        }
      } catch (thrown) {
        const error = toFetchError(thrown, ctx);
        // Failures the GET would only repeat end the probe here.
        if (FINAL_FOR_URL.has(error.kind) || (error.kind === 'dns' && !error.retryable)) throw error;
        if (error.retryable) headFailure = error;
      }
      return await withRetries(url, signal, async () => {
        const { stream, response } = await attempt(url, 'GET', { range: 'bytes=0-0' }, signal);
        const status = response.statusCode;
        const common = { ok: true as const, finalUrl: response.url, ...metadata(response) };
        if (status === 206) {
          stream.resume(); // one byte: drain it so the socket is reused
          const range = parseContentRange(header(response.headers, 'content-range'));
          return { ...common, size: range?.total ?? null, acceptRanges: true };
        }
        // Anything else: do not read the body.
        stream.destroy();
        if (status >= 200 && status < 300) {
          // Range ignored: the length of the whole body, which we do not download.
          return { ...common, size: parseContentLength(header(response.headers, 'content-length')) ?? null, acceptRanges: false };
        }
        const range = status === 416 ? parseContentRange(header(response.headers, 'content-range')) : undefined;
        // `bytes=0-0` is unsatisfiable only for an empty resource: `Content-Range: bytes */0`.
        if (range?.total === 0) return { ...common, size: 0, acceptRanges: true };
        // A 416 that does not say the length (empty files on some servers) or a 400 (gateways
        // that refuse ranges): the length comes from a plain GET's headers, its body unread.
        if ((status === 416 && !range) || status === 400) return plainLength(url, signal);
        throw statusError(response);
      }, headFailure);
    } catch (thrown) {
      const error = toFetchError(thrown, ctx);
      error.url ??= url;
      return { ok: false, error: error.userMessage, cause: error };
    }
  }

  async function plainLength(url: string, signal: AbortSignal | undefined): Promise<ProbeResult> {
    const { stream, response } = await attempt(url, 'GET', {}, signal);
    stream.destroy();
    if (response.statusCode < 200 || response.statusCode >= 300) throw statusError(response);
    const size = response.statusCode === 204 ? 0 : (parseContentLength(header(response.headers, 'content-length')) ?? null);
    return { ok: true, finalUrl: response.url, ...metadata(response), size, acceptRanges: false };
  }

  return probe;
}
