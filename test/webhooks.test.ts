// Webhooks end to end (docs/webhooks.md#webhooks, docs/product-rules.md#usage-and-stats): the real stack in process,
// a real origin, and real HTTP receivers that record what they get.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  jobStatsResponseSchema,
  usageResponseSchema,
  webhookDeliveriesResponseSchema,
  webhookEventBodySchema,
  webhookListResponseSchema,
  webhookSecretResponseSchema,
} from '@ap/contract';
import { reconcile, rotateSealedColumns, SEALED_COLUMNS } from '@ap/jobs';
import { sealedKeyId } from '@ap/secrets';
import { parseSignatureHeader, verifySignature } from '@ap/webhooks';
import { call, createUser, download, startApi, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startReceiver, type Receiver } from './webhook-receiver';
import { expectSigned, webhookFixtures } from './webhook-fixtures';

// Retries after 0.1 s, 0.5 s, 3 s, ... instead of 1 min, 5 min, 30 min, ...
const RETRY_BASE_MS = '100';

let stack: Stack;
let origin: Origin;
let receiver: Receiver;

beforeAll(async () => {
  stack = await startStack({ WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS });
  origin = await startOrigin();
  receiver = await startReceiver();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
  await receiver.close();
});

const { newUser, addWebhook, runJob } = webhookFixtures(() => stack);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('job events', () => {
  it('a completed job and a failed job each produce one delivery whose signature verifies', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/events', [200]), { description: 'ci' });
    expect(hook).toMatchObject({ events: ['job.completed', 'job.failed'], description: 'ci' });

    const completed = await runJob(key, { files: [{ url: origin.set('/ok.bin', { body: bytesOf(1, 5000) }) }], metadata: { ref: 'r-1' } });
    expect(completed.status).toBe('completed');
    const failed = await runJob(key, { files: [{ url: origin.set('/missing.bin', { body: Buffer.alloc(0), status: 404 }) }] });
    expect(failed.status).toBe('failed');

    const got = await receiver.waitFor('/events', 2);
    await sleep(500); // nothing more arrives
    const received = receiver.received('/events');
    expect(received).toHaveLength(2);
    for (const r of received) expectSigned(r, hook.secret, hook.id);
    const byJob = new Map(got.map((r) => [r.body.job_id, r.body]));

    const done = byJob.get(completed.id);
    expect(done).toMatchObject({ event: 'job.completed', status: 'completed', url_count: 1, file_count: 1, errors: [], metadata: { ref: 'r-1' } });
    // `zips` as GET /jobs/:id shows them, signed download links included.
    expect(done.zips).toEqual(completed.zips);
    expect((await download(done.zips[0].download_url)).status).toBe(200);

    const fail = byJob.get(failed.id);
    expect(fail).toMatchObject({ event: 'job.failed', status: 'failed', url_count: 1, file_count: 0 });
    expect(fail.errors).toEqual(failed.errors);
    expect(fail.errors[0].url).toBe(`${origin.url}/missing.bin`);

    const history = await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key });
    expect(history.status).toBe(200);
    const page = webhookDeliveriesResponseSchema.parse(history.body);
    expect(page.meta).toEqual({ limit: 20, total: 2, next_cursor: null, has_more: false });
    expect(page.deliveries.map((d) => [d.job_id, d.event, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at])).toEqual([
      [failed.id, 'job.failed', 'delivered', 1, 200, null, null],
      [completed.id, 'job.completed', 'delivered', 1, 200, null, null],
    ]);
    expect(page.deliveries.map((d) => d.id).sort()).toEqual(received.map((r) => r.body.delivery_id).sort());

    // Pages of one.
    const first = await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries?limit=1`, { key });
    expect(first.body.meta).toMatchObject({ total: 2, has_more: true });
    const second = await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries?limit=1&cursor=${first.body.meta.next_cursor}`, { key });
    expect([first.body.deliveries[0].id, second.body.deliveries[0].id]).toEqual(page.deliveries.map((d) => d.id));
    expect(second.body.meta.has_more).toBe(false);
  });

  it('a stream job (completed by the preparer) is announced too', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/stream-events', [200]));
    const job = await runJob(key, { mode: 'stream', files: [{ url: origin.set('/s.bin', { body: bytesOf(2, 3000) }) }] });
    expect(job.status).toBe('completed');
    const [r] = await receiver.waitFor('/stream-events');
    expectSigned(r!, hook.secret, hook.id);
    expect(r!.body).toMatchObject({ event: 'job.completed', job_id: job.id, zips: job.zips });
  });

  it('500 then 200: the same delivery_id twice, and the history shows both attempts', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/flaky', [500, 200]));
    const job = await runJob(key, { files: [{ url: origin.set('/flaky.bin', { body: bytesOf(3, 100) }) }] });
    const [a, b] = await receiver.waitFor('/flaky', 2);
    expect(a!.headers['x-delivery-id']).toBe(b!.headers['x-delivery-id']);
    expect(a!.body.delivery_id).toBe(b!.body.delivery_id);
    expect(a!.raw).toBe(b!.raw); // the same body on every attempt
    expectSigned(b!, hook.secret, hook.id);
    // The retry waited for the schedule's first step (one base unit).
    expect(b!.at - a!.at).toBeGreaterThanOrEqual(Number(RETRY_BASE_MS) - 5);

    const deliveryId = a!.body.delivery_id;
    await until(async () => (await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).status === 'delivered');
    const history = await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key });
    expect(history.body.deliveries).toHaveLength(1);
    expect(history.body.deliveries[0]).toMatchObject({ id: deliveryId, job_id: job.id, status: 'delivered', attempts: 2, last_status_code: 200, last_error: null, next_attempt_at: null });
    expect(history.body.deliveries[0].delivered_at).not.toBeNull();
    const attempts = await stack.ctx.db.webhookDeliveryAttempt.findMany({ where: { deliveryId }, orderBy: { number: 'asc' } });
    expect(attempts.map((x) => [x.number, x.statusCode, x.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 200, null],
    ]);
  });

  it('redirects are not followed, and a receiver that never succeeds ends failed after the whole schedule', async () => {
    const key = await newUser();
    receiver.set('/redirect-target', [200]);
    const hook = await addWebhook(key, receiver.set('/redirect', [302]));
    const job = await runJob(key, { files: [{ url: origin.set('/r.bin', { body: bytesOf(4, 10) }) }] });
    const [first] = await receiver.waitFor('/redirect');
    const deliveryId = first!.body.delivery_id;
    // Run the remaining attempts without waiting for hours: make each one due now.
    for (let n = 1; n < 8; n++) {
      await until(async () => (await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).attempts === n);
      const row = await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
      if (row.status !== 'pending') break;
      // An attempt already promoted from the delayed set (a short delay on a busy machine) needs no push.
      await stack.ctx.queues.webhook.getJob(`webhook:${deliveryId}:${n}`).then((m) => m?.changeDelay(0)).catch(() => undefined);
    }
    await until(async () => (await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).status === 'failed');
    const row = await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
    expect(row).toMatchObject({ attempts: 8, lastStatusCode: 302, lastError: 'HTTP 302 (redirects are not followed)', nextAttemptAt: null, jobId: job.id });
    expect(receiver.received('/redirect')).toHaveLength(8);
    expect(receiver.received('/redirect')[0]!.headers['x-delivery-id']).toBe(deliveryId);
    expect(receiver.received('/redirect-target')).toHaveLength(0);
    const history = await call(stack.url, 'GET', `/webhooks/${hook.id}/deliveries`, { key });
    expect(history.body.deliveries[0]).toMatchObject({ status: 'failed', attempts: 8, last_status_code: 302 });
  }, 60_000);

  it('a receiver that hangs is cut at 10 s and the attempt is retried later', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/hang', ['hang']));
    await runJob(key, { files: [{ url: origin.set('/h.bin', { body: bytesOf(5, 10) }) }] });
    const [first] = await receiver.waitFor('/hang');
    const deliveryId = first!.body.delivery_id;
    await until(async () => (await stack.ctx.db.webhookDeliveryAttempt.count({ where: { deliveryId } })) === 1, 'the first attempt is recorded', 20_000);
    const [attempt] = await stack.ctx.db.webhookDeliveryAttempt.findMany({ where: { deliveryId } });
    expect(attempt!.statusCode).toBeNull();
    expect(attempt!.error).toBe('no response within 10 s');
    expect(attempt!.durationMs).toBeGreaterThanOrEqual(10_000);
    expect(attempt!.durationMs).toBeLessThan(12_000);
    const row = await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } });
    expect(row.status).toBe('pending');
    expect(row.nextAttemptAt).not.toBeNull();
    // Stop it here: a deleted webhook's pending deliveries end failed.
    expect((await call(stack.url, 'DELETE', `/webhooks/${hook.id}`, { key })).status).toBe(200);
    expect(await stack.ctx.db.webhookDelivery.findUniqueOrThrow({ where: { id: deliveryId } })).toMatchObject({ status: 'failed', lastError: 'webhook deleted' });
  }, 40_000);

  it('after a rotation deliveries carry two valid signatures, the new one first, for 24 hours', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/rotated', [200]));
    const rotated = await call(stack.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key });
    expect(rotated.status).toBe(200);
    const fresh = webhookSecretResponseSchema.parse(rotated.body).webhook;
    expect(fresh.id).toBe(hook.id);
    expect(fresh.secret).not.toBe(hook.secret);

    await runJob(key, { files: [{ url: origin.set('/rot.bin', { body: bytesOf(6, 10) }) }] });
    const [r] = await receiver.waitFor('/rotated');
    const header = String(r!.headers['x-signature']);
    const parsed = parseSignatureHeader(header)!;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature(header, fresh.secret, r!.raw)).toBe(true);
    expect(verifySignature(header, hook.secret, r!.raw)).toBe(true);
    expect(verifySignature(`t=${parsed.timestamp},v1=${parsed.signatures[0]}`, fresh.secret, r!.raw)).toBe(true);
    expect(verifySignature(`t=${parsed.timestamp},v1=${parsed.signatures[1]}`, hook.secret, r!.raw)).toBe(true);

    // Once the window has passed, only the new secret signs.
    const rotatedAt = (await stack.ctx.db.webhook.findUniqueOrThrow({ where: { id: hook.id } })).previousSecretExpiresAt!;
    expect(rotatedAt.getTime() - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    await stack.ctx.db.webhook.update({ where: { id: hook.id }, data: { previousSecretExpiresAt: new Date(Date.now() - 1000) } });
    await runJob(key, { files: [{ url: origin.set('/rot2.bin', { body: bytesOf(7, 10) }) }] });
    const [, later] = await receiver.waitFor('/rotated', 2);
    expect(String(later!.headers['x-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifySignature(String(later!.headers['x-signature']), fresh.secret, later!.raw)).toBe(true);
    expect(verifySignature(String(later!.headers['x-signature']), hook.secret, later!.raw)).toBe(false);
  });

  it('signing secrets are stored sealed (the columns read as ciphertext); a plain one from before is sealed by the rotation and still signs', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/sealed', [200]));
    const rotated = webhookSecretResponseSchema.parse((await call(stack.url, 'POST', `/webhooks/${hook.id}/rotate-secret`, { key })).body).webhook;
    const stored = async () => (await stack.ctx.db.$queryRaw<{ secret: string; previous_secret: string | null }[]>`SELECT secret, previous_secret FROM webhooks WHERE id = ${hook.id}::uuid`)[0]!;
    const row = await stored();
    for (const [value, plain] of [[row.secret, rotated.secret], [row.previous_secret!, hook.secret]] as const) {
      expect(sealedKeyId(value)).toBe(stack.ctx.secrets.currentKeyId);
      expect(value).not.toContain(plain.slice('whsec_'.length, 'whsec_'.length + 12));
    }
    await runJob(key, { files: [{ url: origin.set('/sealed.bin', { body: bytesOf(8, 10) }) }] });
    const [first] = await receiver.waitFor('/sealed');
    expect(verifySignature(String(first!.headers['x-signature']), rotated.secret, first!.raw)).toBe(true);
    expect(verifySignature(String(first!.headers['x-signature']), hook.secret, first!.raw)).toBe(true);

    // A row written in plain text before secrets were sealed: the rotation seals it, and it signs as before.
    const legacy = 'whsec_' + 'L'.repeat(43);
    await stack.ctx.db.$executeRaw`UPDATE webhooks SET secret = ${legacy}, previous_secret = NULL, previous_secret_expires_at = NULL WHERE id = ${hook.id}::uuid`;
    const reports = await rotateSealedColumns(stack.ctx.db, stack.ctx.secrets, SEALED_COLUMNS.filter((c) => c.table === 'webhooks'));
    expect(reports.find((r) => r.column === 'secret')!.resealed).toBeGreaterThanOrEqual(1);
    const after = await stored();
    expect(sealedKeyId(after.secret)).toBe(stack.ctx.secrets.currentKeyId);
    expect(after.secret).not.toContain('LLLLLLLL');
    await runJob(key, { files: [{ url: origin.set('/sealed2.bin', { body: bytesOf(9, 10) }) }] });
    const [, second] = await receiver.waitFor('/sealed', 2);
    expect(verifySignature(String(second!.headers['x-signature']), legacy, second!.raw)).toBe(true);
  });

  it('a deleted webhook gets nothing more', async () => {
    const key = await newUser();
    const gone = await addWebhook(key, receiver.set('/deleted', [200]));
    const kept = await addWebhook(key, receiver.set('/kept', [200]));
    const del = await call(stack.url, 'DELETE', `/webhooks/${gone.id}`, { key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true, message: expect.any(String) });
    expect((await call(stack.url, 'DELETE', `/webhooks/${gone.id}`, { key })).status).toBe(404);
    expect((await call(stack.url, 'GET', `/webhooks/${gone.id}/deliveries`, { key })).status).toBe(404);
    const list = webhookListResponseSchema.parse((await call(stack.url, 'GET', '/webhooks', { key })).body);
    expect(list.webhooks.map((w) => w.id)).toEqual([kept.id]);

    await runJob(key, { files: [{ url: origin.set('/d.bin', { body: bytesOf(8, 10) }) }] });
    await receiver.waitFor('/kept');
    await sleep(500);
    expect(receiver.received('/deleted')).toHaveLength(0);
  });

  it('the outbox survives Redis: a delivery whose message was lost is sent after the reconciler runs', async () => {
    // Packers and preparers, but no delivery worker yet.
    const noSender = await startStack({ WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS }, { webhooks: false });
    try {
      const key = (await createUser(noSender.ctx, { plan: 'pro' })).apiKey;
      const hook = await addWebhook(key, receiver.set('/after-flush', [200]), {}, noSender.url);
      const job = await runJob(key, { files: [{ url: origin.set('/f.bin', { body: bytesOf(9, 10) }) }] }, noSender.url);
      const row = await noSender.ctx.db.webhookDelivery.findFirstOrThrow({ where: { webhookId: hook.id } });
      expect(row).toMatchObject({ status: 'pending', attempts: 0, jobId: job.id });
      // Redis loses everything of this stack.
      const keys = await noSender.ctx.redis.keys(`${noSender.ctx.config.REDIS_PREFIX}:*`);
      expect(keys.length).toBeGreaterThan(0);
      await noSender.ctx.redis.del(...keys);
      expect(await noSender.ctx.queues.webhook.count()).toBe(0);

      const report = await reconcile(noSender.ctx.db, noSender.ctx.queues, new Date(Date.now() + 10_000));
      expect(report.deliveries).toBeGreaterThanOrEqual(1);
      // A delivery worker on the same queues now finds it.
      const sender = await startStack({ REDIS_PREFIX: noSender.ctx.config.REDIS_PREFIX, WEBHOOK_RETRY_BASE_MS: RETRY_BASE_MS }, { workers: false, webhooks: true });
      try {
        const [r] = await receiver.waitFor('/after-flush');
        expectSigned(r!, hook.secret, hook.id);
        expect(r!.body).toMatchObject({ delivery_id: row.id, job_id: job.id, event: 'job.completed' });
      } finally {
        await sender.close();
      }
    } finally {
      await noSender.close();
    }
  });
});

