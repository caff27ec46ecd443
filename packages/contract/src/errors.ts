// Error codes of the contract (docs/api.md#errors, docs/product-rules.md#not-in-the-contract-decided-here).

/** Every error code the service answers with, and the HTTP status it normally travels with. */
export const ERROR_CODES = {
  UNAUTHORIZED: 401,
  INVALID_REQUEST: 400,
  PLAN_LIMIT_EXCEEDED: 403,
  QUOTA_EXCEEDED: 403,
  NOT_FOUND: 404,
  INVALID_TOKEN: 403,
  EXPIRED_TOKEN: 403,
  RATE_LIMITED: 429,
  /** A known path asked with a method it does not take (docs/service.md#hardening); with `Allow`. */
  METHOD_NOT_ALLOWED: 405,
  /** An Idempotency-Key sent again with another method, path or body (docs/fair-share.md#idempotent-requests). */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** An Idempotency-Key whose first request is still running: retry later. */
  IDEMPOTENCY_KEY_IN_USE: 409,
  /** A stream ZIP's source URL failed as it was read for a download (it answered 403, timed out...). */
  SOURCE_UNAVAILABLE: 502,
  INTERNAL_ERROR: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_CODES;

/**
 * Statuses that travel with a code other than its default one. docs/service.md#http: bodies over 10 MB
 * answer 413 with code INVALID_REQUEST (the API also uses 415 for an unsupported body encoding
 * and 416 for an unsatisfiable range, both with INVALID_REQUEST).
 */
export const PAYLOAD_TOO_LARGE_STATUS = 413;

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** The HTTP status a code travels with by default. */
export function statusOf(code: ErrorCode): number {
  return ERROR_CODES[code];
}

/**
 * An error meant for the client: the API's error handler turns it into the envelope with
 * `status` as the HTTP status. `status` defaults to the code's own status; pass another one
 * only for the documented exceptions (e.g. 413 with INVALID_REQUEST).
 */
export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  /** Response headers that travel with the error (`Retry-After` of a 429, `Allow` of a 405). */
  readonly headers: Record<string, string> = {};

  constructor(code: ErrorCode, message: string, status: number = ERROR_CODES[code]) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = status;
  }

  withHeaders(headers: Record<string, string>): this {
    Object.assign(this.headers, headers);
    return this;
  }

  /** 413 with code INVALID_REQUEST (docs/service.md#http: bodies over 10 MB). */
  static payloadTooLarge(message = 'request body is larger than 10 MB'): ApiError {
    return new ApiError('INVALID_REQUEST', message, PAYLOAD_TOO_LARGE_STATUS);
  }
}

export interface ErrorEnvelope {
  success: false;
  error: { code: ErrorCode; message: string };
}

/** `{ success: false, error: { code, message } }`: the body of every error response. */
export function errorEnvelope(code: ErrorCode, message: string): ErrorEnvelope {
  return { success: false, error: { code, message } };
}
