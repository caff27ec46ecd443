/**
 * The fetch layer: probing sizes, streaming bodies (whole or ranged), with the SSRF guard,
 * bounded redirects, timeouts and retries of decisions.md.
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
 */
import { STATUS_CODES } from 'node:http';
import { pipeline, Transform, type Readable, type TransformCallback } from 'node:stream';
import got, { MaxRedirectsError, TimeoutError, type Got, type PlainResponse, type Request as GotRequest, type RequestError } from 'got';
import {
  FetchError,
  findFetchError,
  longBodyError,
  shortBodyError,
  timeoutError,
  type TimeoutPhase,
} from './errors';
import { BodyStream } from './body';
import { checkUrl, createGuardedAgents, parseAllowList, type GuardOptions, type LookupFunction } from './guard';
import { header, parseContentLength, parseContentRange, parseRetryAfter } from './headers';
import { accessHeaders, type FileAccess } from './access';
import { createS3Reader } from './s3-object';

export interface FetcherOptions {
  /** Operator's ALLOW_PRIVATE_URLS=true (development and tests only). */
  allowPrivate: boolean;
  /** DNS lookup + TCP connect + TLS handshake, each. */
  connectTimeoutMs: number;
  /** No response headers, or no body data, for this long. */
  idleTimeoutMs: number;
  /** Redirects followed; one more is an error. Default 5. */
  maxRedirects?: number;
  /** Retries after the first attempt. Default 3. */
  retries?: number;
  /** Backoff base: attempt n waits ~base * 2^(n-1), with jitter. Default 200 ms. */
  retryBaseDelayMs?: number;
  /** Cap on one computed backoff. Default 5 s. */
  retryMaxDelayMs?: number;
  /** Longest Retry-After honoured; a longer one makes the error final. Default 30 s. */
  retryAfterCapMs?: number;
  /** dns.lookup-compatible resolver (tests inject one). Its answers are guarded too. */
  lookup?: LookupFunction;
  userAgent: string;
  /** Addresses / CIDRs exempt from the guard (an operator's internal mirror; tests). */
  allowAddresses?: readonly string[];
  /** Per origin, per agent. Default: unlimited (Node's default). */
  maxSockets?: number;
  /** Idle keep-alive sockets are closed after this long. Default 15 s. */
  freeSocketTimeoutMs?: number;
  /** Extra CA certificates (PEM) trusted for https, besides Node's bundled roots. */
  extraCa?: ReadonlyArray<string | Buffer>;
}

export interface ProbeOk {
  ok: true;
  /** Total size in bytes, or null when it cannot be known without downloading. */
  size: number | null;
  /** URL after redirects (credentials stripped). */
  finalUrl: string;
  etag?: string;
  lastModified?: string;
  contentDisposition?: string;
  contentType?: string;
  /** The origin serves byte ranges (206 seen, or `Accept-Ranges: bytes` on HEAD). */
  acceptRanges: boolean;
}

export interface ProbeFailed {
  ok: false;
  /** Short public message (FetchError.userMessage). */
  error: string;
  cause: FetchError;
}

export type ProbeResult = ProbeOk | ProbeFailed;

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface OpenBodyOptions {
  range?: ByteRange;
  /** Total size of the resource as probed; a different size is an error ("changed"). */
  expectedSize?: number;
  /** ETag from the probe; sent as If-Match when strong (a 412 is a "changed" error). */
  ifMatch?: string;
  signal?: AbortSignal;
  /** The file's request headers or source credentials (access.ts). */
  access?: FileAccess;
}

export interface OpenedBody {
  /**
   * The body. Errors (FetchError, or got's AbortError after `signal` fired) are emitted on it;
   * consume it with `stream.pipeline` (or attach an 'error' listener). An error that happens
   * before the consumer attaches is kept (`stream.errored`) and reported by pipeline.
   */
  stream: Readable;
  status: number;
  /** Bytes this stream yields, when known (Content-Length, range length or expectedSize). */
  size: number | null;
  /** Size of the whole resource, when known (Content-Range total, or the 200's length). */
  totalSize: number | null;
  /** False when a range was asked and the server sent the whole resource (200). */
  rangeHonoured: boolean;
  finalUrl: string;
  contentDisposition?: string;
  etag?: string;
  lastModified?: string;
  contentType?: string;
  /** Attempts made (1 = no retry). */
  attempts: number;
}

