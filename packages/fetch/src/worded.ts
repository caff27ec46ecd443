// What a user reads of a failure they did not cause in words (docs/guarantees.md#hardening-third-round-items-1-6):
// a job's, bin's or webhook delivery's error is one of these phrases, never an exception's own
// text, which can name internal addresses, paths or stack parts. The raw error goes to the log.
import { findFetchError } from './errors';

const BY_CODE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ECONNABORTED: 'connection reset',
  EPIPE: 'connection reset',
  ETIMEDOUT: 'timed out',
  ESOCKETTIMEDOUT: 'timed out',
  EHOSTUNREACH: 'host unreachable',
  EHOSTDOWN: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENETDOWN: 'network unreachable',
  ENOTFOUND: 'host does not resolve',
  EAI_AGAIN: 'host does not resolve',
};

const CODE_IN_TEXT = new RegExp(`\\b(${Object.keys(BY_CODE).join('|')})\\b`);

/** The words shown for a failure nothing else names. */
export const INTERNAL_FAILURE = 'internal error (logged for the operator)';

/**
 * One short phrase for `err`: a FetchError's user message, a connection or timeout failure by
 * kind, "<who> answered <status>" for an HTTP answer (an S3 call's), else INTERNAL_FAILURE.
 */
export function wordedError(err: unknown, who = 'storage'): string {
  const own = findFetchError(err);
  if (own) return own.userMessage;
  let current: unknown = err;
  // Duck-typed: errors of Node's own realm are not `instanceof Error` under a VM context (jest).
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth++) {
    const e = current as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown; $metadata?: { httpStatusCode?: number } };
    // The SDK wraps an error it cannot recognise into one whose message alone names the code.
    const code = typeof e.code === 'string' ? e.code : (CODE_IN_TEXT.exec(typeof e.message === 'string' ? e.message : '')?.[1] ?? '');
    if (BY_CODE[code]) return BY_CODE[code];
    if (e.name === 'TimeoutError' || e.name === 'RequestTimeout' || code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'timed out';
    if (e.name === 'AbortError') return 'cancelled';
    const status = e.$metadata?.httpStatusCode;
    if (typeof status === 'number' && status >= 300) return `${who} answered ${status}`;
    current = e.cause;
  }
  return INTERNAL_FAILURE;
}
