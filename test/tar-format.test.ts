// tar and tar.gz end to end on the real stack (docs/archive-options.md#formats-and-contents): stored and
// stream tars read name for name and byte for byte by GNU tar, bsdtar, Python's tarfile and
// 7-Zip (a 250-byte name whose last part is over 100 bytes, non-ASCII names, a body of unknown
// length); a stream tar's exact Content-Length and every sub-range equal to the same bytes of
// the whole; split tars under their cap; tar.gz at levels 1 and 9; a stream tar with a body
// over 8 GiB (a sparse origin) listed exactly by every reader.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { buildRange, layoutOfFiles, planRange } from '@ap/zip';
import { call, createUser, download, partialGet, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startSyntheticOrigin, tinyBody, type SyntheticOrigin } from './synthetic-origin';
import { readTar } from './tar-readers';

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

async function completedJob(body: Record<string, unknown>, apiKey = key) {
  const res = await call(stack.url, 'POST', '/jobs', { key: apiKey, body });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, apiKey, res.body.job_id, ['completed', 'failed'], 120_000);
  expect(job.status).toBe('completed');
  return job;
}

const LONG_DIR = `${'d'.repeat(60)}/${'e'.repeat(60)}`;
const LONG_LAST = `${'f'.repeat(107)}.txt`;
const LONG = `${LONG_DIR}/${'x'.repeat(250 - LONG_DIR.length - 2 - LONG_LAST.length)}/${LONG_LAST}`;
const FILES = [
  { name: 'a.bin', body: bytesOf(481, 70_001) },
  { name: LONG, body: bytesOf(482, 513) },
  { name: 'Größe/日本語 ファイル.txt', body: Buffer.from('non-ASCII names\n') },
  { name: 'empty.txt', body: Buffer.alloc(0) },
  { name: 'block.bin', body: bytesOf(483, 512) },
];

