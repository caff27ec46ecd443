// bench:s3 (docs/private-sources.md#server-side-assembly): a stored job of OBJECTS x OBJECT_MIB
// objects written as one ZIP into a destination bucket of the same S3 stand-in, in one run:
// through the packer (the destination through a second source, so nothing is copyable),
// server-side with CRC32 checksums on the objects, server-side without them (the packer reads
// each object once for its CRC-32: in CRC-only segments when over SEGMENT_BYTES x 2,
// docs/segments.md), and that again with PACKERS packers sharing the segments. Prints time and
// the bytes the packer uploaded, copied inside S3 and read, and their ratios to the ZIP (goal:
// uploaded <= 2%).
// The customer stand-in holds both sets of objects, each ZIP while it is measured (then deleted)
// and the parts s3rver joins into it: about 5x the ZIP, in /dev/shm only when that fits beside
// the machine's free memory, else on disk (bench/lib/env.ts s3DataRootFor; BENCH_S3_DIR overrides).
//   pnpm bench:s3   (OBJECTS=8 OBJECT_MIB=32 for a quick run; PACKERS=4: the last run's packers, default 2)
import { createInterface } from 'node:readline';
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createUserWithKey } from '@ap/accounts';
import { loadConfig } from '@ap/config';
import { createDb } from '@ap/db';
import { crc32 } from '@ap/zip';
import { EMBEDDED_S3_CREDENTIALS } from '../scripts/embedded';
import { crc32Base64 } from '../scripts/s3-checksums';
import { startApiAndServices, startBenchEnv, startCustomerS3, startService } from './lib/env';

const MiB = 1024 * 1024;
const OBJECTS = Number(process.env.OBJECTS ?? 64);
const OBJECT_BYTES = Number(process.env.OBJECT_MIB ?? 64) * MiB;
const BUCKET = 'customer';
/** Packers for a last run without checksums (1: no such run). */
const PACKERS = Number(process.env.PACKERS ?? 2);

const bench = await startBenchEnv();
const config = loadConfig();
const db = createDb(config.DATABASE_URL);
const { child: customerChild, endpoint, dataRoot } = await startCustomerS3('s3copy', BUCKET, ['--traffic'], 5 * OBJECTS * OBJECT_BYTES);
const traffic = { uploaded: 0, copied: 0, read: 0 };
createInterface({ input: customerChild.stdout! }).on('line', (line) => {
  const t = JSON.parse(line) as Partial<typeof traffic>;
  for (const k of ['uploaded', 'copied', 'read'] as const) traffic[k] += t[k] ?? 0;
});
const customer = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: EMBEDDED_S3_CREDENTIALS, requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
const children = [customerChild];

try {
  for (const [prefix, withCrc] of [['crc', true], ['plain', false]] as const) {
    for (let i = 0; i < OBJECTS; i++) {
      const body = Buffer.alloc(OBJECT_BYTES, i % 251).fill((i * 7) % 256, 0, 4096);
      await customer.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}/${String(i).padStart(4, '0')}.bin`, Body: body, ...(withCrc ? { ChecksumCRC32: crc32Base64(crc32(body)) } : {}) }));
    }
  }
  const { apiUrl, children: services, env } = await startApiAndServices(bench, ['preparer', 'packer'], { PACKER_CONCURRENCY: '1', FETCH_CONCURRENCY: '8' });
  children.push(...services);
  const { apiKey } = await createUserWithKey(db, { email: `bench-s3copy-${Date.now()}@example.test`, plan: 'scale', overage: true });
  const post = async (route: string, body: unknown) => {
    const res = await fetch(`${apiUrl}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': apiKey }, body: JSON.stringify(body) });
    if (res.status !== 201) throw new Error(`POST ${route}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<Record<string, string>>;
  };
  for (const name of ['customer', 'customer-2']) {
    await post('/sources', { name, type: 's3', region: 'us-east-1', endpoint, force_path_style: true, access_key_id: EMBEDDED_S3_CREDENTIALS.accessKeyId, secret_access_key: EMBEDDED_S3_CREDENTIALS.secretAccessKey });
  }
  const run = async (label: string, prefix: string, destinationSource: string) => {
    const files = Array.from({ length: OBJECTS }, (_, i) => ({ url: `s3://${BUCKET}/${prefix}/${String(i).padStart(4, '0')}.bin`, source: 'customer' }));
    const key = `out/${label}.zip`;
    Object.assign(traffic, { uploaded: 0, copied: 0, read: 0 });
    const posted = Date.now();
    const { job_id } = await post('/jobs', { files, zip_filename: `${label}.zip`, destination: { source: destinationSource, bucket: BUCKET, prefix: 'out/' } });
    for (;;) {
      const job = await db.job.findUniqueOrThrow({ where: { id: job_id! }, select: { status: true, completedAt: true } });
      if (job.status === 'failed') throw new Error(`job ${label} failed`);
      if (job.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (Date.now() - posted) / 1000;
    await new Promise((r) => setTimeout(r, 200)); // the child's last traffic lines
    const size = Number((await customer.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))).ContentLength);
    await customer.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
    const pct = (n: number) => `${((n / size) * 100).toFixed(2)}%`;
    console.log(
      `    ${label.padEnd(28)} ${seconds.toFixed(2).padStart(7)} s  ZIP ${(size / MiB).toFixed(0)} MiB  uploaded ${(traffic.uploaded / MiB).toFixed(1)} MiB (${pct(traffic.uploaded)})  copied in S3 ${(traffic.copied / MiB).toFixed(1)} MiB  read ${(traffic.read / MiB).toFixed(1)} MiB (${pct(traffic.read)})`,
    );
    return { seconds, uploaded: traffic.uploaded, size };
  };
  console.log(`(s3) ${OBJECTS} objects x ${OBJECT_BYTES / MiB} MiB, source -> destination bucket in one S3 stand-in (its files under ${dataRoot}):`);
  const packed = await run('through-packer', 'crc', 'customer-2');
  const copied = await run('server-side-with-checksums', 'crc', 'customer');
  const read = await run('server-side-without', 'plain', 'customer');
  console.log(`    time: server-side / through packer ${(copied.seconds / packed.seconds).toFixed(2)} (with checksums), ${(read.seconds / packed.seconds).toFixed(2)} (without)`);
  console.log(`    uploaded: ${((copied.uploaded / copied.size) * 100).toFixed(2)}% and ${((read.uploaded / read.size) * 100).toFixed(2)}% of the ZIP (goal <= 2%)`);
  // Without checksums the objects are read for their CRC-32s: in segments (SEGMENT_BYTES), shared by the packers.
  for (let more = 1; more < PACKERS; more++) services.push(await startService('packer', { ...env, PACKER_CONCURRENCY: '1', FETCH_CONCURRENCY: '8' }));
  if (PACKERS > 1) {
    const shared = await run(`server-side-without-${PACKERS}-packers`, 'plain', 'customer');
    console.log(`    without checksums, ${PACKERS} packers / 1: ${(shared.seconds / read.seconds).toFixed(2)} of the time`);
  }
  for (const s of services) s.kill();
} finally {
  for (const c of children) c.kill();
  customer.destroy();
  await db.$disconnect();
  await bench.close();
}
process.exit(0);
