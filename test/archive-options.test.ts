// Archive options end to end on the real stack. WinZip AES-256: stream mode keeps exact sizes,
// every Range and resume; stored single and split jobs; 7-Zip, bsdtar and an independent AE-2
// reader open every entry and refuse a wrong password; the password is sealed and never shown.
// Deflate (stored jobs): unzip, Python's zipfile, 7-Zip and yauzl read it byte for byte; split
// deflate jobs keep every ZIP under its cap. Deflate inside AES-256 (stored, single and split):
// 7-Zip, bsdtar and the AE-2 reader. Bad options are 400s naming the field.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { zipEncryptionOf, JOB_ARCHIVE_OPTIONS_SELECT } from '@ap/jobs';
import { buildRange, layoutOfFiles, planRange, type ZipLayout } from '@ap/zip';
import { readWithYauzl } from '../packages/zip/src/testing';
import { readAesZip, WrongPassword } from '../packages/zip/src/testing-aes';
import { call, createUser, download, partialGet, waitForJob } from './helpers';
import { bytesOf, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startSyntheticOrigin, type SyntheticOrigin } from './synthetic-origin';

const MiB = 1024 * 1024;
const PASSWORD = 'tr0ub4dor&3-zip';

let stack: Stack;
let origin: Origin;
let synthetic: SyntheticOrigin;
let key: string;

beforeAll(async () => {
  stack = await startStack();
  origin = await startOrigin();
  synthetic = await startSyntheticOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
  await synthetic.close();
});

const ENCRYPTED = { encryption: { method: 'aes-256', password: PASSWORD } };

async function completedJob(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, key, res.body.job_id);
  expect(job.status).toBe('completed');
  return job;
}

/** The ZIP the layout says, built in memory from the bodies with the job's own encryption. */
async function expectedZip(zipId: string, bodies: Buffer[]): Promise<{ layout: ZipLayout; bytes: Buffer }> {
  const zip = await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId }, include: { job: { select: { createdAt: true, ...JOB_ARCHIVE_OPTIONS_SELECT } } } });
  const files = await stack.ctx.db.jobFile.findMany({ where: { zipId, error: null }, orderBy: { position: 'asc' } });
  const layout = layoutOfFiles(files, zip.job.createdAt, zipEncryptionOf(zip.job, zip.sequence, stack.ctx.secrets.open));
  const plan = planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null });
  return { layout, bytes: buildRange(layout, plan, { read: (e, f, t) => bodies[e]!.subarray(f, t) }, new Map()).bytes };
}

/** 7-Zip and bsdtar extract every entry exactly with the password and refuse a wrong one. */
function checkWithExternalReaders(zip: Buffer, entries: { name: string; body: Buffer }[]): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'aes-e2e-'));
  try {
    const file = path.join(dir, 'a.zip');
    writeFileSync(file, zip);
    execFileSync('7z', ['x', '-y', `-p${PASSWORD}`, `-o${path.join(dir, '7z')}`, file], { stdio: 'pipe' });
    execFileSync('mkdir', ['-p', path.join(dir, 'bsd'), path.join(dir, 'bad')]);
    execFileSync('bsdtar', ['-xf', file, '--passphrase', PASSWORD, '-C', path.join(dir, 'bsd')], { stdio: 'pipe' });
    for (const e of entries) {
      expect(readFileSync(path.join(dir, '7z', e.name)).equals(e.body)).toBe(true);
      expect(readFileSync(path.join(dir, 'bsd', e.name)).equals(e.body)).toBe(true);
    }
    expect(() => execFileSync('7z', ['t', '-pnot-the-password', file], { stdio: 'pipe' })).toThrow();
    expect(() => execFileSync('bsdtar', ['-xf', file, '--passphrase', 'not-the-password', '-C', path.join(dir, 'bad')], { stdio: 'pipe' })).toThrow();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function checkWithOwnReader(zip: Buffer, entries: { name: string; body: Buffer }[]): void {
  const read = readAesZip(zip, PASSWORD);
  expect(read.map((e) => e.name)).toEqual(entries.map((e) => e.name));
  read.forEach((e, i) => expect(e.data.equals(entries[i]!.body)).toBe(true));
  expect(() => readAesZip(zip, 'not-the-password')).toThrow(WrongPassword);
}

/** A split job of zero-filled files: its two ZIPs, each checked to be its size and under the cap, with their entries. */
async function splitZipsOf(job: any, cap: number, sizes: number[]) {
  expect(job.zips.length).toBe(2);
  const out: { zip: Buffer; entries: { name: string; body: Buffer }[] }[] = [];
  for (const z of job.zips) {
    const zip = (await download(z.download_url)).body;
    expect(zip.length).toBe(z.size);
    expect(zip.length).toBeLessThanOrEqual(cap);
    const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId: z.id }, orderBy: { position: 'asc' } });
    out.push({ zip, entries: rows.map((r) => ({ name: r.entryName!, body: Buffer.alloc(sizes[r.position]!) })) });
  }
  return out;
}

