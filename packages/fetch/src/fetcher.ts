/**
 * The fetch layer: probing sizes, streaming bodies (whole or ranged), with the SSRF guard,
 * bounded redirects, timeouts and retries of docs/product-rules.md#lifecycle.
 *
 * got does the request logic of one attempt (redirects with cross-origin header stripping,
 * the timeout phases, Content-Length enforcement, keep-alive agents). Retries are our own loop
 * around single attempts (`retry.limit = 0`), not got's stream retry: an attempt only counts
 * as delivered once a response's headers have been accepted, so everything before that point
 * (connection errors, timeouts, 5xx/429) can be retried with a fresh got stream, and the
 * caller only ever sees one coherent pair of (response metadata, body stream). After that
 * point an error surfaces on the stream (the packer decides). got's own stream retry would
 * swap the underlying request inside the same Duplex, and its `retry` event semantics differ
 * between versions; our loop is a few lines and testable.
 *
 * Hot path: the body stream handed out IS got's stream (no extra stage); got enforces a
 * declared Content-Length (`strictContentLength`). A counting Transform is added only in the
 * rare case where a length is expected (range length or `expectedSize`) but the response has
 * no Content-Length (chunked / close-delimited), where nothing else could tell a short body.
 * bench.ts measures this against plain `http.get`.
 *
 * The parts: client.ts (one attempt over got), retry.ts (the loop), classify.ts (errors),
 * probe.ts (sizes), open-body.ts (a body handed out), source.ts (its sub-ranges again),
 * body.ts (the stream that resumes and concatenates them); access.ts and s3-object.ts (files
 * read with their own request headers, or as s3:// objects with a source's credentials).
 */
import { toFetchError, type ErrorContext } from './classify';
import { createHttpClient, type HttpClient } from './client';
import { FetchError } from './errors';
import { createS3Reader } from './s3-object';
import { createOpenBody } from './open-body';
import { createProbe } from './probe';
import { createRetrier } from './retry';
import { createSourceReader } from './source';
import type { Fetcher, FetcherOptions, ProbeFailed } from './types';

export { httpError, toFetchError } from './classify';
export type { ByteRange, Fetcher, FetcherOptions, OpenBodyOptions, OpenedBody, ProbeFailed, ProbeOk, ProbeResult } from './types';

export function createFetcher(options: FetcherOptions): Fetcher {
  const ctx: ErrorContext = { connectTimeoutMs: options.connectTimeoutMs, idleTimeoutMs: options.idleTimeoutMs, maxRedirects: options.maxRedirects ?? 5 };
  const client = createHttpClient(options, ctx);
  const retrier = createRetrier(
    {
      retries: options.retries ?? 3,
      baseDelayMs: options.retryBaseDelayMs ?? 200,
      maxDelayMs: options.retryMaxDelayMs ?? 5_000,
      retryAfterCapMs: options.retryAfterCapMs ?? 30_000,
    },
    ctx,
    (url, signal) => client.hosts.whenRoom(new URL(url).host, signal),
  );
  // A file's reads by how it is accessed (access.ts): as a plain URL, with its own request
  // headers (the same parts over a client that adds them), or as an s3:// object.
  const over = (http: HttpClient) => {
    const sources = createSourceReader(http, retrier, ctx, options.idleTimeoutMs);
    return { probe: createProbe(http, retrier, ctx), openBody: createOpenBody(http, retrier, sources), sources };
  };
  const plain = over(client);
  const withHeaders = (own: Readonly<Record<string, string>>) => over({ ...client, attempt: (url, method, headers, signal) => client.attempt(url, method, headers, signal, own) });
  const s3 = createS3Reader({
    agents: client.agents,
    guard: client.guard,
    connectTimeoutMs: options.connectTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
    bodyOptions: plain.sources.bodyOptions,
    toError: (error) => toFetchError(error, ctx),
    hosts: client.hosts,
    ownStore: options.ownStore,
  });
  return {
    probe: (url, probeOptions = {}) => {
      const { access } = probeOptions;
      if (!access) return plain.probe(url, probeOptions);
      if ('s3' in access) return s3.probe(url, access.s3, probeOptions.signal);
      if ('unavailable' in access) return Promise.resolve(unavailable(url, access.unavailable));
      return withHeaders(access.headers).probe(url, probeOptions);
    },
    openBody: (url, bodyOptions = {}) => {
      const { access } = bodyOptions;
      if (!access) return plain.openBody(url, bodyOptions);
      if ('s3' in access) return s3.openBody(url, access.s3, bodyOptions);
      if ('unavailable' in access) return Promise.reject(unavailable(url, access.unavailable).cause);
      return withHeaders(access.headers).openBody(url, bodyOptions);
    },
    listPrefix: (url, { access, limit, signal, maxPages }) => {
      if (!('s3' in access)) return Promise.resolve(unavailable(url, 'unavailable' in access ? access.unavailable : 'a prefix entry needs a source'));
      return s3.list(url, access.s3, { limit, signal, maxPages });
    },
    hosts: client.hosts,
    spill: options.spill ?? null,
    close: () => {
      client.close();
      s3.close();
    },
  };
}

function unavailable(url: string, why: string): ProbeFailed {
  const cause = new FetchError('other', why, { retryable: false, url });
  return { ok: false, error: why, cause };
}