export interface Fetcher {
  probe(url: string, options?: { signal?: AbortSignal; access?: FileAccess }): Promise<ProbeResult>;
  /** Rejects with a FetchError when no acceptable response could be had (after retries). */
  openBody(url: string, options?: OpenBodyOptions): Promise<OpenedBody>;
  /** Closes the keep-alive sockets. */
  close(): void;
}

/** What a body's continuations and segments are asked with: where it is, and its validators. */
interface BodyPart {
  url: string;
  /** The file's own request headers, sent again with every continuation. */
  extra?: Readonly<Record<string, string>>;
  /** The body's first byte in the resource. */
  start: number;
  total: number | null;
  etag?: string;
  lastModified?: string;
}

interface Attempt {
  stream: GotRequest;
  response: PlainResponse;
}

const noop = (): void => {};

const FINAL_FOR_URL = new Set<FetchError['kind']>(['blocked', 'protocol', 'invalid-url', 'redirects', 'aborted', 'tls']);

export function httpError(status: number, statusMessage?: string, retryAfterMs?: number): FetchError {
  const text = statusMessage?.trim() || STATUS_CODES[status] || '';
  return new FetchError('http', `HTTP ${status}${text ? ` ${text}` : ''}`, {
    retryable: status >= 500 || status === 429,
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

interface ErrorContext {
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  maxRedirects: number;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection reset',
  EPIPE: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  EHOSTDOWN: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network unreachable',
  EAI_AGAIN: 'DNS lookup failed (temporary)',
};

const TLS_MESSAGES: Record<string, string> = {
  CERT_HAS_EXPIRED: 'TLS certificate expired',
  CERT_NOT_YET_VALID: 'TLS certificate not yet valid',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS certificate does not match the host name',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS certificate not trusted (self-signed)',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS certificate not trusted (self-signed)',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS certificate not trusted (unknown issuer)',
  UNABLE_TO_GET_ISSUER_CERT: 'TLS certificate not trusted (unknown issuer)',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'TLS certificate not trusted (unknown issuer)',
};

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

/** Maps anything thrown by got / Node / us to a FetchError. */
export function toFetchError(error: unknown, ctx: ErrorContext, depth = 0): FetchError {
  const own = findFetchError(error);
  if (own) return own;
  if (!(error instanceof Error)) return new FetchError('other', 'request failed', { retryable: false, detail: String(error) });
  const rawCode: unknown = (error as Error & { code?: unknown }).code;
  const code = typeof rawCode === 'string' ? rawCode : '';
  const detail = `${error.message}${code ? ` (${code})` : ''}`;
  const base = { detail, cause: error };

  if (error instanceof TimeoutError) {
    const hasResponse = (error as RequestError).response !== undefined;
    const phase: TimeoutPhase =
      error.event === 'lookup'
        ? 'dns'
        : error.event === 'connect' || error.event === 'secureConnect'
          ? 'connect'
          : error.event === 'request'
            ? 'total'
            : hasResponse && (error.event === 'socket' || error.event === 'read')
              ? 'mid-body'
              : 'no-response';
    const ms = phase === 'dns' || phase === 'connect' ? ctx.connectTimeoutMs : ctx.idleTimeoutMs;
    return timeoutError(ms, phase, error);
  }
  if (error instanceof MaxRedirectsError || code === 'ERR_TOO_MANY_REDIRECTS') {
    return new FetchError('redirects', `too many redirects (more than ${ctx.maxRedirects})`, { retryable: false, ...base });
  }
  if (code === 'ERR_UNSUPPORTED_PROTOCOL' || /Unsupported protocol/i.test(error.message)) {
    const proto = /protocol:?\s*(\S+)/i.exec(error.message)?.[1] ?? 'unknown';
    return new FetchError('protocol', `unsupported protocol ${proto}`, { retryable: false, ...base });
  }
  if (code === 'ERR_HTTP_CONTENT_LENGTH_MISMATCH') {
    const m = /expected (\d+) bytes, received (\d+) bytes/.exec(error.message);
    const expected = Number(m?.[1] ?? NaN);
    const received = Number(m?.[2] ?? NaN);
    const e = received > expected ? longBodyError(expected, 'declared length', received) : shortBodyError(received, expected);
    return new FetchError('length', e.userMessage, { retryable: true, ...base });
  }
  if (code === 'ERR_ABORTED' || error.name === 'AbortError') {
    return new FetchError('aborted', 'cancelled', { retryable: false, ...base });
  }
  if (code === 'ENOTFOUND') return new FetchError('dns', 'host not found', { retryable: false, ...base });
  const connection = CONNECTION_ERRORS[code];
  if (connection) {
    const message = code === 'ECONNRESET' && /socket hang up|aborted pending/i.test(error.message) ? 'connection closed by the server' : connection;
    return new FetchError(code === 'EAI_AGAIN' ? 'dns' : 'connection', message, { retryable: true, ...base });
  }
  if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED|EPROTO|ERR_OSSL)/.test(code)) {
    return new FetchError('tls', TLS_MESSAGES[code] ?? 'TLS handshake failed', { retryable: false, ...base });
  }
  if (code.startsWith('HPE_')) return new FetchError('other', 'invalid HTTP response', { retryable: false, ...base });
  if (/UNIX domain sockets/.test(error.message)) return new FetchError('protocol', 'unsupported URL (UNIX socket)', { retryable: false, ...base });
  if (code === 'ERR_INVALID_URL' || (error instanceof TypeError && /Invalid URL/i.test(error.message))) {
    return new FetchError('invalid-url', 'invalid URL', { retryable: false, ...base });
  }
  // got wraps what it does not know in a RequestError (ERR_GOT_REQUEST_ERROR): the wrapped error
  // says what happened.
  if (error.cause instanceof Error && error.cause !== error && depth < 4) {
    const inner = toFetchError(error.cause, ctx, depth + 1);
    if (inner.kind !== 'other' || inner.userMessage !== UNKNOWN_FAILURE) return inner;
  }
  // A user reads this in the job's errors: words, never a bare code (the code is in `detail` for the log).
  return new FetchError('other', UNKNOWN_FAILURE, { retryable: false, ...base });
}

const UNKNOWN_FAILURE = 'request failed (an unexpected error in the HTTP client)';

/** Counts bytes where no Content-Length lets got do it: errors on too few or too many. */
class LengthCheck extends Transform {
  private seen = 0;
  constructor(
    private readonly expected: number,
    private readonly what: string,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.expected) callback(longBodyError(this.expected, this.what));
    else callback(null, chunk);
  }
  override _flush(callback: TransformCallback): void {
    if (this.seen < this.expected) callback(shortBodyError(this.seen, this.expected, this.what));
    else callback();
  }
}

