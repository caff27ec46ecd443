// The S3 case of bench:origins (docs/private-sources.md): a stored job of OBJECTS x OBJECT_MIB
// s3:// objects read from a customer's S3 server (s3rver in its own process, a bucket of its
// own) through a source, against a plain script that GETs the same objects 8 at a time with
// the SDK and writes them, in order, into the same kind of multipart upload to the service's
// store. Prints both and their ratio (goal >= 0.9).
//   pnpm bench:origins   (runs it after the HTTP cases; OBJECTS=200 OBJECT_MIB=1 to change)
import { PassThrough, type Readable } from 'node:stream';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { storageConfig } from '@ap/service-kit';
import { freeChunk } from '@ap/fetch';
import { createObjectStore, partSizeFor } from '@ap/storage';
import { EMBEDDED_S3_CREDENTIALS } from '../scripts/embedded';
import { ms, startApiAndServices, startBenchEnv, startCustomerS3 } from './lib/env';

const MiB = 1024 * 1024;
const OBJECTS = Number(process.env.OBJECTS ?? 200);
const OBJECT_BYTES = Number(process.env.OBJECT_MIB ?? 1) * MiB;
const BUCKET = 'customer';

const bench = await startBenchEnv();
const config = loadConfig();
const db = createDb(config.DATABASE_URL);
const store = createObjectStore(storageConfig(config));
const { child: customerChild, endpoint } = await startCustomerS3('customer', BUCKET);
const customer = new S3Client({
  endpoint,
  region: 'us-east-1',
  forcePathStyle: true,
  credentials: EMBEDDED_S3_CREDENTIALS,
  requestChecksumCalculation: 'WHEN_REQUIRED',
  responseChecksumValidation: 'WHEN_REQUIRED',
});
const keys = Array.from({ length: OBJECTS }, (_, i) => `objects/${String(i).padStart(4, '0')}.bin`);
const children = [customerChild];

/** The plain script: GETs 8 at a time, bodies written in order into one multipart upload. */
async function plainCopy(): Promise<number> {
  const out = new PassThrough({ highWaterMark: 8 * MiB });
  const key = `bench/plain-s3-${Date.now()}.bin`;
  const t0 = process.hrtime.bigint();
  const uploaded = store.upload(key, out, { partSize: partSizeFor(OBJECTS * OBJECT_BYTES), freeReadChunk: freeChunk });
  const bodies = new Map<number, Promise<Buffer>>();
  const get = (i: number) => customer.send(new GetObjectCommand({ Bucket: BUCKET, Key: keys[i] })).then((r) => (r.Body as Readable & { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray()).then((b) => Buffer.from(b));
  for (let i = 0; i < Math.min(8, OBJECTS); i++) bodies.set(i, get(i));
  for (let i = 0; i < OBJECTS; i++) {
    const body = await bodies.get(i)!;
    bodies.delete(i);
    if (i + 8 < OBJECTS) bodies.set(i + 8, get(i + 8));
    if (!out.write(body)) await new Promise((r) => out.once('drain', r));
  }
  out.end();
  await uploaded;
  const took = ms(t0);
  await store.deleteMany([key]);
  return took;
}

try {
  for (let i = 0; i < OBJECTS; i += 8) {
    await Promise.all(keys.slice(i, i + 8).map((key, j) => customer.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: Buffer.alloc(OBJECT_BYTES, (i + j) % 251) }))));
  }
  const { apiUrl, children: services } = await startApiAndServices(bench, ['preparer', 'packer'], { PACKER_CONCURRENCY: '1', FETCH_CONCURRENCY: '8' });
  children.push(...services);
  const { apiKey } = await createUserWithKey(db, { email: `bench-s3-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const post = async (route: string, body: unknown) => {
    const res = await fetch(`${apiUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST ${route}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, string>>;
  };
  await post('/sources', { name: 'customer', type: 's3', region: 'us-east-1', endpoint, force_path_style: true, access_key_id: EMBEDDED_S3_CREDENTIALS.accessKeyId, secret_access_key: EMBEDDED_S3_CREDENTIALS.secretAccessKey });
  const files = keys.map((key) => ({ url: `s3://${BUCKET}/${key}`, source: 'customer' }));
  const storedJob = async () => {
    const posted = Date.now();
    const { job_id } = await post('/jobs', { files });
    for (;;) {
      const job = await db.job.findUniqueOrThrow({ where: { id: job_id! }, select: { status: true, completedAt: true } });
      if (job.status === 'failed') throw new Error(`stored job ${job_id} failed`);
      if (job.status === 'completed') return job.completedAt!.getTime() - posted;
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  await storedJob(); // untimed: the services' first queries and connections
  const plainMs = await plainCopy();
  const storedMs = await storedJob();
  const total = OBJECTS * OBJECT_BYTES;
  const rate = (millis: number) => `${((total / millis) * 1000 / 1e6).toFixed(0)} MB/s (${(millis / 1000).toFixed(2)} s)`;
  console.log(`(s3) ${OBJECTS} objects x ${OBJECT_BYTES / MiB} MiB from a customer's S3 server:`);
  console.log(`    plain SDK script, 8 GETs at a time into one multipart upload  ${rate(plainMs)}`);
  console.log(`    stored job over s3:// files                                  ${rate(storedMs)}  ratio ${(plainMs / storedMs).toFixed(2)} (goal >= 0.9)`);
  for (const s of services) s.kill();
} finally {
  for (const c of children) c.kill();
  customer.destroy();
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
