// No AES entry's keystream ever encrypts two different plaintexts
// (docs/archive-options.md#changed-origins): an origin changes one block of a file without
// validators between downloads of an AES stream ZIP. Every pair of responses is compared
// byte for byte where an entry has the same salt: same salt and key with other ciphertext
// would mean other plaintext under one keystream. The download that meets the change is cut
// before the changed block is encrypted; the next one has a fresh salt and is a correct ZIP.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readAesZip } from '../packages/zip/src/testing-aes';
import { closeFaultSuite, startFaultSuite, type FaultSuite } from './fault-fixtures';
import { call, waitForJob } from './helpers';
import { bytesOf, sha256, type Origin } from './origin';
import type { Stack } from './stack';

const PASSWORD = 'keystream-test-password';
const MiB = 1 << 20;

let suite: FaultSuite;
let stack: Stack;
let origin: Origin;
let key: string;

beforeAll(async () => {
  suite = await startFaultSuite();
  ({ stack, origin, key } = suite);
});
afterAll(() => closeFaultSuite(suite));

/** A whole GET: what arrived (a cut connection keeps what came before it) and the ETag. */
async function fullGet(url: string): Promise<{ complete: boolean; body: Buffer; etag: string | null }> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  const length = res.headers.get('content-length');
  const chunks: Buffer[] = [];
  let cut = false;
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  } catch {
    cut = true;
  }
  const body = Buffer.concat(chunks);
  return { complete: !cut && (length === null || body.length === Number(length)), body, etag: res.headers.get('etag') };
}

/** Same salt in two responses means same keystream: their ciphertexts must then agree byte for byte. Returns the pairs compared. */
function expectNoKeystreamReuse(responses: readonly { body: Buffer }[], entries: readonly { name: string; dataAt: number; length: number }[]): number {
  let sameSaltPairs = 0;
  for (const { name, dataAt, length } of entries) {
    for (let a = 0; a < responses.length; a++) {
      for (let b = a + 1; b < responses.length; b++) {
        const [x, y] = [responses[a]!.body, responses[b]!.body];
        if (x.length < dataAt + 16 || y.length < dataAt + 16 || !x.subarray(dataAt, dataAt + 16).equals(y.subarray(dataAt, dataAt + 16))) continue;
        sameSaltPairs++;
        const end = Math.min(dataAt + 18 + length, x.length, y.length);
        const differsAt = x.subarray(dataAt + 18, end).findIndex((byte, i) => byte !== y[dataAt + 18 + i]);
        expect({ name, pair: [a + 1, b + 1], differsAt }).toEqual({ name, pair: [a + 1, b + 1], differsAt: -1 });
      }
    }
  }
  return sameSaltPairs;
}

/** Where each entry's salt and ciphertext sit, from a complete ZIP's central directory (the layout is the same in every response). */
function entriesOf(zip: Buffer): { name: string; dataAt: number; length: number }[] {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  let at = zip.readUInt32LE(eocd + 16);
  return Array.from({ length: zip.readUInt16LE(eocd + 10) }, () => {
    const nameLength = zip.readUInt16LE(at + 28);
    const compressed = zip.readUInt32LE(at + 20);
    const offset = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    return { name, dataAt: offset + 30 + zip.readUInt16LE(offset + 26) + zip.readUInt16LE(offset + 28), length: compressed - 28 };
  });
}

describe('an AES stream ZIP whose origin changes a block without validators', () => {
  it('never sends other plaintext under a salt already used: the download meeting the change is cut before the block, the next has a fresh salt', async () => {
    const before = bytesOf(910, 3 * MiB + 1000);
    // Only the third block differs: the first two may go out again, the third must not.
    const after = Buffer.from(before);
    bytesOf(911, 1000).copy(after, 2 * MiB + 5000);
    const path = '/keystream/data.bin';
    const file = origin.set(path, { body: before });
    const tail = origin.set('/keystream/tail.bin', { body: bytesOf(912, 4000) });
    const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: file }, { url: tail }], mode: 'stream', encryption: { method: 'aes-256', password: PASSWORD } } });
    expect(res.status).toBe(201);
    const url: string = (await waitForJob(stack.url, key, res.body.job_id, ['completed'])).zips[0].download_url;

    const first = await fullGet(url);
    expect(first.complete).toBe(true);
    expect(sha256(readAesZip(first.body, PASSWORD)[0]!.data)).toBe(sha256(before));
    const entries = entriesOf(first.body);

    origin.set(path, { body: after });
    const second = await fullGet(url);
    expect(second.complete).toBe(false);
    const third = await fullGet(url);
    const fourth = await fullGet(url);

    // The comparison saw the cases that matter: the cut response shares the first salt.
    expect(expectNoKeystreamReuse([first, second, third, fourth], entries)).toBeGreaterThanOrEqual(3);
    expect(second.body.length).toBeGreaterThan(entries[0]!.dataAt + 18);
    // Nothing of the changed block went out: the check comes before its encryption.
    expect(second.body.length).toBeLessThanOrEqual(entries[0]!.dataAt + 18 + 2 * MiB);

    expect(third.complete).toBe(true);
    expect(readAesZip(third.body, PASSWORD).map((e) => sha256(e.data))).toEqual([sha256(after), sha256(bytesOf(912, 4000))]);
    // Other bytes: a range of the old ZIP must not be spliced onto the new one.
    expect(third.etag).not.toBe(first.etag);
    // Stable under the fresh salt, as Range and resume need.
    expect(fourth.body.equals(third.body)).toBe(true);
  }, 120_000);

  it('of unknown size (no Content-Length): the same, written whole each time', async () => {
    const before = bytesOf(920, 2 * MiB + 3000);
    const after = Buffer.from(before);
    bytesOf(921, 500).copy(after, MiB + 100);
    const file = origin.set('/keystream/chunked.bin', { body: before, chunked: true });
    const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: [{ url: file }], mode: 'stream', encryption: { method: 'aes-256', password: PASSWORD } } });
    expect(res.status).toBe(201);
    const url: string = (await waitForJob(stack.url, key, res.body.job_id, ['completed'])).zips[0].download_url;

    const first = await fullGet(url);
    expect(first.complete).toBe(true);
    const entries = entriesOf(first.body);
    origin.set('/keystream/chunked.bin', { body: after, chunked: true });
    const second = await fullGet(url);
    const third = await fullGet(url);
    expect(expectNoKeystreamReuse([first, second, third], entries)).toBeGreaterThanOrEqual(1);
    expect(second.complete).toBe(false);
    expect(second.body.length).toBeLessThanOrEqual(entries[0]!.dataAt + 18 + MiB);
    expect(third.complete).toBe(true);
    expect(readAesZip(third.body, PASSWORD).map((e) => sha256(e.data))).toEqual([sha256(after)]);
  }, 120_000);
});