/** What every reader must extract: the files, and the folders their paths imply. */
function expectedTree(files: readonly { name: string; body: Buffer }[]) {
  const tree = new Map<string, { size: number; sha256: string | null }>();
  for (const f of files) {
    tree.set(f.name, { size: f.body.length, sha256: sha256(f.body) });
    const parts = f.name.split('/');
    for (let i = 1; i < parts.length; i++) tree.set(`${parts.slice(0, i).join('/')}/`, { size: 0, sha256: null });
  }
  return [...tree].map(([name, e]) => ({ name, ...e })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** GNU tar's listing (names and sizes): split archives of big zero bodies are only listed, not extracted. */
async function listTar(tar: Buffer): Promise<{ name: string; size: number }[]> {
  const listing = execFileSync('tar', ['-tvf', '-'], { input: tar, encoding: 'utf8', maxBuffer: 1 << 20 });
  return listing.trim().split('\n').map((row) => {
    const m = /^\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+(.+)$/.exec(row);
    if (!m) throw new Error(`tar -tv row not understood: ${row}`);
    return { name: m[2]!, size: Number(m[1]) };
  });
}

function fileEntries(prefix: string, files = FILES, options: { chunked?: number } = {}) {
  return files.map((f, i) => ({ url: origin.set(`/${prefix}/${i}`, { body: f.body, chunked: i === options.chunked }), filename: f.name }));
}

describe('a stored tar', () => {
  it('is read exactly by every reader, served as application/x-tar under archive-{id}.tar, with format in both job forms', async () => {
    // One body without a Content-Length: the packer learns its size before its header.
    const job = await completedJob({ format: 'tar', files: fileEntries('stored', FILES, { chunked: 0 }) });
    expect(job.format).toBe('tar');
    expect(job.zip_filename).toBe(`archive-${job.id}.tar`);
    const res = await download(job.download_url);
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect(res.headers.get('content-disposition')).toContain(`archive-${job.id}.tar`);
    expect(res.body.length).toBe(job.zip_size);
    expect((await readTar(res.body)).entries).toEqual(expectedTree(FILES));
    const list = await call(stack.url, 'GET', '/jobs', { key });
    expect(list.body.jobs.find((j: { id: string }) => j.id === job.id).format).toBe('tar');
  });

  it('splits into tars under the cap, each read exactly', async () => {
    const cap = 104_857_600;
    const big = 60 * 1024 * 1024;
    const files = [
      { url: `${synthetic.url}/zeros/${big}/one.bin` },
      { url: `${synthetic.url}/zeros/${big}/two.bin` },
    ];
    const job = await completedJob({ format: 'tar', max_zip_size_bytes: cap, zip_filename: 'parts', files });
    expect(job.zips.map((z: { filename: string }) => z.filename)).toEqual(['parts_1.tar', 'parts_2.tar']);
    for (const [i, z] of (job.zips as { download_url: string; size: number }[]).entries()) {
      const tar = (await download(z.download_url)).body;
      expect(tar.length).toBe(z.size);
      expect(tar.length).toBeLessThanOrEqual(cap);
      expect(await listTar(tar)).toEqual([{ name: i === 0 ? 'one.bin' : 'two.bin', size: big }]);
    }
  }, 180_000);
});

describe('a stored tar.gz', () => {
  it('is gzipped at the level asked (1 and 9), served as application/gzip, and read exactly', async () => {
    // Compressible bodies: the levels give other sizes.
    const files = [
      { name: 'text.txt', body: Buffer.from('the quick brown fox jumps over the lazy dog\n'.repeat(20_000)) },
      { name: 'dir/random.bin', body: bytesOf(490, 100_000) },
    ];
    const sizes: number[] = [];
    for (const level of [1, 9]) {
      const job = await completedJob({ format: 'tar.gz', compression_level: level, files: fileEntries(`gz${level}`, files) });
      expect({ format: job.format, level: job.compression_level, name: job.zip_filename }).toEqual({ format: 'tar.gz', level, name: `archive-${job.id}.tar.gz` });
      const res = await download(job.download_url);
      expect(res.headers.get('content-type')).toBe('application/gzip');
      expect(res.body.length).toBe(job.zip_size);
      expect((await readTar(res.body, { gzip: true })).entries).toEqual(expectedTree(files));
      // The gzip's level is in its header's XFL byte (2: best, 4: fastest).
      expect(res.body[8]).toBe(level === 9 ? 2 : 4);
      expect(gunzipSync(res.body).length % 512).toBe(0);
      sizes.push(res.body.length);
    }
    expect(sizes[1]).toBeLessThan(sizes[0]!);
  });

  it('splits with the cap on the compressed files', async () => {
    const cap = 104_857_600;
    const big = 60 * 1024 * 1024;
    const job = await completedJob({ format: 'tar.gz', max_zip_size_bytes: cap, files: [{ url: `${synthetic.url}/zeros/${big}/one.bin` }, { url: `${synthetic.url}/zeros/${big}/two.bin` }] });
    expect(job.zips.map((z: { filename: string }) => z.filename)).toEqual([`archive-${job.id}.tar_1.gz`, `archive-${job.id}.tar_2.gz`]);
    for (const z of job.zips) {
      const gz = (await download(z.download_url)).body;
      expect(gz.length).toBe(z.size);
      expect(gz.length).toBeLessThanOrEqual(cap);
      expect(await listTar(gunzipSync(gz))).toHaveLength(1);
    }
  }, 180_000);
});

describe('a stream tar', () => {
  let job: any;
  let whole: Buffer;

  beforeAll(async () => {
    job = await completedJob({ format: 'tar', mode: 'stream', files: fileEntries('stream') });
  });

  it('has an exact Content-Length, the bytes its layout says, and every reader reads it', async () => {
    const res = await download(job.zips[0].download_url);
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect(Number(res.headers.get('content-length'))).toBe(job.zips[0].size);
    whole = res.body;
    const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId: job.zips[0].id }, orderBy: { position: 'asc' } });
    const layout = layoutOfFiles(rows, new Date(job.created_at), null, 'tar');
    const built = buildRange(layout, planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null }), { read: (e, f, t) => FILES[e]!.body.subarray(f, t) }, new Map());
    expect(whole.equals(built.bytes)).toBe(true);
    expect((await readTar(whole)).entries).toEqual(expectedTree(FILES));
  });

  it('serves every sub-range as the same bytes of the whole download', async () => {
    const url = job.zips[0].download_url;
    const size = whole.length;
    const points = [0, 1, 511, 512, 513, 1024, 2047, 2048, 70_000, 70_001, 70_655, 71_000, size - 1025, size - 1024, size - 1];
    const ranges: [number, number][] = [];
    for (const start of points) for (const end of [start, start + 1, start + 700, size - 1]) if (end < size && end >= start) ranges.push([start, end]);
    for (const [start, end] of ranges) {
      const part = await partialGet(url, end - start + 1, { range: `bytes=${start}-${end}` });
      expect(part.status).toBe(206);
      expect(part.got.equals(whole.subarray(start, end + 1))).toBe(true);
    }
  }, 120_000);

  it('with a body of unknown length is sent whole (no ranges), read exactly by every reader', async () => {
    const unsized = await completedJob({ format: 'tar', mode: 'stream', files: fileEntries('stream-chunked', FILES.slice(0, 3), { chunked: 1 }) });
    expect(unsized.zips[0].size).toBeNull();
    const res = await download(unsized.zips[0].download_url);
    expect(res.headers.get('content-type')).toBe('application/x-tar');
    expect((await readTar(res.body)).entries).toEqual(expectedTree(FILES.slice(0, 3)));
  });

  it('holds a body over 8 GiB (a sparse origin) with its pax size, listed exactly by every reader', async () => {
    const big = 8 * 1024 ** 3 + 12_345;
    const scale = await createUser(stack.ctx, { plan: 'scale' });
    const bigJob = await completedJob({ format: 'tar', mode: 'stream', files: [{ url: `${synthetic.url}/tiny/7/a.txt` }, { url: `${synthetic.url}/zeros/${big}/huge.bin` }, { url: `${synthetic.url}/tiny/8/z.txt` }] }, scale.apiKey);
    const url = bigJob.zips[0].download_url;
    const size: number = bigJob.zips[0].size;
    // a.txt (header and one block), huge.bin's pax and ustar headers, then its body.
    const bodyStart = 1024 + 1536;
    expect(size).toBe(bodyStart + big + (512 - (big % 512)) + 1024 + 1024);
    // The bytes around the big body come from the download (two ranges); the body's 8 GiB of
    // zeros are a hole of the sparse file (served ranges equal the whole: the test above).
    const head = await partialGet(url, bodyStart + 4096, { range: `bytes=0-${bodyStart + 4095}` });
    const tailStart = bodyStart + big - 4096;
    const tail = await partialGet(url, size - tailStart, { range: `bytes=${tailStart}-${size - 1}` });
    expect([head.status, tail.status, head.got.length, tail.got.length]).toEqual([206, 206, bodyStart + 4096, size - tailStart]);
    expect(head.got.subarray(bodyStart).equals(Buffer.alloc(4096))).toBe(true);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-bigtar-e2e-'));
    const file = path.join(dir, 'big.tar');
    try {
      const fd = openSync(file, 'w');
      writeSync(fd, head.got, 0, head.got.length, 0);
      writeSync(fd, tail.got, 0, tail.got.length, tailStart);
      closeSync(fd);
      const gnu = execFileSync('tar', ['-tvf', file], { encoding: 'utf8' });
      const bsd = execFileSync('bsdtar', ['-tvf', file], { encoding: 'utf8' });
      for (const listing of [gnu, bsd]) {
        expect(listing).toMatch(new RegExp(`\\s${big}\\s.*huge\\.bin`));
        expect(listing).toContain('z.txt');
      }
      expect(execFileSync('7z', ['l', file], { encoding: 'utf8' })).toContain(String(big));
      // tarfile lists every member and reads the small file after the big one (seeking over it).
      const py = execFileSync('python3', ['-c', 'import sys, tarfile; t = tarfile.open(sys.argv[1]); print([(m.name, m.size) for m in t.getmembers()]); print(t.extractfile("z.txt").read().decode(), end="")', file], { encoding: 'utf8' });
      expect(py).toBe(`[('a.txt', ${tinyBody(7).length}), ('huge.bin', ${big}), ('z.txt', ${tinyBody(8).length})]\n${tinyBody(8).toString()}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a manifest', () => {
  const PY_MANIFEST = `
import csv, io, json, sys, tarfile, zipfile
path = sys.argv[1]
if zipfile.is_zipfile(path):
    z = zipfile.ZipFile(path)
    names = [i.filename for i in z.infolist()]
    text = z.read(names[-1]).decode()
else:
    t = tarfile.open(path)
    names = [m.name for m in t.getmembers()]
    text = t.extractfile(names[-1]).read().decode()
print(json.dumps({"last": names[-1], "rows": list(csv.reader(io.StringIO(text, newline="")))}))
`;

  async function manifestOf(archive: Buffer): Promise<{ last: string; rows: string[][] }> {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-manifest-'));
    try {
      const file = path.join(dir, 'archive');
      const fd = openSync(file, 'w');
      writeSync(fd, archive);
      closeSync(fd);
      return JSON.parse(execFileSync('python3', ['-c', PY_MANIFEST, file], { encoding: 'utf8' }));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('keeps a split job\'s caps with each archive\'s manifest listing its own files', async () => {
    const cap = 104_857_600;
    // Two such bodies make a tar of exactly the cap: with its manifest one archive would pass it.
    const big = (cap - 1024) / 2 - 512;
    const job = await completedJob({ format: 'tar', manifest: true, max_zip_size_bytes: cap, files: [{ url: `${synthetic.url}/zeros/${big}/one.bin` }, { url: `${synthetic.url}/zeros/${big}/two.bin` }] });
    expect(job.zips).toHaveLength(2);
    for (const [i, z] of (job.zips as { download_url: string; size: number }[]).entries()) {
      const tar = (await download(z.download_url)).body;
      expect(tar.length).toBeLessThanOrEqual(cap);
      const { last, rows } = await manifestOf(tar);
      expect(last).toBe('manifest.csv');
      expect(rows.slice(1).map((r) => r.slice(0, 2))).toEqual([[i === 0 ? 'one.bin' : 'two.bin', String(big)]]);
    }
  }, 120_000);

  for (const format of ['zip', 'tar'] as const) {
    it(`ends a stored ${format} with manifest.csv: SHA-256s of the files, URLs without queries, the URL left out`, async () => {
      const files = [
        { name: "a, b's file.bin", body: bytesOf(491, 1000) },
        { name: 'b.txt', body: Buffer.from('bee\n') },
      ];
      const urls = files.map((f, i) => origin.set(`/manifest-${format}/${i}`, { body: f.body }));
      const missing = origin.set(`/manifest-${format}/missing`, { body: Buffer.alloc(0), status: 404 });
      const job = await completedJob({
        format,
        manifest: true,
        fail_on_url_error: false,
        files: [{ url: `${urls[0]}?X-Amz-Signature=secret`, filename: files[0]!.name }, { url: missing }, { url: urls[1], filename: files[1]!.name }],
      });
      expect(job.manifest).toBe(true);
      const archive = (await download(job.download_url)).body;
      const { last, rows } = await manifestOf(archive);
      expect(last).toBe('manifest.csv');
      expect(rows[0]).toEqual(['name', 'size', 'sha256', 'url', 'error']);
      expect(rows.slice(1, 3)).toEqual([
        [files[0]!.name, '1000', sha256(files[0]!.body), urls[0]!, ''],
        [files[1]!.name, '4', sha256(files[1]!.body), urls[1]!, ''],
      ]);
      expect(rows).toHaveLength(4);
      expect(rows[3]!.slice(0, 4)).toEqual(['', '', '', missing]);
      expect(rows[3]![4]).toMatch(/404/);
      expect(archive.toString('latin1')).not.toContain('secret');
    });
  }
});

describe('refusals', () => {
  it('answers 400 naming the field for what a format cannot do', async () => {
    const files = [{ url: origin.set('/refused', { body: Buffer.from('x') }) }];
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ format: 'tar.gz', mode: 'stream' }, /^format: must be "zip" or "tar" in stream mode/],
      [{ format: 'tar', encryption: { method: 'aes-256', password: 'a-long-password' } }, /^encryption: is only for format "zip"/],
      [{ format: 'tar', compression: 'deflate' }, /^compression: must be "store" with format "tar"/],
      [{ manifest: true, mode: 'stream' }, /^manifest: is only for stored jobs/],
      [{ folders: ['empty/'] }, /^folders: empty folder entries are not supported yet/],
    ];
    for (const [body, message] of cases) {
      const res = await call(stack.url, 'POST', '/jobs', { key, body: { files, ...body } });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(message);
    }
  });
});
