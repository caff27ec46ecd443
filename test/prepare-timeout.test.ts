// Preparing is bounded (docs/guarantees.md#preparing-fairly-and-bounded): split jobs of URLs
// on an origin that accepts connections and never answers each fail "preparing took too long".
// Fairness across users: test/prepare-fairness.test.ts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { call, createUser, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const PREPARE_TIMEOUT_MS = 5_000;
const SPLIT = { max_zip_size_bytes: 104_857_600 };

let stack: Stack;
let origin: Origin;
let tarpit: http.Server;
let tarpitUrl: string;

beforeAll(async () => {
  // Probes would otherwise give up on the tarpit by themselves (no response for this long).
  stack = await startStack({ PREPARE_TIMEOUT_MS: String(PREPARE_TIMEOUT_MS), FETCH_IDLE_TIMEOUT_MS: '600000' });
  origin = await startOrigin();
  tarpit = http.createServer(() => undefined);
  await new Promise<void>((resolve) => tarpit.listen(0, '127.0.0.1', () => resolve()));
  tarpitUrl = `http://127.0.0.1:${(tarpit.address() as AddressInfo).port}`;
});
afterAll(async () => {
  tarpit.closeAllConnections();
  await new Promise((resolve) => tarpit.close(resolve));
  await stack.close();
  await origin.close();
});

async function createJob(key: string, body: Record<string, unknown>): Promise<string> {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  return res.body.job_id as string;
}

describe('preparing', () => {
  it('a job whose URLs never answer fails after PREPARE_TIMEOUT_MS with "preparing took too long"', async () => {
    const slow = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
    const tarpitJobs: string[] = [];
    for (let j = 0; j < 2; j++) {
      tarpitJobs.push(await createJob(slow, { ...SPLIT, files: Array.from({ length: 40 }, (_, i) => ({ url: `${tarpitUrl}/${j}/${i}.bin` })) }));
    }
    for (const id of tarpitJobs) {
      const job = await waitForJob(stack.url, slow, id, ['completed', 'failed'], 5 * PREPARE_TIMEOUT_MS);
      expect(job.status).toBe('failed');
      expect(job.errors).toContainEqual({ url: '', error: 'preparing took too long' });
    }
  }, 90_000);
});
