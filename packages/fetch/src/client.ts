/**
 * One request attempt over got: the guarded agents, got's settings for a single attempt
 * (`retry.limit = 0`: retries are retry.ts's loop), the URL checks before it and on every
 * redirect, and the promise that settles at the final response's headers.
 */
import got, { type Got, type PlainResponse, type Request as GotRequest } from 'got';
import { toFetchError, type ErrorContext } from './classify';
import { FetchError } from './errors';
import { checkUrl, createGuardedAgents, parseAllowList, type GuardedAgents, type GuardOptions } from './guard';
import { header, parseRetryAfter } from './headers';
import { createH2Transport } from './h2';
import { HostLimits } from './host-limits';
import { DEFAULT_MIN_RATE, watchRate } from './limits';
import { ParkedSockets } from './tls-connect';
import type { FetcherOptions } from './types';

export interface Attempt {
  stream: GotRequest;
  response: PlainResponse;
}

export interface HttpClient {
  /** Parses the URL and applies the guard's URL checks; throws a FetchError. */
  preflight(url: string): URL;
  /**
   * One got request, settled at its final response's headers (after redirects). `own`: the
   * file's own request headers (access.ts), sent to the URL's origin only.
   */
  attempt(url: string, method: 'GET' | 'HEAD', headers: Record<string, string>, signal: AbortSignal | undefined, own?: Readonly<Record<string, string>>): Promise<Attempt>;
  /** The guarded agents and the guard's settings (the S3 reader's requests use them too). */
  agents: GuardedAgents;
  guard: GuardOptions;
  /** Connections per origin host (host-limits.ts), told of every request and how it went. */
  hosts: HostLimits;
  /** Closes the keep-alive sockets. */
  close(): void;
}

const noop = (): void => {};

/**
 * A signal of one request that follows `parent` until released. got removes its 'abort'
 * listener only when a request is destroyed, not when its body ends, so every request given a
 * long-lived signal (a bin's, through many probes and bodies) left a listener on it: a
 * MaxListenersExceededWarning at the 11th. The caller's signal only ever holds one listener
 * per request in flight.
 */
function linkSignal(parent: AbortSignal): { signal: AbortSignal; release: () => void } {
  const controller = new AbortController();
  if (parent.aborted) {
    controller.abort(parent.reason);
    return { signal: controller.signal, release: noop };
  }
  const follow = () => controller.abort(parent.reason);
  parent.addEventListener('abort', follow, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener('abort', follow) };
}

export function createHttpClient(options: FetcherOptions, ctx: ErrorContext): HttpClient {
  const guard: GuardOptions = { allowPrivate: options.allowPrivate, allowList: parseAllowList(options.allowAddresses) };
  const freeSocketTimeoutMs = options.freeSocketTimeoutMs ?? 15_000;
  const parked = new ParkedSockets(options.connectTimeoutMs);
  const agents = createGuardedAgents({
    guard,
    lookup: options.lookup,
    freeSocketTimeoutMs,
    maxSockets: options.maxSockets,
    extraCa: options.extraCa,
    adopt: (host, port) => parked.take(`${host}:${port}`, 'http/1.1'),
  });
  const h2 =
    options.http2 === false
      ? undefined
      : createH2Transport({ guard, lookup: agents.lookup, ca: agents.ca, connectTimeoutMs: options.connectTimeoutMs, parked, idleSessionMs: freeSocketTimeoutMs });

  const hosts = new HostLimits(options.hostConnections ?? 16);

  const client: Got = got.extend({
    agent: { http: agents.http, https: agents.https },
    // h2.ts routes https requests to h2 origins itself; got's own `http2` option would use
    // http2-wrapper's unguarded ALPN connection and drop the idle timeout on streams.
    http2: false,
    ...(h2 ? { request: h2.request } : {}),
    decompress: false, // the archive stores the bytes as served
    throwHttpErrors: false, // statuses are ours to judge; got would buffer error bodies
    retry: { limit: 0 }, // retry.ts retries, see fetcher.ts
    followRedirect: true,
    maxRedirects: ctx.maxRedirects,
    strictContentLength: true,
    cache: false,
    timeout: {
      lookup: options.connectTimeoutMs,
      connect: options.connectTimeoutMs,
      secureConnect: options.connectTimeoutMs,
      response: options.idleTimeoutMs,
      socket: options.idleTimeoutMs,
    },
    headers: { 'user-agent': options.userAgent, 'accept-encoding': 'identity' },
    hooks: {
      beforeRedirect: [
        (next) => {
          const refused = checkUrl(next.url as URL, guard);
          if (refused) throw refused;
          // A file's own headers go to its URL's origin only (as curl and browsers do with Authorization).
          const own = next.context as { origin?: string; ownHeaders?: readonly string[] };
          if (own.ownHeaders && new URL(next.url as URL).origin !== own.origin) {
            for (const name of own.ownHeaders) delete next.headers[name];
          }
        },
      ],
      // Errors emitted on got's stream (also after the body was handed out) become FetchErrors.
      beforeError: [
        (error) => {
          const fetchError = toFetchError(error, ctx);
          const original = error.request?.requestUrl;
          if (fetchError.url === undefined && original) {
            const clean = new URL(original);
            clean.username = '';
            clean.password = '';
            fetchError.url = clean.href;
          }
          return fetchError;
        },
      ],
    },
  });

  function preflight(url: string): URL {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new FetchError('invalid-url', 'invalid URL', { retryable: false, url });
    }
    const refused = checkUrl(parsed, guard);
    if (refused) throw refused;
    return parsed;
  }

  function attempt(url: string, method: 'GET' | 'HEAD', ours: Record<string, string>, signal: AbortSignal | undefined, own?: Readonly<Record<string, string>>): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) => {
      const link = signal ? linkSignal(signal) : undefined;
      const extra = own ? lowerKeys(own) : undefined;
      const headers = extra ? { ...extra, ...ours } : ours;
      const context = extra ? { origin: new URL(url).origin, ownHeaders: Object.keys(extra) } : {};
      const stream = client.stream(url, { method, headers, context, ...(link ? { signal: link.signal } : {}) });
      if (link) for (const event of ['end', 'close', 'error']) stream.once(event, link.release);
      const host = new URL(url).host;
      const ended = hosts.opened(host);
      for (const event of ['end', 'close', 'error']) stream.once(event, ended);
      // Keeps a late error from crashing the process before the consumer attaches its own
      // listener; the error stays on `stream.errored` for pipeline() to report.
      stream.on('error', noop);
      const onError = (error: unknown): void => {
        stream.off('response', onResponse);
        const fetchError = toFetchError(error, ctx);
        if (fetchError.kind === 'connection' || fetchError.kind === 'timeout') hosts.pushedBack(host);
        reject(fetchError);
      };
      const onResponse = (response: PlainResponse): void => {
        stream.off('error', onError);
        const status = response.statusCode;
        if (status === 429 || status === 503) hosts.pushedBack(host, parseRetryAfter(header(response.headers, 'retry-after')));
        else if (status < 500) hosts.succeeded(host);
        if (method === 'GET') watchRate(stream, options.minRate ?? DEFAULT_MIN_RATE);
        resolve({ stream, response });
      };
      stream.once('error', onError);
      stream.once('response', onResponse);
    });
  }

  return {
    preflight,
    attempt,
    agents,
    guard,
    hosts,
    close() {
      agents.http.destroy();
      agents.https.destroy();
      h2?.close();
      parked.close();
    },
  };
}

const lowerKeys = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