describe('stream mode', () => {
  const bodies = [bytesOf(301, 70_001), bytesOf(302, 0), bytesOf(303, 17), bytesOf(304, 300_000)];
  const names = ['a.bin', 'empty.txt', 'seventeen.bin', 'd.bin'];
  let job: any;
  let layout: ZipLayout;
  let expected: Buffer;

  beforeAll(async () => {
    job = await completedJob({ ...ENCRYPTED, mode: 'stream', files: bodies.map((b, i) => ({ url: origin.set(`/aes/${names[i]}`, { body: b, etag: `"e${i}"` }) })) });
    ({ layout, bytes: expected } = await expectedZip(job.zips[0].id, bodies));
  });

  it('has its exact size before any byte, shows the method only, and keeps the password sealed', async () => {
    expect(job.zips[0].size).toBe(layout.totalSize);
    expect(job.encryption).toEqual({ method: 'aes-256' });
    expect(JSON.stringify(job)).not.toContain(PASSWORD);
    const row = await stack.ctx.db.job.findUniqueOrThrow({ where: { id: job.id } });
    expect(row.encryptionPassword).toMatch(/^v1\./);
    expect(row.encryptionPassword).not.toContain(PASSWORD);
  });

  it('serves every range around each header, salt, verifier, body, MAC and descriptor, MACs unknown then learned', async () => {
    const url = job.zips[0].download_url;
    const points = new Set<number>();
    const around = (at: number) => [at - 1, at, at + 1].forEach((p) => p >= 0 && p < layout.totalSize && points.add(p));
    for (const s of layout.segments) if (s.kind !== 'central') around(s.start);
    for (const e of layout.entries) [e.dataOffset - 18, e.dataOffset - 2].forEach(around);
    around(layout.centralOffset);
    // Short ranges from each point (ending before most bodies end: MACs still unknown), then
    // each point to the end (learning MACs on the way).
    for (const start of [...points].sort((a, b) => a - b)) {
      for (const end of [Math.min(start + 20, layout.totalSize - 1), layout.totalSize - 1]) {
        const res = await download(url, { range: `bytes=${start}-${end}` });
        expect({ start, end, status: res.status }).toEqual({ start, end, status: 206 });
        expect(res.body.equals(expected.subarray(start, end + 1))).toBe(true);
      }
    }
    const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId: job.zips[0].id }, orderBy: { position: 'asc' } });
    expect(rows.filter((r) => r.size! > 0n).every((r) => r.aesMac !== null && r.aesMac.length === 10)).toBe(true);
  });

  it('downloads whole, byte-identical twice; 7-Zip, bsdtar and the AE-2 reader open every entry', async () => {
    const first = await download(job.zips[0].download_url);
    const second = await download(job.zips[0].download_url);
    expect(first.headers.get('content-length')).toBe(String(layout.totalSize));
    expect(first.body.equals(expected)).toBe(true);
    expect(second.body.equals(first.body)).toBe(true);
    const entries = names.map((name, i) => ({ name, body: bodies[i]! }));
    checkWithOwnReader(first.body, entries);
    checkWithExternalReaders(first.body, entries);
  });

  it('resumes at 90% fetching at most 1.2x the remaining bytes', async () => {
    const big = bytesOf(310, 40 * MiB);
    const resumeJob = await completedJob({ ...ENCRYPTED, mode: 'stream', files: [{ url: origin.set('/aes-r/small.bin', { body: bytesOf(311, 1000), etag: '"s"' }) }, { url: origin.set('/aes-r/big.bin', { body: big, etag: '"b"' }) }] });
    const url = resumeJob.zips[0].download_url;
    const { layout: l, bytes: whole } = await expectedZip(resumeJob.zips[0].id, [bytesOf(311, 1000), big]);
    const cut = Math.floor(l.totalSize * 0.9);
    const first = await partialGet(url, cut);
    // Requests opened by the first download may reach the origin late: they are not the resume's.
    for (let seen = -1; seen !== origin.requests.length; ) {
      seen = origin.requests.length;
      await new Promise((r) => setTimeout(r, 300));
    }
    origin.bytesSent.clear();
    const rest = await download(url, { range: `bytes=${cut}-`, 'if-range': first.etag });
    expect(rest.status).toBe(206);
    expect(Buffer.concat([first.got, rest.body]).equals(whole)).toBe(true);
    const fetched = [...origin.bytesSent.values()].reduce((a, b) => a + b, 0);
    expect(fetched / (l.totalSize - cut)).toBeLessThanOrEqual(1.2);
  });
});

