// The stand-in's answer for an upload it does not hold (never started, aborted or completed):
// NoSuchUpload, HTTP 404, as S3 documents it for UploadPart, UploadPartCopy,
// CompleteMultipartUpload, ListParts and AbortMultipartUpload, so a client can tell "start over"
// from a server fault.
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { EmbeddedS3 } from './embedded';
import { refusal } from '../test/s3-refusal';
import { startStandInS3, type StandInS3 } from '../test/stand-in-s3';

const Bucket = 'no-such-upload';
let standIn: StandInS3;
let s3: EmbeddedS3;
let client: S3Client;

beforeAll(async () => {
  standIn = await startStandInS3(Bucket);
  ({ s3, client } = standIn);
  await client.send(new PutObjectCommand({ Bucket, Key: 'source', Body: Buffer.alloc(1024, 7) }));
});

afterAll(async () => {
  await standIn.close();
});

/** Every multipart request that names an upload, for upload `UploadId` of `Key`. */
function requests(Key: string, UploadId: string): Record<string, () => Promise<unknown>> {
  return {
    UploadPart: () => client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: Buffer.alloc(16) })),
    UploadPartCopy: () => client.send(new UploadPartCopyCommand({ Bucket, Key, UploadId, PartNumber: 1, CopySource: `${Bucket}/source` })),
    CompleteMultipartUpload: () => client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"0123456789abcdef0123456789abcdef"' }] } })),
    ListParts: () => client.send(new ListPartsCommand({ Bucket, Key, UploadId })),
    AbortMultipartUpload: () => client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })),
  };
}

async function answers(Key: string, UploadId: string): Promise<Record<string, [string, number]>> {
  const out: Record<string, [string, number]> = {};
  for (const [name, send] of Object.entries(requests(Key, UploadId))) out[name] = await refusal(send());
  return out;
}

const everyNoSuchUpload = Object.fromEntries(['UploadPart', 'UploadPartCopy', 'CompleteMultipartUpload', 'ListParts', 'AbortMultipartUpload'].map((n) => [n, ['NoSuchUpload', 404]]));

describe('an upload the stand-in does not hold', () => {
  it('is NoSuchUpload (404) for every multipart request once aborted', async () => {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: 'aborted' }));
    await client.send(new AbortMultipartUploadCommand({ Bucket, Key: 'aborted', UploadId }));
    expect(await answers('aborted', UploadId!)).toEqual(everyNoSuchUpload);
  });

  it('is NoSuchUpload (404) for every multipart request once completed', async () => {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key: 'completed' }));
    const { ETag } = await client.send(new UploadPartCommand({ Bucket, Key: 'completed', UploadId, PartNumber: 1, Body: Buffer.alloc(16, 1) }));
    await client.send(new CompleteMultipartUploadCommand({ Bucket, Key: 'completed', UploadId, MultipartUpload: { Parts: [{ PartNumber: 1, ETag }] } }));
    expect(await answers('completed', UploadId!)).toEqual(everyNoSuchUpload);
  });

  it('refuses a part that lands after its upload was aborted (NoSuchUpload), and leaves nothing that a completion would trip on', async () => {
    const Key = 'aborted-mid-part';
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    // The part's body arrives slowly: the upload is aborted while it comes in.
    const slow = Readable.from(
      (async function* () {
        yield Buffer.alloc(8, 1);
        await new Promise((r) => setTimeout(r, 400));
        yield Buffer.alloc(8, 2);
      })(),
    );
    const part = refusal(client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: 1, Body: slow, ContentLength: 16 })));
    await new Promise((r) => setTimeout(r, 150));
    await client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId }));
    expect(await part).toEqual(['NoSuchUpload', 404]);
    expect(await answers(Key, UploadId!)).toEqual(everyNoSuchUpload);
  });

  it('is NoSuchUpload (404) for every multipart request for an id never issued, hex or not', async () => {
    expect(await answers('never', '0123456789abcdef0123456789abcdef')).toEqual(everyNoSuchUpload);
    expect(await answers('never', 'not-an-upload-id')).toEqual(everyNoSuchUpload);
  });
});

describe('ListParts', () => {
  it('lists the parts stored so far by number, paged by max-parts and part-number-marker', async () => {
    const Key = 'listed';
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    const etags: string[] = [];
    for (const PartNumber of [1, 2, 3]) etags.push((await client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: Buffer.alloc(10 * PartNumber, PartNumber) }))).ETag!);
    const all = await client.send(new ListPartsCommand({ Bucket, Key, UploadId }));
    expect(all.Parts?.map((p) => [p.PartNumber, p.ETag, p.Size])).toEqual([
      [1, etags[0], 10],
      [2, etags[1], 20],
      [3, etags[2], 30],
    ]);
    expect(all.IsTruncated).toBe(false);
    const first = await client.send(new ListPartsCommand({ Bucket, Key, UploadId, MaxParts: 2 }));
    expect([first.Parts?.map((p) => p.PartNumber), first.IsTruncated, first.NextPartNumberMarker]).toEqual([[1, 2], true, '2']);
    const rest = await client.send(new ListPartsCommand({ Bucket, Key, UploadId, PartNumberMarker: '2' }));
    expect(rest.Parts?.map((p) => p.PartNumber)).toEqual([3]);
  });
});
