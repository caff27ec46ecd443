// The stand-in against S3's documented rules for UploadPartCopy (ranges, source conditions), GetObject's conditions, ListObjectsV2 and CRC32
// checksums, through the AWS SDK as a real client: what S3 refuses, it refuses the same way.
import { createHash, randomBytes } from 'node:crypto';
import {
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { crc32 } from '@ap/zip';
import { crc32Base64 } from './s3-checksums';
import type { EmbeddedS3 } from './embedded';
import { S3_MULTIPART_LIMITS } from './s3-multipart-rules';
import { refusal } from '../test/s3-refusal';
import { startStandInS3, type StandInS3 } from '../test/stand-in-s3';

const Bucket = 'stand-in';
const MIN = S3_MULTIPART_LIMITS.minPartSize;
let standIn: StandInS3;
let s3: EmbeddedS3;
let client: S3Client;

beforeAll(async () => {
  standIn = await startStandInS3(Bucket);
  ({ s3, client } = standIn);
});

afterAll(async () => {
  await standIn.close();
});

const uniqueKey = (stem: string) => `${stem}-${randomBytes(4).toString('hex')}`;
const md5Etag = (bytes: Buffer) => `"${createHash('md5').update(bytes).digest('hex')}"`;

async function put(Key: string, Body: Buffer, withCrc = false): Promise<void> {
  await client.send(new PutObjectCommand({ Bucket, Key, Body, ...(withCrc ? { ChecksumCRC32: crc32Base64(crc32(Body)) } : {}) }));
}

async function read(Key: string): Promise<Buffer> {
  const out = await client.send(new GetObjectCommand({ Bucket, Key }));
  return Buffer.from(await out.Body!.transformToByteArray());
}

describe('UploadPartCopy', () => {
  let source: Buffer;
  const sourceKey = 'copy/source object+1.bin';
  beforeAll(async () => {
    source = randomBytes(MIN + 300_000);
    await put(sourceKey, source);
  });

  const copySource = `${Bucket}/${encodeURIComponent(sourceKey)}`;
  const start = async (extra: Record<string, string> = {}) => {
    const Key = uniqueKey('copied');
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key, ...extra }));
    return { Key, UploadId: UploadId! };
  };

  it('copies byte ranges (first-last, inclusive) and whole objects into parts, with the ETag of the bytes', async () => {
    const { Key, UploadId } = await start();
    const first = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: `bytes=100-${100 + MIN - 1}` }));
    const middle = Buffer.from('uploaded between two copies');
    const second = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 2, Body: Buffer.concat([middle, randomBytes(MIN)]) }));
    const third = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 3, CopySource: `/${copySource}` }));
    expect(first.CopyPartResult?.ETag).toBe(md5Etag(source.subarray(100, 100 + MIN)));
    expect(third.CopyPartResult?.ETag).toBe(md5Etag(source));
    const parts = [first.CopyPartResult!.ETag, second.ETag, third.CopyPartResult!.ETag].map((ETag, i) => ({ ETag, PartNumber: i + 1 }));
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
    const object = await read(Key);
    expect(object.length).toBe(MIN + middle.length + MIN + source.length);
    expect(object.subarray(0, MIN).equals(source.subarray(100, 100 + MIN))).toBe(true);
    expect(object.subarray(MIN, MIN + middle.length).equals(middle)).toBe(true);
    expect(object.subarray(-source.length).equals(source)).toBe(true);
  });

  it('refuses a range that is not bytes=first-last with first <= last: InvalidArgument', async () => {
    const { Key, UploadId } = await start();
    for (const CopySourceRange of ['bytes=5-', 'bytes=-5', 'bytes=10-5', '5-10', 'bytes=0-1,3-4']) {
      expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange })))).toEqual([
        'InvalidArgument',
        400,
      ]);
    }
  });

  it('refuses a range past the end of the source: InvalidArgument; the last byte itself is fine', async () => {
    const { Key, UploadId } = await start();
    const lastByte = source.length - 1;
    expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: `bytes=0-${lastByte + 1}` })))).toEqual([
      'InvalidArgument',
      400,
    ]);
    const ok = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: `bytes=${lastByte}-${lastByte}` }));
    expect(ok.CopyPartResult?.ETag).toBe(md5Etag(source.subarray(lastByte)));
  });

  it('refuses a missing source (NoSuchKey), a missing bucket (NoSuchBucket), an unknown upload (NoSuchUpload), a bad part number', async () => {
    const { Key, UploadId } = await start();
    expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: `${Bucket}/no-such-key` })))).toEqual(['NoSuchKey', 404]);
    expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: `no-such-bucket/${sourceKey}` })))).toEqual(['NoSuchBucket', 404]);
    expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId: 'abc123', PartNumber: 1, CopySource: copySource })))).toEqual(['NoSuchUpload', 404]);
    expect(await refusal(client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 10_001, CopySource: copySource })))).toEqual(['InvalidArgument', 400]);
  });

  it('copies only when the source conditions hold (if-match, if-none-match, if-modified-since, if-unmodified-since): else PreconditionFailed, nothing copied', async () => {
    const { Key, UploadId } = await start();
    const etag = md5Etag(source);
    const past = new Date(Date.now() - 3_600_000);
    const future = new Date(Date.now() + 3_600_000);
    const copy = (conditions: Record<string, unknown>) =>
      client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: 'bytes=0-99', ...conditions }));
    const refused: Record<string, unknown>[] = [
      { CopySourceIfMatch: '"0123456789abcdef0123456789abcdef"' },
      { CopySourceIfNoneMatch: etag },
      { CopySourceIfNoneMatch: '*' },
      { CopySourceIfModifiedSince: future },
      { CopySourceIfUnmodifiedSince: past },
      // A false if-none-match fails even when if-modified-since holds.
      { CopySourceIfNoneMatch: etag, CopySourceIfModifiedSince: past },
    ];
    for (const conditions of refused) expect({ conditions, refused: await refusal(copy(conditions)) }).toEqual({ conditions, refused: ['PreconditionFailed', 412] });
    const accepted: Record<string, unknown>[] = [
      { CopySourceIfMatch: etag },
      { CopySourceIfMatch: etag.slice(1, -1) },
      { CopySourceIfMatch: '*' },
      { CopySourceIfNoneMatch: '"0123456789abcdef0123456789abcdef"' },
      { CopySourceIfModifiedSince: past },
      { CopySourceIfUnmodifiedSince: future },
      // A true if-match copies even when if-unmodified-since does not hold.
      { CopySourceIfMatch: etag, CopySourceIfUnmodifiedSince: past },
    ];
    for (const conditions of accepted) expect({ conditions, etag: (await copy(conditions)).CopyPartResult?.ETag }).toEqual({ conditions, etag: md5Etag(source.subarray(0, 100)) });
    // The upload holds the one part the accepted copies wrote.
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: md5Etag(source.subarray(0, 100)) }] } }));
    expect((await read(Key)).equals(source.subarray(0, 100))).toBe(true);
  });

  it('holds a copied part to the 5 MiB minimum at completion: EntityTooSmall', async () => {
    const { Key, UploadId } = await start();
    const small = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: 'bytes=0-1023' }));
    const last = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 2, Body: Buffer.from('end') }));
    const Parts: CompletedPart[] = [
      { PartNumber: 1, ETag: small.CopyPartResult!.ETag },
      { PartNumber: 2, ETag: last.ETag },
    ];
    expect(await refusal(client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } })))).toEqual(['EntityTooSmall', 400]);
  });

  it('gives a copied part its CRC32 in an upload created with that algorithm, and the object its full-object CRC32', async () => {
    const { Key, UploadId } = await start({ ChecksumAlgorithm: 'CRC32', ChecksumType: 'FULL_OBJECT' } as Record<string, string>);
    const range = source.subarray(7, 7 + MIN);
    const copied = await client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: copySource, CopySourceRange: `bytes=7-${7 + MIN - 1}` }));
    expect(copied.CopyPartResult?.ChecksumCRC32).toBe(crc32Base64(crc32(range)));
    const tail = Buffer.from('tail');
    const up = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 2, Body: tail, ChecksumCRC32: crc32Base64(crc32(tail)) }));
    const Parts = [
      { PartNumber: 1, ETag: copied.CopyPartResult!.ETag },
      { PartNumber: 2, ETag: up.ETag },
    ];
    const done = await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }));
    const whole = crc32Base64(crc32(Buffer.concat([range, tail])));
    expect(done.ChecksumCRC32).toBe(whole);
    const head = await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }));
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([whole, 'FULL_OBJECT']);
  });
});