describe('the example receiver of docs/webhooks.md', () => {
  it('accepts a real delivery signed with its secret and refuses one signed with another', async () => {
    const doc = readFileSync(new URL('../docs/webhooks.md', import.meta.url), 'utf8');
    const code = /```ts\n([\s\S]*?)```/.exec(doc)![1]!;
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'ap-receiver-')), 'receiver.ts');
    writeFileSync(file, code);
    const key = await newUser();
    const port = await freePort();
    const hook = await addWebhook(key, `http://127.0.0.1:${port}/`);
    const other = await addWebhook(key, receiver.set('/other-secret', [200]));
    const tsx = new URL('../node_modules/.bin/tsx', import.meta.url).pathname;
    // The example holds the first webhook's secret only: the second one's deliveries go to it too.
    await stack.ctx.db.webhook.update({ where: { id: other.id }, data: { url: `http://127.0.0.1:${port}/` } });
    const child = spawn(tsx, [file], { env: { ...process.env, WEBHOOK_SECRET: hook.secret, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      await until(() => new Promise((resolve) => net.connect(port, '127.0.0.1').once('connect', function (this: net.Socket) { this.destroy(); resolve(true); }).once('error', () => resolve(false))), 'the example listens', 30_000);
      const job = await runJob(key, { files: [{ url: origin.set('/doc.bin', { body: bytesOf(14, 10) }) }] });
      const delivery = async (webhookId: string) => {
        await until(async () => (await stack.ctx.db.webhookDelivery.findFirst({ where: { webhookId, jobId: job.id, attempts: { gt: 0 } } })) !== null);
        return stack.ctx.db.webhookDelivery.findFirstOrThrow({ where: { webhookId, jobId: job.id } });
      };
      expect(await delivery(hook.id)).toMatchObject({ status: 'delivered', lastStatusCode: 204 });
      expect(await delivery(other.id)).toMatchObject({ status: 'pending', lastStatusCode: 401 });
      await until(async () => output.includes(job.id), 'the example logs the event');
      expect(output).toContain(`job.completed ${job.id} completed`);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill();
      await exited;
      await call(stack.url, 'DELETE', `/webhooks/${other.id}`, { key });
    }
  }, 60_000);
});

