/**
 * FetchError: every failure of this package, with a short public message.
 *
 * `message` is for logs (it may name resolved addresses and internal details);
 * `userMessage` is what users see in the job's `{url, error}` entries.
 */

export type FetchErrorKind =
  | 'blocked' // SSRF guard refused the address or host name
  | 'protocol' // not http: or https:
  | 'invalid-url'
  | 'redirects' // more than maxRedirects
  | 'http' // non-success status (see `status`)
  | 'timeout'
  | 'connection' // refused, reset, unreachable
  | 'dns' // host name did not resolve
  | 'tls'
  | 'length' // body shorter or longer than its declared / expected length
  | 'range' // the server answered a range request with something else than asked
  | 'changed' // the resource changed since it was probed (size, ETag)
  | 'aborted' // cancelled by our caller's AbortSignal
  | 'other';

export interface FetchErrorOptions {
  retryable: boolean;
  /** Detailed message for logs; defaults to the user message. */
  detail?: string;
  status?: number;
  /** Server's Retry-After, in ms, when it sent one (429/503). */
  retryAfterMs?: number;
  url?: string;
  cause?: unknown;
}

export class FetchError extends Error {
  override readonly name = 'FetchError';
  readonly kind: FetchErrorKind;
  /** Short, human-readable, safe to show to the user who submitted the URL. */
  readonly userMessage: string;
  /** The failure is transient (connection, timeout, 5xx, 429...): trying again may succeed. */
  readonly retryable: boolean;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  url: string | undefined;
  /** Number of attempts made before this error was final (set by the retry loop). */
  attempts = 1;

  constructor(kind: FetchErrorKind, userMessage: string, options: FetchErrorOptions) {
    super(options.detail ?? userMessage, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.userMessage = userMessage;
    this.retryable = options.retryable;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.url = options.url;
  }
}

/** Seconds for messages: "30 s", "0.2 s". */
export function formatSeconds(ms: number): string {
  const s = ms / 1000;
  return `${Number.isInteger(s) ? s : Number(s.toFixed(s < 1 ? 2 : 1))} s`;
}

export type TimeoutPhase = 'dns' | 'connect' | 'no-response' | 'mid-body' | 'total';

export function timeoutError(ms: number, phase: TimeoutPhase, cause?: unknown): FetchError {
  const what = {
    dns: 'DNS lookup',
    connect: 'connecting',
    'no-response': 'no response',
    'mid-body': 'no data mid-body',
    total: 'total time',
  }[phase];
  return new FetchError('timeout', `timed out after ${formatSeconds(ms)} (${what})`, { retryable: true, cause });
}

export function shortBodyError(received: number, declared: number, what = 'declared length'): FetchError {
  return new FetchError('length', `body shorter than ${what} (${received} of ${declared} bytes)`, { retryable: true });
}

export function longBodyError(declared: number, what = 'declared length', received?: number): FetchError {
  const got = received === undefined ? `more than ${declared}` : `${received} for ${declared}`;
  return new FetchError('length', `body longer than ${what} (${got} bytes)`, { retryable: true });
}

/** Walks `error.cause` links (got wraps errors in RequestError) looking for one of ours. */
export function findFetchError(error: unknown): FetchError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof FetchError) return current;
    current = current.cause;
  }
  return undefined;
}
