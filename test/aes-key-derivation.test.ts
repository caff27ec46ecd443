// AES key derivation for encrypted stream ZIPs (docs/archive-options.md#key-derivation): every
// key a download needs is derived on the thread pool, never on the event loop, and kept per
// ZIP, so a second download and a resume of the same ZIP derive no key again.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { aesKeyDerivations } from '@ap/zip';
import { readAesZip } from '../packages/zip/src/testing-aes';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';

const PASSWORD = 'key-derivation-test';
const ENTRIES = 300;

let stack: Stack;
let origin: Origin;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

describe('an encrypted stream ZIP of many entries', () => {
  it('derives every key off the event loop, once: a second download and a resume derive none', async () => {
    const { apiKey } = await createUser(stack.ctx, { plan: 'pro' });
    const bodies = Array.from({ length: ENTRIES }, (_, i) => bytesOf(5000 + i, 40 + i));
    const files = bodies.map((body, i) => ({ url: origin.set(`/keys/${i}.bin`, { body }) }));
    const created = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files, mode: 'stream', encryption: { method: 'aes-256', password: PASSWORD } } });
    expect(created.status).toBe(201);
    const job = await waitForJob(stack.url, apiKey, created.body.job_id, ['completed'], 120_000);
    const url: string = job.zips[0].download_url;

    const before = { ...aesKeyDerivations };
    const first = await download(url);
    expect(first.status).toBe(200);
    expect(aesKeyDerivations.onLoop).toBe(before.onLoop);
    expect(aesKeyDerivations.offLoop - before.offLoop).toBe(ENTRIES);
    const read = readAesZip(first.body, PASSWORD);
    expect(read.map((e) => e.data.equals(bodies[read.indexOf(e)]!))).toEqual(Array(ENTRIES).fill(true));

    const derived = { ...aesKeyDerivations };
    const second = await download(url);
    expect(second.body.equals(first.body)).toBe(true);
    const half = Math.floor(first.body.length / 2);
    const resumed = await download(url, { range: `bytes=${half}-`, 'if-range': first.headers.get('etag')! });
    expect(resumed.status).toBe(206);
    expect(resumed.body.equals(first.body.subarray(half))).toBe(true);
    expect({ ...aesKeyDerivations }).toEqual(derived);
  }, 240_000);
});