describe('download.completed', () => {
  it('reports bytes sent, the range and whether the last byte went out, for stored and stream downloads', async () => {
    const key = await newUser();
    const hook = await addWebhook(key, receiver.set('/downloads', [200]), { events: ['download.completed'] });
    expect(hook.events).toEqual(['download.completed']);
    const stored = await runJob(key, { files: [{ url: origin.set('/dl.bin', { body: bytesOf(10, 20_000) }) }] });
    const stream = await runJob(key, { mode: 'stream', files: [{ url: origin.set('/dl-s.bin', { body: bytesOf(11, 30_000) }) }] });
    const storedSize: number = stored.zips[0].size;
    const streamSize: number = stream.zips[0].size;

    expect((await download(stored.download_url)).body.length).toBe(storedSize);
    expect((await download(stored.download_url, { range: 'bytes=0-99' })).status).toBe(206);
    expect((await download(stored.download_url, { range: `bytes=${storedSize - 50}-` })).body.length).toBe(50);
    expect((await download(stream.download_url)).body.length).toBe(streamSize);
    expect((await download(stream.download_url, { range: 'bytes=10-1009' })).body.length).toBe(1000);

    const got = await receiver.waitFor('/downloads', 5);
    await sleep(500);
    expect(receiver.received('/downloads')).toHaveLength(5); // and no job.* events: not asked for
    for (const r of got) {
      expectSigned(r, hook.secret, hook.id);
      expect(r.body.event).toBe('download.completed');
      expect(r.body.status).toBe('completed');
    }
    const reports = got.map((r) => ({ job: r.body.job_id, ...r.body.download }));
    const zipOf = (job: any) => job.zips[0].id;
    expect(reports).toEqual(
      expect.arrayContaining([
        { job: stored.id, zip_id: zipOf(stored), bytes_sent: storedSize, range: null, complete: true },
        { job: stored.id, zip_id: zipOf(stored), bytes_sent: 100, range: { start: 0, end: 99 }, complete: false },
        { job: stored.id, zip_id: zipOf(stored), bytes_sent: 50, range: { start: storedSize - 50, end: storedSize - 1 }, complete: true },
        { job: stream.id, zip_id: zipOf(stream), bytes_sent: streamSize, range: null, complete: true },
        { job: stream.id, zip_id: zipOf(stream), bytes_sent: 1000, range: { start: 10, end: 1009 }, complete: false },
      ]),
    );
  });
});


function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function until(check: () => Promise<boolean>, what = 'the condition holds', timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(25);
  }
}