describe('GetObject and HeadObject conditions', () => {
  it('answer a false If-Match or If-Unmodified-Since with 412 PreconditionFailed; a true If-Match makes If-Unmodified-Since moot', async () => {
    const Key = uniqueKey('conditional');
    const body = randomBytes(1000);
    await put(Key, body);
    const etag = md5Etag(body);
    const past = new Date(Date.now() - 3_600_000);
    const get = (conditions: Record<string, unknown>) => client.send(new GetObjectCommand({ Bucket, Key, Range: 'bytes=0-9', ...conditions }));
    for (const conditions of [{ IfMatch: '"0123456789abcdef0123456789abcdef"' }, { IfUnmodifiedSince: past }]) {
      // A HEAD answer has no body to name the error in: the status says it.
      const head = (await refusal(client.send(new HeadObjectCommand({ Bucket, Key, ...conditions }))))[1];
      expect({ conditions, get: await refusal(get(conditions)), head }).toEqual({ conditions, get: ['PreconditionFailed', 412], head: 412 });
    }
    for (const conditions of [{ IfMatch: etag }, { IfMatch: '*' }, { IfMatch: etag, IfUnmodifiedSince: past }, { IfUnmodifiedSince: new Date(Date.now() + 3_600_000) }]) {
      const out = await get(conditions);
      expect({ conditions, bytes: Buffer.from(await out.Body!.transformToByteArray()).equals(body.subarray(0, 10)) }).toEqual({ conditions, bytes: true });
    }
  });
});

