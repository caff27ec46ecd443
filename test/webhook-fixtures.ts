// What the webhook suites share: a user, a webhook, a job run to its end, a signed delivery.
import { expect } from '@jest/globals';
import { webhookEventBodySchema, webhookSecretResponseSchema } from '@ap/contract';
import { verifySignature } from '@ap/webhooks';
import { call, createUser, waitForJob } from './helpers';
import type { Stack } from './stack';
import type { ReceivedRequest } from './webhook-receiver';

/** Helpers bound to the suite's stack (read when called: the stack starts in beforeAll). */
export function webhookFixtures(stack: () => Stack) {
  return {
    async newUser() {
      return (await createUser(stack().ctx, { plan: 'pro' })).apiKey;
    },
    async addWebhook(key: string, url: string, extra: Record<string, unknown> = {}, base = stack().url) {
      const res = await call(base, 'POST', '/webhooks', { key, body: { url, ...extra } });
      expect(res.status).toBe(201);
      return webhookSecretResponseSchema.parse(res.body).webhook;
    },
    async runJob(key: string, body: Record<string, unknown>, base = stack().url) {
      const res = await call(base, 'POST', '/jobs', { key, body });
      expect(res.status).toBe(201);
      return waitForJob(base, key, res.body.job_id);
    },
  };
}

export function expectSigned(request: ReceivedRequest, secret: string, webhookId: string) {
  expect(request.headers['content-type']).toBe('application/json');
  expect(request.headers['user-agent']).toMatch(/^archive-packager-webhooks\/\S+$/);
  expect(request.headers['x-webhook-id']).toBe(webhookId);
  expect(request.headers['x-delivery-id']).toBe(request.body.delivery_id);
  expect(verifySignature(String(request.headers['x-signature']), secret, request.raw)).toBe(true);
  expect(webhookEventBodySchema.parse(request.body)).toEqual(request.body);
}
