// `pnpm smoke`'s S3 check (docs/operations.md#smoke-test), run when it is given a bucket service:
// objects under a fresh prefix (nested, one large enough to be copied inside S3), a source with
// the bucket's keys, a stored job of that prefix written into the same bucket (a destination),
// then the ZIP read back from the bucket and through its download link, every entry compared.
// The source and every object are removed at the end. The keys come from the environment
// (SMOKE_S3_ACCESS_KEY_ID, SMOKE_S3_SECRET_ACCESS_KEY), never from the command line.
import { randomBytes } from 'node:crypto';
import {
  CreateBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';

export interface SmokeS3Options {
  /** The bucket service as the stack reaches it (a source's endpoint). */
  endpoint: string;
  /** The same service as this script reaches it (defaults to `endpoint`). */
  localEndpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
}

interface File {
  name: string;
  size: number;
  pattern: Buffer;
}

/** What smoke.ts lends this check: its API calls, its files and its archive check. */
export interface SmokeTools {
  api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  waitForJob(jobId: string): Promise<any>;
  download(url: string): Promise<{ status: number; body: Buffer }>;
  sourceFile(name: string, size: number): File;
  bytesOf(file: File, start: number, end: number): Buffer;
  checkArchive(what: string, bytes: Buffer, expected: File[]): Promise<void>;
  check(condition: unknown, what: string): void;
}

const MB = 1_000_000;

/** Runs the check; resolves with a line saying what passed, throws the smoke's failure otherwise. */
export async function prefixToDestination(options: SmokeS3Options, tools: SmokeTools): Promise<string> {
  const { api } = tools;
  const check: (condition: unknown, what: string) => asserts condition = tools.check;
  const client = new S3Client({
    endpoint: options.localEndpoint,
    region: options.region,
    forcePathStyle: true,
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  const Bucket = options.bucket;
  const run = `smoke-${randomBytes(4).toString('hex')}`;
  // In key order; the prefix's folder (`in/`) names the entries. 17 MB: over SERVER_COPY_MIN_BYTES' default.
  const objects = [tools.sourceFile('in/a.bin', 1 * MB + 3), tools.sourceFile('in/c.bin', 17 * MB), tools.sourceFile('in/sub/b.txt', 20_001)];
  let sourceId: string | null = null;
  try {
    await client.send(new HeadBucketCommand({ Bucket })).catch(() => client.send(new CreateBucketCommand({ Bucket })));
    for (const o of objects) await client.send(new PutObjectCommand({ Bucket, Key: `${run}/${o.name}`, Body: tools.bytesOf(o, 0, o.size) }));
    const source = await api('POST', '/sources', {
      name: run,
      type: 's3',
      region: options.region,
      endpoint: options.endpoint,
      force_path_style: true,
      access_key_id: options.accessKeyId,
      secret_access_key: options.secretAccessKey,
    });
    check(source.status === 201, `POST /sources answered ${source.status}: ${JSON.stringify(source.body).slice(0, 500)}`);
    sourceId = source.body.source.id as string;
    const created = await api('POST', '/jobs', { files: [{ url: `s3://${Bucket}/${run}/in/`, source: run }], zip_filename: 'prefix.zip', destination: { source: run, bucket: Bucket, prefix: `${run}/out/` } });
    check(created.status === 201, `POST /jobs answered ${created.status}: ${JSON.stringify(created.body).slice(0, 500)}`);
    const job = await tools.waitForJob(created.body.job_id);
    const location = `s3://${Bucket}/${run}/out/prefix.zip`;
    check(job.file_count === objects.length && job.zips?.[0]?.location === location, `expected ${objects.length} files in one ZIP at ${location}, got ${JSON.stringify(job).slice(0, 1000)}`);
    const stored = await client.send(new GetObjectCommand({ Bucket, Key: `${run}/out/prefix.zip` }));
    const inBucket = Buffer.from(await stored.Body!.transformToByteArray());
    await tools.checkArchive('ZIP in the destination bucket', inBucket, objects);
    const linked = await tools.download(job.download_url);
    check(linked.status === 200 && linked.body.equals(inBucket), `the download link answered ${linked.status} with ${linked.body.length} bytes, not the bucket's ${inBucket.length}`);
    return `job ${job.id}, prefix of ${objects.length} objects to ${location}, ${inBucket.length} bytes, entries intact`;
  } finally {
    if (sourceId) await api('DELETE', `/sources/${sourceId}`).catch(() => undefined);
    const left = await client.send(new ListObjectsV2Command({ Bucket, Prefix: `${run}/` })).catch(() => null);
    const keys = (left?.Contents ?? []).map((o) => ({ Key: o.Key! }));
    if (keys.length) await client.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: keys } })).catch(() => undefined);
    client.destroy();
  }
}