describe('ListObjectsV2', () => {
  const ListBucket = 'listing';
  // 1,010 keys: nested folders, and names whose characters sort before "/" (S3 orders by UTF-8 bytes).
  const keys = Array.from({ length: 1010 }, (_, i) => {
    const n = String(i).padStart(4, '0');
    return i % 3 === 0 ? `p/${n}` : i % 3 === 1 ? `p/${n}/deeper/x` : `p/${n}-b`;
  }).concat(['p-outside', 'q/also-outside', 'p/é', 'p/z']);
  beforeAll(async () => {
    await client.send(new CreateBucketCommand({ Bucket: ListBucket }));
    for (let i = 0; i < keys.length; i += 25) {
      await Promise.all(keys.slice(i, i + 25).map((Key) => client.send(new PutObjectCommand({ Bucket: ListBucket, Key, Body: Buffer.from(Key) }))));
    }
  }, 120_000);

  const inS3Order = (list: string[]) => [...list].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));

  it('pages through every key under a prefix in key order: max-keys defaults to and is capped at 1,000', async () => {
    const expected = inS3Order(keys.filter((k) => k.startsWith('p/')));
    const seen: string[] = [];
    const pages: Array<[number, boolean]> = [];
    let ContinuationToken: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: ListBucket, Prefix: 'p/', ContinuationToken, ...(pages.length === 0 ? { MaxKeys: 5000 } : {}) }));
      seen.push(...(page.Contents ?? []).map((c) => c.Key!));
      pages.push([page.KeyCount!, page.IsTruncated!]);
      ContinuationToken = page.NextContinuationToken;
      expect(Boolean(ContinuationToken)).toBe(page.IsTruncated);
    } while (ContinuationToken);
    expect(pages).toEqual([
      [1000, true],
      [expected.length - 1000, false],
    ]);
    expect(seen).toEqual(expected);
  });

  it('counts common prefixes toward max-keys and pages through them; start-after skips what sorts before', async () => {
    const all: string[] = [];
    let ContinuationToken: string | undefined;
    let pages = 0;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: ListBucket, Prefix: 'p/', Delimiter: '/', MaxKeys: 150, ContinuationToken }));
      all.push(...(page.Contents ?? []).map((c) => c.Key!), ...(page.CommonPrefixes ?? []).map((c) => c.Prefix!));
      expect(page.KeyCount).toBe((page.Contents?.length ?? 0) + (page.CommonPrefixes?.length ?? 0));
      expect(page.KeyCount!).toBeLessThanOrEqual(150);
      ContinuationToken = page.NextContinuationToken;
      pages++;
    } while (ContinuationToken);
    const expected = new Set(keys.filter((k) => k.startsWith('p/')).map((k) => (k.indexOf('/', 2) === -1 ? k : k.slice(0, k.indexOf('/', 2) + 1))));
    expect(inS3Order(all)).toEqual(inS3Order([...expected]));
    expect(new Set(all).size).toBe(all.length);
    expect(pages).toBe(Math.ceil(expected.size / 150));

    const after = await client.send(new ListObjectsV2Command({ Bucket: ListBucket, Prefix: 'p/', StartAfter: 'p/1000' }));
    expect(after.Contents!.map((c) => c.Key)).toEqual(inS3Order(keys.filter((k) => k.startsWith('p/') && Buffer.compare(Buffer.from(k), Buffer.from('p/1000')) > 0)));
  });

  it('refuses a continuation token it did not issue and a max-keys that is not a non-negative integer: InvalidArgument', async () => {
    expect(await refusal(client.send(new ListObjectsV2Command({ Bucket: ListBucket, ContinuationToken: 'bm90IGEgdG9rZW4=' })))).toEqual(['InvalidArgument', 400]);
    const page = await client.send(new ListObjectsV2Command({ Bucket: ListBucket, MaxKeys: 1 }));
    expect(await refusal(client.send(new ListObjectsV2Command({ Bucket, ContinuationToken: page.NextContinuationToken })))).toEqual(['InvalidArgument', 400]);
    expect(await refusal(client.send(new ListObjectsV2Command({ Bucket: ListBucket, MaxKeys: -1 })))).toEqual(['InvalidArgument', 400]);
  });
});

