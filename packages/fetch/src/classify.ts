/**
 * Error classification: anything thrown by got, Node or this package becomes a FetchError with
 * words a user can read, whether it is worth retrying, and the raw detail for the log.
 */
import { STATUS_CODES } from 'node:http';
import { MaxRedirectsError, TimeoutError, type RequestError } from 'got';
import { FetchError, findFetchError, longBodyError, shortBodyError, timeoutError, type TimeoutPhase } from './errors';

export function httpError(status: number, statusMessage?: string, retryAfterMs?: number): FetchError {
  const text = statusMessage?.trim() || STATUS_CODES[status] || '';
  return new FetchError('http', `HTTP ${status}${text ? ` ${text}` : ''}`, {
    retryable: status >= 500 || status === 429,
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

export interface ErrorContext {
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

const H2_DROPPED = new Set(['ERR_HTTP2_STREAM_ERROR', 'ERR_HTTP2_SESSION_ERROR', 'ERR_HTTP2_GOAWAY_SESSION', 'ERR_HTTP2_STREAM_CANCEL', 'ERR_HTTP2_INVALID_SESSION', 'HTTP2WRAPPER_NOSETTINGS']);

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
  // HTTP/2 (h2.ts): a stream reset or a session ended by the server is a dropped connection.
  if (H2_DROPPED.has(code) || /^The (server aborted the HTTP\/2 stream|HTTP\/2 stream has been early terminated)/.test(error.message)) {
    return new FetchError('connection', 'connection closed by the server', { retryable: true, ...base });
  }
  if (code.startsWith('ERR_HTTP2_')) return new FetchError('other', 'invalid HTTP response', { retryable: false, ...base });
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
