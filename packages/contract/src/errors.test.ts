import { describe, expect, it } from '@jest/globals';
import { ApiError, ERROR_CODES, errorEnvelope, isErrorCode, statusOf } from './errors';

describe('error codes', () => {
  it('carry the HTTP status of docs/api.md#errors', () => {
    expect(ERROR_CODES).toEqual({
      UNAUTHORIZED: 401,
      INVALID_REQUEST: 400,
      PLAN_LIMIT_EXCEEDED: 403,
      QUOTA_EXCEEDED: 403,
      NOT_FOUND: 404,
      INVALID_TOKEN: 403,
      EXPIRED_TOKEN: 403,
      RATE_LIMITED: 429,
      METHOD_NOT_ALLOWED: 405,
      IDEMPOTENCY_KEY_REUSED: 422,
      IDEMPOTENCY_KEY_IN_USE: 409,
      SOURCE_UNAVAILABLE: 502,
      INTERNAL_ERROR: 500,
    });
    expect(statusOf('RATE_LIMITED')).toBe(429);
    expect(isErrorCode('NOT_FOUND')).toBe(true);
    expect(isErrorCode('constructor')).toBe(false);
    expect(isErrorCode(404)).toBe(false);
  });

  it('ApiError takes the status of its code unless told otherwise', () => {
    const e = new ApiError('PLAN_LIMIT_EXCEEDED', 'too many files');
    expect(e).toBeInstanceOf(Error);
    expect(e).toBeInstanceOf(ApiError);
    expect([e.code, e.status, e.message, e.name]).toEqual(['PLAN_LIMIT_EXCEEDED', 403, 'too many files', 'ApiError']);
    expect(new ApiError('INVALID_REQUEST', 'x', 415).status).toBe(415);
    expect(e.headers).toEqual({});
    expect(new ApiError('RATE_LIMITED', 'slow down').withHeaders({ 'Retry-After': '7' }).headers).toEqual({ 'Retry-After': '7' });
  });

  it('413 bodies use INVALID_REQUEST', () => {
    const e = ApiError.payloadTooLarge();
    expect([e.code, e.status, e.message]).toEqual(['INVALID_REQUEST', 413, 'request body is larger than 10 MB']);
  });

  it('errorEnvelope builds the contract envelope', () => {
    expect(errorEnvelope('NOT_FOUND', 'job not found')).toEqual({ success: false, error: { code: 'NOT_FOUND', message: 'job not found' } });
  });
});