/** Drops `skip` bytes, then passes `take` bytes. */
function skipTake(source: Readable, skip: number, take: number): Readable {
  let pos = 0;
  const out = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const a = Math.max(0, skip - pos);
      const b = Math.min(chunk.length, skip + take - pos);
      pos += chunk.length;
      callback(null, b > a ? chunk.subarray(a, b) : undefined);
    },
  });
  out.on('error', noop);
  pipeline(source, out, noop);
  return out;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new FetchError('aborted', 'cancelled', { retryable: false }));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new FetchError('aborted', 'cancelled', { retryable: false }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function metadata(response: PlainResponse): Pick<ProbeOk, 'etag' | 'lastModified' | 'contentDisposition' | 'contentType'> {
  const out: Pick<ProbeOk, 'etag' | 'lastModified' | 'contentDisposition' | 'contentType'> = {};
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

function changedSize(expected: number, actual: number): FetchError {
  return new FetchError('changed', `file changed since it was probed (size ${actual} bytes, expected ${expected})`, { retryable: false });
}

export function createFetcher(options: FetcherOptions): Fetcher {
  const maxRedirects = options.maxRedirects ?? 5;
  const retries = options.retries ?? 3;
  const baseDelay = options.retryBaseDelayMs ?? 200;
  const maxDelay = options.retryMaxDelayMs ?? 5_000;
  const retryAfterCap = options.retryAfterCapMs ?? 30_000;
  const ctx: ErrorContext = { connectTimeoutMs: options.connectTimeoutMs, idleTimeoutMs: options.idleTimeoutMs, maxRedirects };
  const guard: GuardOptions = { allowPrivate: options.allowPrivate, allowList: parseAllowList(options.allowAddresses) };
  const agents = createGuardedAgents({
    guard,
    lookup: options.lookup,
    freeSocketTimeoutMs: options.freeSocketTimeoutMs,
    maxSockets: options.maxSockets,
    extraCa: options.extraCa,
  });

  const client: Got = got.extend({
    agent: { http: agents.http, https: agents.https },
    http2: false,
    decompress: false, // the archive stores the bytes as served
    throwHttpErrors: false, // statuses are ours to judge; got would buffer error bodies
    retry: { limit: 0 }, // see the header comment
    followRedirect: true,
    maxRedirects,
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

  /** One got request, settled at its final response's headers (after redirects). */
  function attempt(url: string, method: 'GET' | 'HEAD', ours: Record<string, string>, signal: AbortSignal | undefined, extra?: Readonly<Record<string, string>>): Promise<Attempt> {
    return new Promise<Attempt>((resolve, reject) => {
      const link = signal ? linkSignal(signal) : undefined;
      const headers = extra ? { ...lowerKeys(extra), ...ours } : ours;
      const context = extra ? { origin: new URL(url).origin, ownHeaders: Object.keys(lowerKeys(extra)) } : {};
      const stream = client.stream(url, { method, headers, context, ...(link ? { signal: link.signal } : {}) });
      if (link) for (const event of ['end', 'close', 'error']) stream.once(event, link.release);
      // Keeps a late error from crashing the process before the consumer attaches its own
      // listener; the error stays on `stream.errored` for pipeline() to report.
      stream.on('error', noop);
      const onError = (error: unknown): void => {
        stream.off('response', onResponse);
        reject(toFetchError(error, ctx));
      };
      const onResponse = (response: PlainResponse): void => {
        stream.off('error', onError);
        resolve({ stream, response });
      };
      stream.once('error', onError);
      stream.once('response', onResponse);
    });
  }

  function backoff(attemptNo: number, retryAfterMs: number | undefined): number | undefined {
    const exp = Math.min(maxDelay, baseDelay * 2 ** (attemptNo - 1));
    const jittered = exp / 2 + (Math.random() * exp) / 2;
    if (retryAfterMs === undefined) return jittered;
    if (retryAfterMs > retryAfterCap) return undefined;
    return Math.max(jittered, retryAfterMs);
  }

  /**
   * Runs `op` until it succeeds, a final error, or `retries` retries. `prior` is a retryable
   * failure that already counts as attempt 1 (the probe's HEAD), so a dead host costs at most
   * 1 + retries attempts whatever the method.
   */
  async function withRetries<T>(url: string, signal: AbortSignal | undefined, op: (attemptNo: number) => Promise<T>, prior?: FetchError): Promise<T> {
    let attemptNo = 1;
    let error = prior;
    for (;;) {
      if (error) {
        error.attempts = attemptNo;
        error.url ??= url;
        const delay = error.retryable && attemptNo <= retries && !signal?.aborted ? backoff(attemptNo, error.retryAfterMs) : undefined;
        if (delay === undefined) throw error;
        await sleep(delay, signal);
        attemptNo++;
      }
      try {
        return await op(attemptNo);
      } catch (thrown) {
        error = toFetchError(thrown, ctx);
      }
    }
  }

  function statusError(response: PlainResponse): FetchError {
    return httpError(response.statusCode, response.statusMessage, parseRetryAfter(header(response.headers, 'retry-after')));
  }

  async function probe(url: string, probeOptions: { signal?: AbortSignal; access?: FileAccess } = {}): Promise<ProbeResult> {
    const { signal, access } = probeOptions;
    if (access && 's3' in access) return s3.probe(url, access.s3, signal);
    const extra = accessHeaders(access);
    try {
      if (access && 'unavailable' in access) throw new FetchError('other', access.unavailable, { retryable: false });
      preflight(url);
      // HEAD: a single attempt. Whatever goes wrong with it (405, 501, 5xx, connection
      // trouble, no usable length) is settled by the ranged GET, which has the retries; a
      // retryable HEAD failure counts as the first attempt.
      let headFailure: FetchError | undefined;
      try {
        const { stream, response } = await attempt(url, 'HEAD', {}, signal, extra);
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
        const { stream, response } = await attempt(url, 'GET', { range: 'bytes=0-0' }, signal, extra);
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
        if (status === 416) {
          // `bytes=0-0` is unsatisfiable only for an empty resource: `Content-Range: bytes */0`.
          const range = parseContentRange(header(response.headers, 'content-range'));
          if (range?.total === 0) return { ...common, size: 0, acceptRanges: true };
        }
        throw statusError(response);
      }, headFailure);
    } catch (thrown) {
      const error = toFetchError(thrown, ctx);
      error.url ??= url;
      return { ok: false, error: error.userMessage, cause: error };
    }
  }

  async function openBody(url: string, bodyOptions: OpenBodyOptions = {}): Promise<OpenedBody> {
    const { range, expectedSize, ifMatch, signal, access } = bodyOptions;
    if (access && 's3' in access) return s3.openBody(url, access.s3, bodyOptions);
    if (access && 'unavailable' in access) throw new FetchError('other', access.unavailable, { retryable: false, url });
    const extra = accessHeaders(access);
    const headers: Record<string, string> = {};
    if (range) {
      if (!Number.isSafeInteger(range.start) || !Number.isSafeInteger(range.end) || range.start < 0 || range.end < range.start) {
        throw new TypeError(`invalid range ${range.start}-${range.end}`);
      }
      headers.range = `bytes=${range.start}-${range.end}`;
    }
    // If-Match uses strong comparison: a weak ETag would never match, so it is not sent.
    if (ifMatch !== undefined && !ifMatch.startsWith('W/')) headers['if-match'] = ifMatch;

    try {
      preflight(url);
    } catch (error) {
      (error as FetchError).url = url;
      throw error;
    }
    return withRetries(url, signal, async (attemptNo) => {
      const { stream, response } = await attempt(url, 'GET', headers, signal, extra);
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
      let enforce: { length: number; what: string } | undefined;
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
      // A body cut midway is continued from its last byte (body.ts): for a whole 200 or an
      // honoured range, whose bytes and validator are known.
      const first = status === 206 ? range!.start : 0;
      const canResume = size !== null && size > 0 && (status === 206 || (status === 200 && range === undefined));
      const validator = { etag: meta.etag ?? (ifMatch !== undefined && !ifMatch.startsWith('W/') ? ifMatch : undefined), lastModified: meta.lastModified };
      const part: BodyPart = { url, start: first, total: totalSize, ...validator, ...(extra ? { extra } : {}) };
      // Several ranges at once need an origin that says it serves them, and a validator that
      // tells a changed file from the same one on every segment.
      const validated = (validator.etag !== undefined && !validator.etag.startsWith('W/')) || validator.lastModified !== undefined;
      const rangeable = canResume && validated && totalSize !== null && (status === 206 || /\bbytes\b/i.test(header(response.headers, 'accept-ranges') ?? ''));
      const body = new BodyStream(limitLength(stream, enforce), {
        ...bodyStreamOptions(size, signal, enforce?.what ?? (status === 206 ? 'the requested range' : 'declared length')),
        ...(canResume ? { resume: (offset: number, end: number, resumeSignal: AbortSignal | undefined) => continueBody(part, offset, end, resumeSignal, false) } : {}),
        ...(rangeable ? { segment: (from: number, to: number, segmentSignal: AbortSignal | undefined) => openSegment(part, from, to, segmentSignal) } : {}),
      });
      body.on('error', noop); // same contract as the got stream: kept for pipeline()
      return { stream: body, status, size, totalSize, rangeHonoured, finalUrl: response.url, attempts, ...meta };
    }
  }

  /** Counts bytes where no Content-Length lets got do it (see LengthCheck). */
  function limitLength(stream: Readable, enforce: { length: number; what: string } | undefined): Readable {
    if (!enforce) return stream;
    const check = new LengthCheck(enforce.length, enforce.what);
    check.on('error', noop);
    pipeline(stream, check, noop);
    return check;
  }

  function bodyStreamOptions(size: number | null, signal: AbortSignal | undefined, lengthName: string) {
    return {
      size,
      retries,
      backoff: (n: number) => backoff(n, undefined) ?? 0,
      signal,
      lengthName,
      holdLimitMs: Math.max(1, Math.floor(options.idleTimeoutMs / 2)),
      toError: (error: unknown) => toFetchError(error, ctx),
    };
  }

  /**
   * Body bytes [from, to) on a connection of their own (ranged mode, body.ts): a continuable
   * body of its own, checked like a continuation; null when the origin sent the whole body.
   */
  async function openSegment(part: BodyPart, from: number, to: number, signal: AbortSignal | undefined): Promise<Readable | null> {
    const first = await withRetries(part.url, signal, () => continueBody(part, from, to, signal, true));
    if (first === null) return null;
    const segment = new BodyStream(first, {
      ...bodyStreamOptions(to - from, signal, 'the requested range'),
      resume: async (offset, end, resumeSignal) => {
        const next = await continueBody(part, from + offset, from + end, resumeSignal, true);
        if (next === null) throw new FetchError('range', 'server stopped honouring ranges', { retryable: false });
        return next;
      },
    });
    segment.on('error', noop);
    return segment;
  }

  /**
   * Body bytes [offset, end) (relative to `part.start`): a ranged GET with the validator the
   * first response carried (If-Match on a strong ETag, else If-Range on Last-Modified), so a
   * changed object is a "changed" error, never spliced bytes. An origin that answers 200 with
   * the same validator and length has its first bytes skipped, or with `refuseWhole` is
   * answered null (the response dropped).
   */
  async function continueBody(part: BodyPart, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: true): Promise<Readable | null>;
  async function continueBody(part: BodyPart, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: false): Promise<Readable>;
  async function continueBody(part: BodyPart, offset: number, end: number, signal: AbortSignal | undefined, refuseWhole: boolean): Promise<Readable | null> {
    const { url } = part;
    const from = part.start + offset;
    const last = part.start + end - 1;
    const headers: Record<string, string> = { range: `bytes=${from}-${last}` };
    const strongEtag = part.etag !== undefined && !part.etag.startsWith('W/') ? part.etag : undefined;
    if (strongEtag) headers['if-match'] = strongEtag;
    else if (part.lastModified) headers['if-range'] = part.lastModified;
    const { stream, response } = await attempt(url, 'GET', headers, signal, part.extra);
    try {
      const status = response.statusCode;
      const changed = (why: string) => new FetchError('changed', `file changed while it was fetched (${why})`, { retryable: false, status });
      if (status === 412) throw changed('ETag no longer matches');
      if (status < 200 || status >= 300) throw statusError(response);
      const meta = metadata(response);
      if (strongEtag && meta.etag !== undefined && meta.etag !== strongEtag) throw changed('ETag differs');
      if (!strongEtag && part.lastModified && meta.lastModified !== undefined && meta.lastModified !== part.lastModified) throw changed('Last-Modified differs');
      const want = last - from + 1;
      const contentLength = parseContentLength(header(response.headers, 'content-length'));
      if (status === 206) {
        const cr = parseContentRange(header(response.headers, 'content-range'));
        if (!cr || cr.start !== from || cr.end !== last) throw new FetchError('range', 'server returned a different range when continuing a body', { retryable: false, status });
        if (part.total !== null && cr.total !== null && cr.total !== part.total) throw changed(`size ${cr.total} bytes, expected ${part.total}`);
        return limitLength(stream, contentLength === undefined ? { length: want, what: 'the requested range' } : undefined);
      }
      // 200: the whole resource again (If-Range fell through, or no range support).
      if (refuseWhole) {
        stream.destroy();
        return null;
      }
      if (part.total === null || (contentLength !== undefined && contentLength !== part.total)) throw changed('the whole body came back with another length');
      const whole = limitLength(stream, contentLength === undefined ? { length: part.total, what: 'declared length' } : undefined);
      return skipTake(whole, from, want);
    } catch (error) {
      stream.destroy();
      throw error;
    }
  }

  const s3 = createS3Reader({
    agents,
    guard,
    connectTimeoutMs: options.connectTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs,
    bodyOptions: bodyStreamOptions,
    toError: (error) => toFetchError(error, ctx),
  });

  return {
    probe,
    openBody,
    close() {
      agents.http.destroy();
      agents.https.destroy();
      s3.close();
    },
  };
}

const lowerKeys = (headers: Readonly<Record<string, string>>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
