import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, startApi, type TestApi } from '../../../test/helpers';

let api: TestApi;
let key: string;
beforeAll(async () => {
  api = await startApi();
  key = (await createUser(api.ctx)).apiKey;
});
afterAll(async () => {
  await api.close();
});

describe('HTTP envelope and hardening', () => {
  it('answers unknown routes with 404 NOT_FOUND in the envelope', async () => {
    for (const [method, path] of [['GET', '/nope'], ['POST', '/jobs/x/y/z'], ['DELETE', '/']]) {
      const res = await call(api.url, method!, path!, { key });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
    }
  });

  it('answers malformed JSON with 400 INVALID_REQUEST', async () => {
    const res = await call(api.url, 'POST', '/api-keys', { key, rawBody: '{"name": ' });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
  });

  it('answers bodies over 10 MB (10^7 bytes) with 413 INVALID_REQUEST', async () => {
    const res = await call(api.url, 'POST', '/api-keys', { key, rawBody: JSON.stringify({ name: 'x'.repeat(10_000_000) }) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
  });

  it('sets security headers and hides the framework', async () => {
    const res = await call(api.url, 'GET', '/healthz');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('strict-transport-security')).toContain('max-age');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  it('serves /healthz and /readyz', async () => {
    const health = await call(api.url, 'GET', '/healthz');
    expect(health.status).toBe(200);
    expect(health.body.success).toBe(true);
    const ready = await call(api.url, 'GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ success: true, status: 'ready', failing: [] });
  });

  it('reports not ready when a dependency is down', async () => {
    const broken = await startApi({ S3_ENDPOINT: 'http://127.0.0.1:9' });
    try {
      const ready = await call(broken.url, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.failing).toEqual(['s3']);
    } finally {
      await broken.close();
    }
  });

  it('turns internal faults into 500 INTERNAL_ERROR without details', async () => {
    const broken = await startApi({ DATABASE_URL: 'postgresql://postgres@127.0.0.1:9/nothing' });
    try {
      const res = await call(broken.url, 'GET', '/api-keys', { key: 'azk_anything' });
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ success: false, error: { code: 'INTERNAL_ERROR', message: 'internal error' } });
      expect(JSON.stringify(res.body)).not.toMatch(/ECONNREFUSED|at .*\.ts/);
    } finally {
      await broken.close();
    }
  });
});
