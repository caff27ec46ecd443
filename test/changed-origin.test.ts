// An origin that changes a file's bytes without changing validators (it sends none): a stream
// download that finds other bytes than its layout learned ends as a cut connection, never a
// complete-looking ZIP with the old CRC or MAC, and the next download learns the file again
// and is a correct ZIP of the new bytes. Plain and AES-256 (docs/archive-options.md#changed-origins).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readAesZip } from '../packages/zip/src/testing-aes';
import { call, createUser, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const PASSWORD = 'changed-origin-test';

let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

/** A whole GET: its bytes, and whether the body ended complete (Content-Length reached) or was cut. */
async function fullGet(url: string): Promise<{ status: number; complete: boolean; body: Buffer }> {
  const res = await fetch(url);
  const length = Number(res.headers.get('content-length'));
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  } catch {
    // A cut connection: what arrived is kept.
  }
  const body = Buffer.concat(chunks);
  return { status: res.status, complete: body.length === length, body };
}

/** 7-Zip tests every entry's MAC (AES) or CRC. */
function sevenZipTest(bytes: Buffer, password?: string): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-changed-'));
  try {
    writeFileSync(path.join(dir, 'a.zip'), bytes);
    execFileSync('7z', ['t', ...(password ? [`-p${password}`] : []), path.join(dir, 'a.zip')], { stdio: 'pipe' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe.each([
  ['plain', {}],
  ['AES-256', { encryption: { method: 'aes-256', password: PASSWORD } }],
])('a %s stream ZIP whose origin changes bytes without validators', (mode, options) => {
  it('cuts the download that finds the change, and the next one is a correct ZIP of the new bytes', async () => {
    const name = mode === 'plain' ? 'p' : 'a';
    const before = bytesOf(900, 300_000);
    const after = bytesOf(901, 300_000);
    const last = bytesOf(902, 5_000);
    const changing = origin.set(`/changing/${name}/data.bin`, { body: before });
    const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: changing }, { url: origin.set(`/changing/${name}/last.bin`, { body: last }) }], mode: 'stream', ...options } });
    expect(res.status).toBe(201);
    const job = await waitForJob(stack.url, key, res.body.job_id, ['completed']);
    const url: string = job.zips[0].download_url;
    const check = async (zip: Buffer, bodies: Buffer[]) => {
      if (mode === 'plain') expect((await readZip(zip)).map((e) => e.sha256)).toEqual(bodies.map(sha256));
      else expect(readAesZip(zip, PASSWORD).map((e) => sha256(e.data))).toEqual(bodies.map(sha256));
      sevenZipTest(zip, mode === 'plain' ? undefined : PASSWORD);
    };

    const first = await fullGet(url);
    expect(first.complete).toBe(true);
    await check(first.body, [before, last]);

    origin.set(`/changing/${name}/data.bin`, { body: after });
    const second = await fullGet(url);
    expect(second.status).toBe(200);
    // Cut: the old sum never goes out after the new bytes.
    expect(second.complete).toBe(false);

    const third = await fullGet(url);
    expect(third.complete).toBe(true);
    await check(third.body, [after, last]);
  }, 120_000);
});
