// Slow and huge webhook receivers cost only their own deliveries (docs/guarantees.md#what-the-service-guarantees-under-faults-and-abuse): the real sender and queue, real receivers, deliveries written by the outbox.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { announceDeliveries } from '@ap/jobs';
import { recordJobEvent } from '@ap/webhooks';
import { call, createUser } from './helpers';
import { startStack, type Stack } from './stack';
import { startReceiver, type Receiver } from './webhook-receiver';

let stack: Stack;
let receiver: Receiver;
const servers: http.Server[] = [];

beforeAll(async () => {
  stack = await startStack({}, { workers: false, webhooks: true });
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  for (const server of servers) server.closeAllConnections();
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  await stack.close();
});

async function userWithJob() {
  const { apiKey } = await createUser(stack.ctx, { plan: 'pro' });
  const res = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url: 'https://example.com/a.bin' }] } });
  expect(res.status).toBe(201);
  return { key: apiKey, jobId: res.body.job_id as string };
}

async function addWebhook(key: string, url: string) {
  const res = await call(stack.url, 'POST', '/webhooks', { key, body: { url } });
  expect(res.status).toBe(201);
}

/** A job event through the outbox and the queue, as the services record it. */
async function announce(jobId: string, event: 'job.completed' | 'job.failed' = 'job.completed') {
  const ids = await recordJobEvent(stack.ctx.db, { jobId, event });
  await announceDeliveries(stack.ctx.queues, ids);
  return ids;
}

describe('webhook sender', () => {
  it('9 hanging receivers of one user do not delay another user\'s delivery by more than 1 s', async () => {
    const slow = await userWithJob();
    for (let i = 0; i < 9; i++) await addWebhook(slow.key, receiver.set(`/slow-${i}`, ['hang']));
    // Three events each: 27 deliveries, each receiver holding at most 4 of them.
    for (let n = 0; n < 3; n++) await announce(slow.jobId);
    await receiver.waitFor('/slow-8', 1, 10_000);
    const fast = await userWithJob();
    await addWebhook(fast.key, receiver.set('/fast', [200]));
    const announced = Date.now();
    await announce(fast.jobId);
    const [got] = await receiver.waitFor('/fast', 1, 5_000);
    expect(got!.at - announced).toBeLessThan(1_000);
    // Each slow receiver got at most 4 requests at once.
    for (let i = 0; i < 9; i++) expect(receiver.received(`/slow-${i}`).length).toBeLessThanOrEqual(4);
  });

  it('reads no more than 64 KiB of a 1 GB response: the delivery counts, the receiver is cut off', async () => {
    const sent = { bytes: 0, closed: false };
    const huge = http.createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-length': '1000000000' });
      const chunk = Buffer.alloc(64 * 1024, 'y');
      const pump = () => {
        while (!res.destroyed && sent.bytes < 1_000_000_000) {
          sent.bytes += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.on('close', () => (sent.closed = true));
      pump();
    });
    servers.push(huge);
    await new Promise<void>((resolve) => huge.listen(0, '127.0.0.1', resolve));
    const user = await userWithJob();
    await addWebhook(user.key, `http://127.0.0.1:${(huge.address() as AddressInfo).port}/hook`);
    const [deliveryId] = await announce(user.jobId);
    for (let waited = 0; waited < 10_000; waited += 50) {
      const row = await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId! } });
      if (row.status !== 'pending' && sent.closed) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const row = await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId! } });
    expect({ status: row.status, code: row.lastStatusCode }).toEqual({ status: 'delivered', code: 200 });
    expect(sent.closed).toBe(true);
    // What the sockets' buffers held, not the gigabyte.
    expect(sent.bytes).toBeLessThan(64 * 1024 * 1024);
  });
});