describe('stored mode', () => {
  it('packs a single AES ZIP that every reader opens, the bytes its layout says', async () => {
    const bodies = [bytesOf(401, 300_000), bytesOf(402, 5), bytesOf(403, 70_000)];
    const names = ['one.bin', 'two.txt', 'three.bin'];
    const single = await completedJob({ ...ENCRYPTED, files: bodies.map((b, i) => ({ url: origin.set(`/aes-s/${names[i]}`, { body: b }) })) });
    const zip = (await download(single.zips[0].download_url)).body;
    expect(zip.equals((await expectedZip(single.zips[0].id, bodies)).bytes)).toBe(true);
    const entries = names.map((name, i) => ({ name, body: bodies[i]! }));
    checkWithOwnReader(zip, entries);
    checkWithExternalReaders(zip, entries);
  });

  it('packs split AES ZIPs, each under its cap, that 7-Zip and bsdtar extract exactly', async () => {
    const sizes = [60 * MiB, 5, 45 * MiB];
    const names = ['first.bin', 'small.bin', 'third.bin'];
    const cap = 100 * MiB;
    const split = await completedJob({ ...ENCRYPTED, files: sizes.map((n, i) => ({ url: `${synthetic.url}/zeros/${n}/${names[i]}` })), max_zip_size_bytes: cap });
    for (const { zip, entries } of await splitZipsOf(split, cap, sizes)) checkWithExternalReaders(zip, entries);
  });
});

describe('AES-256 with deflate (stored jobs)', () => {
  it('packs a single ZIP whose entries are deflated then encrypted; 7-Zip, bsdtar and the AE-2 reader get every byte', async () => {
    const bodies = [text(7, 20_000), bytesOf(411, 70_000), Buffer.alloc(0), Buffer.from('x')];
    const names = ['a.csv', 'random.bin', 'empty.txt', 'one.txt'];
    const job = await completedJob({ ...ENCRYPTED, compression: 'deflate', compression_level: 9, files: bodies.map((b, i) => ({ url: origin.set(`/aes-d/${names[i]}`, { body: b }) })) });
    expect({ compression: job.compression, level: job.compression_level, encryption: job.encryption }).toEqual({ compression: 'deflate', level: 9, encryption: { method: 'aes-256' } });
    expect(JSON.stringify(job)).not.toContain(PASSWORD);
    const zip = (await download(job.zips[0].download_url)).body;
    expect(zip.length).toBe(job.zips[0].size);
    // The text shrinks a few times over: it was deflated before it was encrypted.
    expect(zip.length).toBeLessThan(bodies[0]!.length / 2 + 71_000);
    const entries = names.map((name, i) => ({ name, body: bodies[i]! }));
    checkWithOwnReader(zip, entries);
    expect(readAesZip(zip, PASSWORD).map((e) => e.method)).toEqual([8, 8, 8, 8]);
    checkWithExternalReaders(zip, entries);
  });

  it('packs split ZIPs, each under its cap, that 7-Zip, bsdtar and the AE-2 reader extract exactly', async () => {
    const cap = 100 * MiB;
    const sizes = [60 * MiB, 45 * MiB, 1000];
    const job = await completedJob({ ...ENCRYPTED, compression: 'deflate', compression_level: 1, files: sizes.map((n, i) => ({ url: `${synthetic.url}/zeros/${n}/z${i}.bin` })), max_zip_size_bytes: cap });
    for (const { zip, entries } of await splitZipsOf(job, cap, sizes)) {
      checkWithOwnReader(zip, entries);
      checkWithExternalReaders(zip, entries);
    }
  });
});

/** Text that deflates well: CSV-like lines with varying numbers. */
function text(seed: number, lines: number): Buffer {
  let out = 'id,name,amount,when\n';
  for (let i = 0; i < lines; i++) out += `${i},customer-${(i * seed) % 997},${((i * 7919 + seed) % 100_000) / 100},2026-11-${(i % 28) + 1}\n`;
  return Buffer.from(out);
}

