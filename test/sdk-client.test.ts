// The SDK's browser-safe client (`@ap/sdk/client`) against the real stack: login returns a
// session that a bearer getter sends on every later call (and no X-API-Key); the webhook,
// usage and job-stats methods answer with the document's shapes; a missing or ended session
// is an ApiRequestError with the API's 401.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ApiRequestError, ArchiveClient } from '@ap/sdk/client';
import { createUser } from './helpers';
import { startStack, type Stack } from './stack';
import { startReceiver, type Receiver } from './webhook-receiver';

let stack: Stack;
let receiver: Receiver;
let user: Awaited<ReturnType<typeof createUser>>;
const password = 'correct horse battery staple';
/** Headers of every request the client sent, by way of its `fetch` option. */
const sent: Headers[] = [];
const recordingFetch: typeof fetch = (input, init) => {
  sent.push(new Headers(init?.headers));
  return fetch(input, init);
};

beforeAll(async () => {
  stack = await startStack({}, { workers: false });
  receiver = await startReceiver();
  user = await createUser(stack.ctx, { plan: 'pro', password });
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await receiver?.close();
});

describe('ArchiveClient with a session bearer', () => {
  let token: string | null = null;
  const client = () => new ArchiveClient({ baseUrl: `${stack.url}/`, bearer: () => token, fetch: recordingFetch });

  it('logs in without credentials and then sends only the bearer', async () => {
    token = 'stale-token-that-login-must-not-send';
    sent.length = 0;
    const login = await client().login(user.email, password);
    expect(sent[0]!.get('authorization')).toBeNull();
    token = login.token;
    sent.length = 0;
    const stats = await client().jobStats();
    expect(stats.stats).toEqual({ total: 0, preparing: 0, pending: 0, processing: 0, completed: 0, failed: 0 });
    expect(sent.map((h) => [h.get('authorization'), h.get('x-api-key')])).toEqual([[`Bearer ${token}`, null]]);
  });

  it('reads usage', async () => {
    const { usage } = await client().usage();
    expect(usage).toMatchObject({ plan: 'pro', stream_bytes: 0, stored_gb_days: 0 });
  });

  it('creates, lists, rotates, reads deliveries of and deletes a webhook', async () => {
    const url = receiver.set('/sdk/hook', [200]);
    const { webhook } = await client().createWebhook({ url, events: ['job.failed'], description: 'sdk' });
    expect(webhook).toMatchObject({ url, events: ['job.failed'], description: 'sdk' });
    expect(webhook.secret.length).toBeGreaterThan(16);
    const { webhooks } = await client().listWebhooks();
    expect(webhooks.map((w) => w.id)).toEqual([webhook.id]);
    expect(JSON.stringify(webhooks)).not.toContain(webhook.secret);
    const rotated = await client().rotateWebhookSecret(webhook.id);
    expect(rotated.webhook.id).toBe(webhook.id);
    expect(rotated.webhook.secret).not.toBe(webhook.secret);
    const page = await client().listWebhookDeliveries(webhook.id, { limit: 5 });
    expect(page).toMatchObject({ success: true, deliveries: [], meta: { limit: 5, has_more: false } });
    expect((await client().deleteWebhook(webhook.id)).success).toBe(true);
    expect((await client().listWebhooks()).webhooks).toEqual([]);
    const gone = await client().rotateWebhookSecret(webhook.id).catch((e: unknown) => e);
    expect(gone).toMatchObject({ name: 'ApiRequestError', status: 404 });
  });

  it('answers a missing or unknown session with ApiRequestError 401', async () => {
    token = null;
    const none = await client().listWebhooks().catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ApiRequestError);
    expect(none).toMatchObject({ status: 401 });
    token = 'not-a-session';
    await expect(client().usage()).rejects.toMatchObject({ status: 401 });
  });
});
