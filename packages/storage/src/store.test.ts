// The object store against a real S3 protocol server (the test run's s3rver).
import { createHash, randomBytes, randomInt } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from '@jest/globals';
import { loadConfig } from '@ap/config';
import { storageConfig } from '@ap/service-kit';
import { createObjectStore, partBuffers, type UploadedPart } from './index';

const MiB = 1024 * 1024;
const PART = 5 * MiB; // S3's smallest part
const store = createObjectStore(storageConfig(loadConfig()));
const keys: string[] = [];
afterAll(() => store.deleteMany(keys));

/** `data` as a stream of random chunk sizes; with `fail`, it fails after `fail.after` bytes once `fail.when` resolves. */
function source(data: Buffer, fail?: { after: number; when: () => Promise<void> }): Readable {
  return Readable.from(
    (async function* () {
      for (let at = 0; at < data.length; ) {
        if (fail && at >= fail.after) {
          await fail.when();
          throw new Error('origin went away');
        }
        const n = Math.min(data.length - at, randomInt(1, 300 * 1024));
        yield data.subarray(at, at + n);
        at += n;
      }
    })(),
    { objectMode: false },
  );
}

async function stored(key: string): Promise<Buffer> {
  const { body } = await store.read(key);
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('object store on S3 (s3rver)', () => {
  it.each([
    ['smaller than a part (one PUT)', 100_000, []],
    ['exactly one part', PART, [PART]],
    ['exactly three parts', 3 * PART, [PART, PART, PART]],
    ['three parts and a short one', 3 * PART + 12_345, [PART, PART, PART, 12_345]],
  ])('uploads a stream %s with the bytes unchanged', async (_what, size, expectedParts) => {
    const data = randomBytes(size);
    const key = `store-test/${randomBytes(6).toString('hex')}`;
    keys.push(key);
    const parts: UploadedPart[] = [];
    const info = await store.upload(key, source(data), { partSize: PART, multipart: { onStart: () => undefined, onPart: (_id, part) => parts.push(part) } });
    expect(info.size).toBe(size);
    expect(sha(await stored(key))).toBe(sha(data));
    expect(parts.sort((a, b) => a.partNumber - b.partNumber).map((p) => p.size)).toEqual(expectedParts);
  });

  it('holds at most two part buffers per upload, and gives them all back', async () => {
    const data = randomBytes(8 * PART + 1);
    const key = `store-test/${randomBytes(6).toString('hex')}`;
    keys.push(key);
    await store.upload(key, source(data), { partSize: PART });
    expect(sha(await stored(key))).toBe(sha(data));
    // Nine parts, and the uploads before in this file, went through the same two buffers.
    expect(partBuffers.allocated).toBe(2);
    expect(partBuffers.idleSize).toBe(2 * PART);
  });

  it('fails with the source’s error, and a resume after the stored parts completes the same object', async () => {
    const data = randomBytes(4 * PART + 999);
    const key = `store-test/${randomBytes(6).toString('hex')}`;
    keys.push(key);
    let uploadId = '';
    const parts: UploadedPart[] = [];
    const twoStored = async () => {
      while (parts.length < 2) await new Promise((r) => setTimeout(r, 10));
    };
    await expect(
      store.upload(key, source(data, { after: 3 * PART, when: twoStored }), { partSize: PART, multipart: { onStart: (id) => (uploadId = id), onPart: (_id, part) => parts.push(part) } }),
    ).rejects.toThrow('origin went away');
    expect(uploadId).not.toBe('');
    // Every buffer came back, those of parts in flight when the source failed included.
    expect(partBuffers.idleSize).toBe(partBuffers.allocated * PART);

    // The contiguous prefix of stored parts, as the packer keeps it.
    parts.sort((a, b) => a.partNumber - b.partNumber);
    const prefix = parts.filter((p, i) => p.partNumber === i + 1);
    expect(prefix.length).toBeGreaterThanOrEqual(2);
    const resumeAt = prefix.length * PART;
    const resumed: UploadedPart[] = [];
    const info = await store.resumeUpload(key, {
      uploadId,
      partSize: PART,
      stored: prefix,
      body: source(data.subarray(resumeAt)),
      onPart: async (part) => void resumed.push(part),
    });
    expect(info.size).toBe(data.length);
    expect(sha(await stored(key))).toBe(sha(data));
    expect(resumed.map((p) => p.partNumber).sort((a, b) => a - b)).toEqual(Array.from({ length: 5 - prefix.length }, (_, i) => prefix.length + 1 + i));
    expect(partBuffers.idleSize).toBe(partBuffers.allocated * PART);
  });

  it('copies and reads an object only while it has the ETag it was learned with: once it changed, 412 PreconditionFailed and nothing written', async () => {
    const source = `store-test/${randomBytes(6).toString('hex')}`;
    const target = `store-test/${randomBytes(6).toString('hex')}`;
    keys.push(source, target);
    const first = randomBytes(PART + 10);
    await store.upload(source, Readable.from([first]));
    const learned = (await store.headChecksum({ bucket: store.bucket, key: source }))!.etag;
    const at = (etag: string) => ({ bucket: store.bucket, key: source, etag });
    const copyOf = (etag: string) => store.assemble(target, [{ kind: 'copy', source: at(etag), start: 0, end: PART + 9 }], { concurrency: 1 });
    const read = async (etag: string) => Buffer.concat(await (await store.readFrom(at(etag), { start: 0, end: 99 })).body.toArray());
    expect((await read(learned)).equals(first.subarray(0, 100))).toBe(true);
    await copyOf(learned);
    expect((await stored(target)).equals(first)).toBe(true);
    await store.deleteMany([target]);

    await store.upload(source, Readable.from([randomBytes(PART + 10)])); // the same size, other bytes
    const refused = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { name?: string; $metadata?: { httpStatusCode?: number } }) => [err.name, err.$metadata?.httpStatusCode]);
    expect(await refused(copyOf(learned))).toEqual(['PreconditionFailed', 412]);
    expect(await refused(read(learned))).toEqual(['PreconditionFailed', 412]);
    expect(await store.head(target)).toBeNull();
  });
});