const PY_READ = `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps([{"name": i.filename, "method": i.compress_type, "hex": z.read(i).hex()} for i in z.infolist()]))
`;

describe('deflate', () => {
  it('stored jobs at levels 1, 6 and 9: every reader gets every entry back byte for byte', async () => {
    const bodies = [text(3, 20_000), text(5, 10), Buffer.alloc(0), Buffer.from('x')];
    const names = ['a.csv', 'b.csv', 'empty.txt', 'one.txt'];
    const files = bodies.map((b, i) => ({ url: origin.set(`/deflate/${names[i]}`, { body: b }) }));
    const stored = await completedJob({ files });
    for (const level of [1, 6, 9]) {
      const job = await completedJob({ files, compression: 'deflate', ...(level === 6 ? {} : { compression_level: level }) });
      expect({ compression: job.compression, level: job.compression_level, encryption: job.encryption }).toEqual({ compression: 'deflate', level, encryption: null });
      const zip = (await download(job.zips[0].download_url)).body;
      // Text shrinks a few times over.
      expect(zip.length * 2).toBeLessThan(stored.zips[0].size);
      const dir = mkdtempSync(path.join(os.tmpdir(), 'deflate-'));
      try {
        const file = path.join(dir, 'a.zip');
        writeFileSync(file, zip);
        execFileSync('unzip', ['-tqq', file], { stdio: 'pipe' });
        const py = JSON.parse(execFileSync('python3', ['-c', PY_READ, file], { encoding: 'utf8', maxBuffer: 1 << 28 })) as { name: string; method: number; hex: string }[];
        expect(py.map((e) => e.name)).toEqual(names);
        py.forEach((e, i) => expect(Buffer.from(e.hex, 'hex').equals(bodies[i]!)).toBe(true));
        // Non-empty entries are deflated (method 8).
        expect(py[0]!.method).toBe(8);
        execFileSync('7z', ['x', '-y', `-o${path.join(dir, '7z')}`, file], { stdio: 'pipe' });
        names.forEach((n, i) => expect(readFileSync(path.join(dir, '7z', n)).equals(bodies[i]!)).toBe(true));
        const viaYauzl = await readWithYauzl(zip);
        viaYauzl.forEach((e, i) => expect(e.data.equals(bodies[i]!)).toBe(true));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('a split deflate job keeps every ZIP under its cap', async () => {
    const cap = 100 * MiB;
    const sizes = [60 * MiB, 45 * MiB, 1000];
    const job = await completedJob({ files: sizes.map((n, i) => ({ url: `${synthetic.url}/zeros/${n}/f${i}.bin` })), compression: 'deflate', compression_level: 1, max_zip_size_bytes: cap });
    expect(job.zips.length).toBe(2);
    for (const z of job.zips) {
      const zip = (await download(z.download_url)).body;
      expect(zip.length).toBe(z.size);
      expect(zip.length).toBeLessThanOrEqual(cap);
      const entries = await readWithYauzl(zip);
      for (const e of entries) expect(e.data.equals(Buffer.alloc(sizes[Number(e.name[1])]!))).toBe(true);
    }
  });

  it('bad archive options are 400 INVALID_REQUEST naming the field; the password never echoes', async () => {
    const files = [{ url: origin.set('/deflate/bad.txt', { body: Buffer.from('x') }) }];
    const cases: [Record<string, unknown>, string][] = [
      [{ mode: 'stream', compression: 'deflate' }, 'compression'],
      [{ mode: 'stream', compression: 'deflate', encryption: { method: 'aes-256', password: 'long-enough-2' } }, 'compression'],
      [{ compression: 'deflate', compression_level: 0 }, 'compression_level'],
      [{ compression: 'deflate', compression_level: 10 }, 'compression_level'],
      [{ compression: 'brotli' }, 'compression'],
      [{ encryption: { method: 'aes-128', password: 'long-enough-1' } }, 'encryption.method'],
      [{ encryption: { method: 'aes-256', password: 'short77' } }, 'encryption.password'],
      [{ encryption: { method: 'aes-256', password: 'p'.repeat(129) } }, 'encryption.password'],
    ];
    for (const [extra, field] of cases) {
      const res = await call(stack.url, 'POST', '/jobs', { key, body: { files, ...extra } });
      expect({ extra, status: res.status, code: res.body.error?.code }).toEqual({ extra, status: 400, code: 'INVALID_REQUEST' });
      expect(res.body.error.message.startsWith(`${field}:`)).toBe(true);
      expect(res.body.error.message).not.toMatch(/short77|p{129}/);
    }
  });
});
