// Preparing is fair across users (docs/guarantees.md#preparing-fairly-and-bounded): one user's
// many slow-preparing jobs do not hold another user's job until all of them are done. The
// second user's one job finishes preparing within about one job's preparing time.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, createUser, waitForJob } from './helpers';
import { startStack, type Stack } from './stack';

/** How long the slow origin waits before it answers any request (so each job prepares this long). */
const ANSWER_AFTER_MS = 1_500;
/** Jobs of the busy user: with the stack's 2 preparer slots, 5 rounds of preparing in arrival order. */
const BUSY_JOBS = 10;
const BODY = Buffer.alloc(1000, 7);

let stack: Stack;
let slowOrigin: http.Server;
let slowUrl: string;

beforeAll(async () => {
  stack = await startStack();
  slowOrigin = http.createServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-length': BODY.length, 'content-type': 'application/octet-stream' });
      res.end(req.method === 'HEAD' ? undefined : BODY);
    }, ANSWER_AFTER_MS);
  });
  await new Promise<void>((resolve) => slowOrigin.listen(0, '127.0.0.1', () => resolve()));
  slowUrl = `http://127.0.0.1:${(slowOrigin.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await stack.close();
  slowOrigin.closeAllConnections();
  await new Promise((resolve) => slowOrigin.close(resolve));
});

async function createStreamJob(key: string, path: string): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { mode: 'stream', files: [{ url: `${slowUrl}/${path}` }] } });
  expect(res.status).toBe(201);
  return res.body.job_id as string;
}

async function statusOf(key: string, id: string): Promise<string> {
  return (await call(stack.url, 'GET', `/jobs/${id}`, { key })).body.job.status as string;
}

describe('preparing across users', () => {
  it("a user's one job finishes preparing within about one job's time, not after another user's many slow jobs", async () => {
    const busy = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const other = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const busyJobs: string[] = [];
    for (let i = 0; i < BUSY_JOBS; i++) busyJobs.push(await createStreamJob(busy, `busy/${i}.bin`));

    const started = Date.now();
    const job = await waitForJob(stack.url, other, await createStreamJob(other, 'other.bin'), ['completed', 'failed'], 30_000);
    const took = Date.now() - started;
    expect(job.status).toBe('completed');
    // It waits for one slot to free (at most one job's time) and then prepares (one more);
    // first in, first out it would wait for all 5 rounds of the busy user's jobs.
    expect(took).toBeLessThan(3 * ANSWER_AFTER_MS);
    const stillPreparing = (await Promise.all(busyJobs.map((id) => statusOf(busy, id)))).filter((s) => s === 'preparing');
    expect(stillPreparing.length).toBeGreaterThanOrEqual(4);

    // The busy user's jobs all finish too: none is lost or starved.
    for (const id of busyJobs) expect((await waitForJob(stack.url, busy, id, ['completed', 'failed'], 30_000)).status).toBe('completed');
  }, 60_000);
});
