// Hardening, third round (docs/guarantees.md#hardening-third-round-items-7-12): requests are
// authenticated before their bodies are read and cut when they trickle; limits are per user.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import { BYTE_SECONDS_PER_GB_DAY, monthStart } from '@ap/jobs';
import { PLANS } from '@ap/contract';
import { call, createUser, until, waitForJob } from './helpers';
import { startGatedOrigin, type GatedOrigin } from './gated-origin';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const REQUEST_TIMEOUT_MS = 1_500;
const RATE_LIMIT = 30;

let stack: Stack;
let origin: Origin;
let gated: GatedOrigin;

beforeAll(async () => {
  stack = await startStack({ REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS), RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT), PLAN_CONCURRENT_BINS: 'free=1,starter=2,pro=4,scale=8' });
  origin = await startOrigin();
  gated = await startGatedOrigin({ '/held.bin': bytesOf(1101, 200_000) }, { '/held.bin': 50_000 });
});
afterAll(async () => {
  gated.open();
  await stack.close();
  await origin.close();
  await gated.close();
});

/** A POST /jobs whose body (declared `length` bytes) is sent by `send`; resolves with the answer's status and when it came. */
function rawPost(headers: Record<string, string>, length: number, send: (req: http.ClientRequest) => void) {
  const { hostname, port } = new URL(stack.url);
  const started = Date.now();
  const req = http.request({ host: hostname, port, method: 'POST', path: '/jobs', headers: { 'content-type': 'application/json', 'content-length': String(length), ...headers } });
  const answered = new Promise<{ status: number; afterMs: number }>((resolve, reject) => {
    req.once('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode!, afterMs: Date.now() - started });
    });
    req.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => req.once('close', () => resolve(Date.now() - started)));
  req.on('error', () => undefined);
  send(req);
  return { req, answered, closed };
}

describe('hardening 3, item 8: authentication before the body, and trickling bodies cut', () => {
  it('answers an unauthenticated 9 MB body sent at 1 MB/s with 401 within 2 s', async () => {
    const MB = 1_000_000;
    let timer: NodeJS.Timeout | undefined;
    const post = rawPost({ 'x-api-key': 'not-a-key' }, 9 * MB, (req) => {
      let sent = 0;
      const tick = () => {
        if (sent >= 9 * MB || req.destroyed) return;
        req.write(Buffer.alloc(MB, 0x20));
        sent += MB;
        timer = setTimeout(tick, 1_000);
      };
      tick();
    });
    try {
      const answer = await post.answered;
      expect(answer.status).toBe(401);
      expect(answer.afterMs).toBeLessThan(2_000);
    } finally {
      clearTimeout(timer);
      post.req.destroy();
    }
  });

  it(`closes a request whose body stalls after REQUEST_TIMEOUT_MS (${REQUEST_TIMEOUT_MS} ms here, 60 s by default), with 408`, async () => {
    const { apiKey } = await createUser(stack.ctx);
    const post = rawPost({ 'x-api-key': apiKey }, 1_000, (req) => req.write('{"files": ['));
    const answer = await post.answered;
    expect(answer.status).toBe(408);
    const closedAfter = await post.closed;
    expect(closedAfter).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(closedAfter).toBeLessThan(REQUEST_TIMEOUT_MS + 3_000);
  });
});

describe('hardening 3, item 11: limits per user, not per key', () => {
  it('counts every key and session of a user against one request limit', async () => {
    const password = 'correct horse battery staple';
    const user = await createUser(stack.ctx, { password });
    const other = await createUser(stack.ctx);
    const keys = [user.apiKey];
    for (let i = 0; i < 3; i++) {
      const created = await call(stack.url, 'POST', '/api-keys', { key: user.apiKey, body: { name: `k${i}` } });
      expect(created.status).toBe(201);
      keys.push(created.body.api_key.key);
    }
    const login = await call(stack.url, 'POST', '/auth/login', { body: { email: user.email, password } });
    expect(login.status).toBe(200);
    const credentials = [...keys.map((key) => ({ key })), { bearer: login.body.token as string }];
    let accepted = 3; // the three key creations
    let refused = 0;
    for (let i = 0; i < RATE_LIMIT + 10; i++) {
      const res = await call(stack.url, 'GET', '/usage', credentials[i % credentials.length]);
      if (res.status === 200) accepted++;
      else {
        expect(res.status).toBe(429);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
        refused++;
      }
    }
    expect(accepted).toBe(RATE_LIMIT);
    expect(refused).toBe(13);
    // Another user is not touched.
    expect((await call(stack.url, 'GET', '/usage', { key: other.apiKey })).status).toBe(200);
  });

  it('checks the stored quota again when a queued job starts packing', async () => {
    const { apiKey, userId } = await createUser(stack.ctx);
    const create = async (url: string) => {
      const res = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files: [{ url }] } });
      expect(res.status).toBe(201);
      return res.body.job_id as string;
    };
    // The free plan packs one bin at a time: the first job holds it, the others queue.
    const first = await create(`${gated.url}/held.bin`);
    await until(async () => (await stack.ctx.db.zip.findFirst({ where: { jobId: first } }))?.status === 'processing', 'first bin packing');
    const queued = [await create(origin.set('/q1.bin', { body: bytesOf(1102, 1_000) })), await create(origin.set('/q2.bin', { body: bytesOf(1103, 1_000) }))];
    // Meanwhile the month's stored quota is used up (other jobs completing).
    const allowance = BigInt(PLANS.free.storedQuotaGbDays * BYTE_SECONDS_PER_GB_DAY);
    await stack.ctx.db.usageRecord.create({ data: { userId, kind: 'stored_byte_seconds', month: monthStart(), amount: allowance } });
    gated.open();
    expect((await waitForJob(stack.url, apiKey, first)).status).toBe('completed');
    for (const id of queued) {
      const job = await waitForJob(stack.url, apiKey, id);
      expect(job.status).toBe('failed');
      expect(JSON.stringify(job)).toContain('stored quota of your plan is used up');
    }
  });
});