describe('CRC32 checksums', () => {
  it('checks x-amz-checksum-crc32 on PutObject, stores it, and returns it only with checksum mode on a whole-object read', async () => {
    const Key = uniqueKey('crc');
    const body = randomBytes(100_000);
    await put(Key, body, true);
    const head = await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }));
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([crc32Base64(crc32(body)), 'FULL_OBJECT']);
    // The SDK checks the returned checksum against the body it reads.
    const got = await client.send(new GetObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }));
    expect(Buffer.from(await got.Body!.transformToByteArray()).equals(body)).toBe(true);
    expect(got.ChecksumCRC32).toBe(crc32Base64(crc32(body)));
    expect((await client.send(new HeadObjectCommand({ Bucket, Key }))).ChecksumCRC32).toBeUndefined();
    const ranged = await client.send(new GetObjectCommand({ Bucket, Key, Range: 'bytes=0-9', ChecksumMode: 'ENABLED' }));
    expect(ranged.ChecksumCRC32).toBeUndefined();
    await ranged.Body!.transformToByteArray();
    // Overwritten without a checksum: none is left.
    await put(Key, body);
    expect((await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }))).ChecksumCRC32).toBeUndefined();
  });

  it('refuses bytes that do not match the checksum (BadDigest, nothing stored) and a malformed checksum (InvalidRequest)', async () => {
    const Key = uniqueKey('crc-bad');
    const body = randomBytes(1000);
    expect(await refusal(client.send(new PutObjectCommand({ Bucket, Key, Body: body, ChecksumCRC32: crc32Base64(crc32(body) ^ 1) })))).toEqual(['BadDigest', 400]);
    expect(await refusal(client.send(new HeadObjectCommand({ Bucket, Key })))).toEqual(['NotFound', 404]);
    expect(await refusal(client.send(new PutObjectCommand({ Bucket, Key, Body: body, ChecksumCRC32: 'not-base64!' })))).toEqual(['InvalidRequest', 400]);
  });

  it('gives a FULL_OBJECT multipart upload the CRC32 of all its bytes, checking each part and the completion', async () => {
    const Key = uniqueKey('full');
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'CRC32', ChecksumType: 'FULL_OBJECT' }));
    const bodies = [randomBytes(MIN), randomBytes(12345)];
    expect(await refusal(client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: bodies[0] })))).toEqual(['InvalidRequest', 400]);
    expect(await refusal(client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: bodies[0], ChecksumCRC32: crc32Base64(crc32(bodies[1]!)) })))).toEqual(['BadDigest', 400]);
    const Parts = await Promise.all(
      bodies.map(async (Body, i) => {
        const out = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body, ChecksumCRC32: crc32Base64(crc32(Body)) }));
        expect(out.ChecksumCRC32).toBe(crc32Base64(crc32(Body)));
        return { PartNumber: i + 1, ETag: out.ETag };
      }),
    );
    const whole = crc32Base64(crc32(Buffer.concat(bodies)));
    expect(
      await refusal(client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts }, ChecksumCRC32: crc32Base64(crc32(bodies[0]!)), ChecksumType: 'FULL_OBJECT' }))),
    ).toEqual(['BadDigest', 400]);
    const done = await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts }, ChecksumCRC32: whole, ChecksumType: 'FULL_OBJECT' }));
    expect([done.ChecksumCRC32, done.ChecksumType]).toEqual([whole, 'FULL_OBJECT']);
    const head = await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }));
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([whole, 'FULL_OBJECT']);
  });

  it('gives a CRC32 upload without a type a COMPOSITE checksum (the CRC32 of the part CRC32s, "-<parts>")', async () => {
    const Key = uniqueKey('composite');
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumAlgorithm: 'CRC32' }));
    const bodies = [randomBytes(MIN), randomBytes(10)];
    const Parts = await Promise.all(
      bodies.map(async (Body, i) => {
        const out = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: i + 1, Body, ChecksumCRC32: crc32Base64(crc32(Body)) }));
        return { PartNumber: i + 1, ETag: out.ETag, ChecksumCRC32: out.ChecksumCRC32 };
      }),
    );
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }));
    const head = await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }));
    const ofParts = Buffer.concat(bodies.map((b) => Buffer.from(crc32Base64(crc32(b)), 'base64')));
    expect([head.ChecksumCRC32, head.ChecksumType]).toEqual([`${crc32Base64(crc32(ofParts))}-2`, 'COMPOSITE']);
  });

  it('checks a part checksum in an upload created without an algorithm (the object gets none), and refuses a checksum type without an algorithm', async () => {
    const Key = uniqueKey('plain');
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    const Body = Buffer.from('x');
    expect(await refusal(client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body, ChecksumCRC32: crc32Base64(crc32(Body) ^ 1) })))).toEqual(['BadDigest', 400]);
    const part = await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body, ChecksumCRC32: crc32Base64(crc32(Body)) }));
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] } }));
    expect((await client.send(new HeadObjectCommand({ Bucket, Key, ChecksumMode: 'ENABLED' }))).ChecksumCRC32).toBeUndefined();
    expect(await refusal(client.send(new CreateMultipartUploadCommand({ Bucket, Key, ChecksumType: 'FULL_OBJECT' })))).toEqual(['InvalidRequest', 400]);
  });
});
