// Webhook routes and usage end to end (docs/webhooks.md#webhooks, docs/product-rules.md#usage-and-stats): the real
// stack in process, a real origin and a real receiver.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { jobStatsResponseSchema, usageResponseSchema, webhookDeliveriesResponseSchema, webhookListResponseSchema } from '@ap/contract';
import { call, createUser, download, startApi, until } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startReceiver, type Receiver } from './webhook-receiver';
import { webhookFixtures } from './webhook-fixtures';

let stack: Stack;
let origin: Origin;
let receiver: Receiver;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  receiver = await startReceiver();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
  await receiver.close();
});

const { newUser, addWebhook, runJob } = webhookFixtures(() => stack);

describe('webhook routes', () => {
  it("another user's webhook reads 404", async () => {
    const owner = await newUser();
    const other = await newUser();
    const hook = await addWebhook(owner, receiver.set('/owned', [200]));
    for (const [method, path] of [
      ['GET', `/webhooks/${hook.id}/deliveries`],
      ['DELETE', `/webhooks/${hook.id}`],
      ['POST', `/webhooks/${hook.id}/rotate-secret`],
      ['GET', '/webhooks/not-a-uuid/deliveries'],
      ['DELETE', '/webhooks/6f1c1f5e-8d0c-4a44-9b1e-2d7c1b7e9a01'],
    ] as const) {
      const res = await call(stack.url, method, path, { key: other });
      expect({ path, status: res.status, code: res.body.error?.code }).toEqual({ path, status: 404, code: 'NOT_FOUND' });
    }
    expect((await call(stack.url, 'GET', '/webhooks', { key: other })).body).toEqual({ success: true, webhooks: [] });
    expect((await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key: owner })).status).toBe(200);
  });

  it('the secret is shown only on create and rotate; an 11th webhook is refused', async () => {
    const key = await newUser();
    const hooks = [];
    for (let i = 0; i < 10; i++) hooks.push(await addWebhook(key, receiver.set(`/many/${i}`, [200])));
    const eleventh = await call(stack.url, 'POST', '/webhooks', { key, body: { url: receiver.set('/many/10', [200]) } });
    expect(eleventh.status).toBe(403);
    expect(eleventh.body).toEqual({ success: false, error: { code: 'PLAN_LIMIT_EXCEEDED', message: expect.stringContaining('10') } });
    const list = await call(stack.url, 'GET', '/webhooks', { key });
    expect(list.body.webhooks.map((w: any) => w.id)).toEqual(hooks.map((h) => h.id));
    expect(JSON.stringify(list.body)).not.toContain('whsec_');
    expect(list.body.webhooks.every((w: any) => !('secret' in w))).toBe(true);
    // Deleting one makes room again.
    expect((await call(stack.url, 'DELETE', `/webhooks/${hooks[0]!.id}`, { key })).status).toBe(200);
    expect((await call(stack.url, 'POST', '/webhooks', { key, body: { url: receiver.set('/many/11', [200]) } })).status).toBe(201);
  });

  it('bad requests are 400 in the error envelope', async () => {
    const key = await newUser();
    for (const body of [
      {},
      { url: 'not a url' },
      { url: 'ftp://example.com/hook' },
      { url: 'https://user:pw@example.com/hook' },
      { url: `${receiver.url}/x`, events: [] },
      { url: `${receiver.url}/x`, events: ['job.started'] },
      { url: `${receiver.url}/x`, events: ['job.failed', 'job.failed'] },
      { url: `${receiver.url}/x`, description: 'x'.repeat(256) },
      { url: `${receiver.url}/x`, secret: 'mine' },
      // http to a public address is refused even where private addresses are allowed.
      { url: 'http://93.184.215.14/hook' },
    ]) {
      const res = await call(stack.url, 'POST', '/webhooks', { key, body });
      expect({ body, status: res.status, code: res.body.error?.code }).toEqual({ body, status: 400, code: 'INVALID_REQUEST' });
    }
    const badCursor = await call(stack.url, 'GET', `/webhooks/${(await addWebhook(key, receiver.set('/c', [200]))).id}/deliveries?cursor=zzz`, { key });
    expect(badCursor.status).toBe(400);
    expect((await call(stack.url, 'GET', '/webhooks')).status).toBe(401);
  });

  it('with ALLOW_PRIVATE_URLS=false, URLs to refused addresses are refused at creation', async () => {
    const strict = await startApi({ ALLOW_PRIVATE_URLS: 'false' });
    try {
      const key = (await createUser(strict.ctx, { plan: 'pro' })).apiKey;
      for (const url of [
        'https://127.0.0.1/hook',
        'https://localhost/hook',
        'https://10.1.2.3/hook',
        'https://192.168.0.10/hook',
        'https://169.254.169.254/latest/meta-data',
        'https://[::1]/hook',
        'https://[::ffff:127.0.0.1]/hook',
        `${receiver.url}/strict`,
      ]) {
        const res = await call(strict.url, 'POST', '/webhooks', { key, body: { url } });
        expect({ url, status: res.status, code: res.body.error?.code }).toEqual({ url, status: 400, code: 'INVALID_REQUEST' });
      }
      expect((await call(strict.url, 'GET', '/webhooks', { key })).body.webhooks).toEqual([]);
    } finally {
      await strict.close();
    }
  });
});

