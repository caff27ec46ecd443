// What the fault suites (faults.test.ts, worker-faults.test.ts) share: a stack with a pro user
// and an origin, a job created through the API, a wait for a condition.
import { expect } from '@jest/globals';
import { call, createUser } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

export interface FaultSuite {
  stack: Stack;
  origin: Origin;
  /** A pro user's API key (the stacks of a run share the database: it works on every one). */
  key: string;
}

/** The suite's stack, origin and user (`workers: false` where its tests start their own). */
export async function startFaultSuite(options: Parameters<typeof startStack>[1] = {}): Promise<FaultSuite> {
  const stack = await startStack({}, options);
  const origin = await startOrigin();
  const key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  return { stack, origin, key };
}

export async function closeFaultSuite(suite: FaultSuite | undefined): Promise<void> {
  await suite?.stack.close();
  await suite?.origin.close();
}

export async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** POST /jobs, expecting 201; the job's id. */
export async function postJob(body: Record<string, unknown>, base: string, apiKey: string): Promise<string> {
  const res = await call(base, 'POST', '/jobs', { key: apiKey, body });
  expect(res.status).toBe(201);
  return res.body.job_id;
}

/** The `max_zip_size_bytes` of the split jobs (100 MiB), and body sizes in decimal megabytes. */
export const CAP = 104_857_600;
export const MB = 1_000_000;
