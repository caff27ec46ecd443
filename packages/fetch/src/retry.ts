/**
 * The retry loop around single attempts (docs/product-rules.md#lifecycle: 3 retries on connection errors,
 * timeouts, 5xx and 429): exponential backoff with equal jitter, `Retry-After` honoured up to a
 * cap (a longer one makes the error final rather than sleeping).
 */
import { toFetchError, type ErrorContext } from './classify';
import { FetchError } from './errors';

export interface RetryPolicy {
  /** Retries after the first attempt. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  retryAfterCapMs: number;
}

export interface Retrier {
  readonly retries: number;
  /** Wait before retry number `attemptNo` (1-based); undefined: a Retry-After beyond the cap. */
  backoff(attemptNo: number, retryAfterMs: number | undefined): number | undefined;
  /**
   * Runs `op` until it succeeds, a final error, or `retries` retries. `prior` is a retryable
   * failure that already counts as attempt 1 (the probe's HEAD), so a dead host costs at most
   * 1 + retries attempts whatever the method.
   */
  withRetries<T>(url: string, signal: AbortSignal | undefined, op: (attemptNo: number) => Promise<T>, prior?: FetchError): Promise<T>;
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

/** Waits, before a retry after the host pushed back (429, 503, a reset), until it takes one more connection. */
export type RoomFor = (url: string, signal: AbortSignal | undefined) => Promise<void>;

export function createRetrier(policy: RetryPolicy, ctx: ErrorContext, roomFor?: RoomFor): Retrier {
  const { retries, baseDelayMs, maxDelayMs, retryAfterCapMs } = policy;

  function backoff(attemptNo: number, retryAfterMs: number | undefined): number | undefined {
    const exp = Math.min(maxDelayMs, baseDelayMs * 2 ** (attemptNo - 1));
    const jittered = exp / 2 + (Math.random() * exp) / 2;
    if (retryAfterMs === undefined) return jittered;
    if (retryAfterMs > retryAfterCapMs) return undefined;
    return Math.max(jittered, retryAfterMs);
  }

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
        if (roomFor && (error.status === 429 || error.status === 503 || error.kind === 'connection' || error.kind === 'timeout')) await roomFor(url, signal);
        attemptNo++;
      }
      try {
        return await op(attemptNo);
      } catch (thrown) {
        error = toFetchError(thrown, ctx);
      }
    }
  }

  return { retries, backoff, withRetries };
}