describe('usage and stats', () => {
  it('GET /usage shows the GB-days charged and the stream bytes sent; GET /jobs/stats counts the jobs', async () => {
    const key = await newUser();
    const stored = await runJob(key, { files: [{ url: origin.set('/u.bin', { body: bytesOf(12, 40_000) }) }], expires_in: 7200 });
    const stream = await runJob(key, { mode: 'stream', files: [{ url: origin.set('/us.bin', { body: bytesOf(13, 25_000) }) }] });
    const failed = await runJob(key, { files: [{ url: origin.set('/u-missing.bin', { body: Buffer.alloc(0), status: 404 }) }] });
    expect([stored.status, stream.status, failed.status]).toEqual(['completed', 'completed', 'failed']);
    const full = await download(stream.download_url);
    expect(full.body.length).toBe(stream.zips[0].size);
    expect((await download(stream.download_url, { range: 'bytes=0-499' })).body.length).toBe(500);

    // Stream bytes are recorded as each download response ends, a moment after the client has the last byte.
    const expectedStreamBytes = stream.zips[0].size + 500;
    await until(async () => (await call(stack.url, 'GET', '/usage', { key })).body.usage.stream_bytes === expectedStreamBytes, 'both stream downloads are counted');
    const res = await call(stack.url, 'GET', '/usage', { key });
    expect(res.status).toBe(200);
    const { usage } = usageResponseSchema.parse(res.body);
    const now = new Date();
    const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    expect(usage).toEqual({
      plan: 'pro',
      period_start: start.toISOString(),
      period_end: end.toISOString(),
      overage_enabled: false,
      stream_bytes: expectedStreamBytes,
      stream_quota_bytes: 3_000_000_000_000,
      stored_gb_days: (stored.zips[0].size * 7200) / (1e9 * 86_400),
      stored_quota_gb_days: 20_000,
    });

    const stats = await call(stack.url, 'GET', '/jobs/stats', { key });
    expect(stats.status).toBe(200);
    expect(jobStatsResponseSchema.parse(stats.body).stats).toEqual({ total: 3, preparing: 0, pending: 0, processing: 0, completed: 2, failed: 1 });
    const fresh = await newUser();
    expect((await call(stack.url, 'GET', '/jobs/stats', { key: fresh })).body.stats).toEqual({ total: 0, preparing: 0, pending: 0, processing: 0, completed: 0, failed: 0 });
    expect((await call(stack.url, 'GET', '/jobs/stats')).status).toBe(401);
    expect((await call(stack.url, 'GET', '/usage')).status).toBe(401);
  });
});
