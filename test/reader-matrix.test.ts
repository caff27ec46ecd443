// Every kind of ZIP the service writes, read by every reader held to it (test/reader-matrix.ts,
// docs/readers.md): one small job per mode (an empty file, a tiny one, 1 MiB, a folder and a
// non-ASCII name), created at once, each ZIP read by its readers at once. Segmented and
// server-assembled ZIPs are the one-packer ZIP byte for byte (segments.test.ts,
// server-copy*.test.ts), and those tests run this matrix over them too.
import { afterAll, beforeAll, expect, it, jest } from '@jest/globals';
import { createHash } from 'node:crypto';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { readWithEveryReader, type ZipKind } from './reader-matrix';
import { startStack, type Stack } from './stack';

jest.setTimeout(180_000);
const PASSWORD = 'matrix-pa55word';

let stack: Stack;
let origin: Origin;
let key: string;
const bodies = [Buffer.from('hello, world!\n'), Buffer.alloc(0), bytesOf(3, 1024 * 1024), Buffer.from('ein Café\n')];
const names = ['a.txt', 'empty.bin', 'one.bin', 'docs/Café ü.txt'];
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

const files = () => names.map((name, i) => ({ url: origin.set(`/m/${i}`, { body: bodies[i]! }), filename: name }));

/** Each ZIP of the finished job with the entries its rows say it holds. */
async function zipsOf(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { files: files(), ...body } });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, key, res.body.job_id);
  expect(job.status).toBe('completed');
  return Promise.all(
    (job.zips as { id: string; download_url: string }[]).map(async (zip) => {
      const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId: zip.id }, orderBy: { position: 'asc' } });
      const expected = rows.map((r) => ({ name: names[r.position]!, size: bodies[r.position]!.length, sha256: sha256(bodies[r.position]!) }));
      return { bytes: (await download(zip.download_url)).body, expected, createdAt: new Date(job.created_at as string) };
    }),
  );
}

it.each<[string, Record<string, unknown>, ZipKind, number]>([
  ['stored', {}, 'store', 1],
  ['stream', { mode: 'stream' }, 'store', 1],
  ['stored deflate', { compression: 'deflate' }, 'deflate', 1],
  ['stored AES-256', { encryption: { method: 'aes-256', password: PASSWORD } }, 'aes', 1],
  ['stream AES-256', { mode: 'stream', encryption: { method: 'aes-256', password: PASSWORD } }, 'aes', 1],
  // A split job: its layout fixed while preparing (one ZIP under the smallest cap).
  ['split', { max_zip_size_bytes: 104_857_600 }, 'store', 1],
])('a %s ZIP reads alike in every reader held to it', async (_mode, body, kind, zipCount) => {
  const zips = await zipsOf(body);
  expect(zips).toHaveLength(zipCount);
  for (const zip of zips) {
    const failures = await readWithEveryReader(zip.bytes, { kind, expected: zip.expected, mtime: zip.createdAt, ...(kind === 'aes' ? { password: PASSWORD } : {}) });
    expect(failures).toEqual({});
  }
});
