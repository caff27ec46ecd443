// Hardening 3, item 2 (docs/guarantees.md#hardening-third-round-items-1-6): the plan's
// per-archive limit holds in every mode. Sizes known while preparing are judged there, before
// a byte is fetched: a stream ZIP over the plan's stream limit, and a split bin of one file over
// max_zip_size_bytes (allow_oversize_zips) and over the plan's limit, fail the job.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PLANS } from '@ap/contract';
import { call, createUser, waitForJob } from './helpers';
import { startSyntheticOrigin, type SyntheticOrigin } from './synthetic-origin';
import { startStack, type Stack } from './stack';

const TOO_LARGE = "archive exceeds the plan's per-archive limit";
let stack: Stack;
let origin: SyntheticOrigin;
let key: string;

beforeAll(async () => {
  origin = await startSyntheticOrigin();
  stack = await startStack();
  key = (await createUser(stack.ctx, { plan: 'free' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

async function run(body: Record<string, unknown>) {
  const created = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(created.status).toBe(201);
  return waitForJob(stack.url, key, created.body.job_id, ['completed', 'failed'], 20_000);
}

describe("hardening 3, item 2: the per-archive limit holds in every mode", () => {
  const half = Math.ceil(PLANS.free.streamArchiveBytes / 2) + 1_000;

  it('a stream job whose ZIP would be over the plan\'s stream limit fails while preparing, and one just under it completes', async () => {
    const over = await run({ mode: 'stream', files: [{ url: `${origin.url}/zeros/${half}/a.bin` }, { url: `${origin.url}/zeros/${half}/b.bin` }] });
    expect({ status: over.status, errors: over.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: TOO_LARGE }] });
    const under = await run({ mode: 'stream', files: [{ url: `${origin.url}/zeros/${half}/a.bin` }] });
    expect(under.status).toBe('completed');
  });

  it('a split bin holding one file over the plan\'s per-archive limit fails while preparing: no byte of it is fetched', async () => {
    const before = origin.bytesSent;
    const big = PLANS.free.storedArchiveBytes + 1;
    const job = await run({ max_zip_size_bytes: 104_857_600, allow_oversize_zips: true, files: [{ url: `${origin.url}/zeros/${big}/big.bin` }, { url: `${origin.url}/tiny/1/small.txt` }] });
    expect({ status: job.status, errors: job.errors }).toEqual({ status: 'failed', errors: [{ url: '', error: TOO_LARGE }] });
    expect(origin.bytesSent - before).toBeLessThan(1_000);
  });
});
