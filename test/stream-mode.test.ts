// Stream mode end to end on the real stack: ZIPs built while downloaded, any byte range served
// from the layout, resumes that fetch only what the client lacks, refusals before any byte.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { createReadStream, mkdtempSync, openSync, readSync, closeSync, rmSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { planZip, type ZipLayout } from '@ap/zip';
import { renderWhole } from '../packages/zip/src/testing';
import { monthStart } from '@ap/jobs';
import { call, createUser, download, downloadSparse, partialGet, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startSyntheticOrigin, tinyBody, type SyntheticOrigin } from './synthetic-origin';
import { readZip } from './zip-readers';

const MiB = 1024 * 1024;
const execFileAsync = promisify(execFile);

let stack: Stack;
let origin: Origin;
let synthetic: SyntheticOrigin;
let key: string;

beforeAll(async () => {
  // Small checkpoint interval so a test-sized body gets several.
  // Above the 50 concurrent downloads one test holds (the per-user cap is tested in stream-slots.test.ts).
  stack = await startStack({ STREAM_DOWNLOADS_PER_USER: '64' }, { app: { stream: { checkpointEvery: 4 * MiB } } });
  origin = await startOrigin();
  synthetic = await startSyntheticOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
  await synthetic.close();
});

async function streamJob(files: { url: string; filename?: string }[], apiKey = key, extra: Record<string, unknown> = {}) {
  const res = await call(stack.url, 'POST', '/jobs', { key: apiKey, body: { files, mode: 'stream', ...extra } });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, apiKey, res.body.job_id);
  expect(job.status).toBe('completed');
  return job;
}

async function layoutOf(zipId: string): Promise<ZipLayout> {
  const zip = await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId }, include: { job: true } });
  const files = await stack.ctx.db.jobFile.findMany({ where: { zipId, error: null }, orderBy: { position: 'asc' } });
  return planZip(files.map((f) => ({ name: f.entryName!, size: Number(f.size) })), { mtime: zip.job.createdAt });
}

async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('stream ZIP bytes', () => {
  const bodies = [bytesOf(101, 70_000), bytesOf(102, 0), bytesOf(103, 1_500_000), bytesOf(104, 333), bytesOf(105, 250_000)];
  let job: any;
  let layout: ZipLayout;
  let expected: Buffer;

  beforeAll(async () => {
    job = await streamJob([
      { url: origin.set('/s/alpha.bin', { body: bodies[0]!, etag: '"a1"' }) },
      { url: origin.set('/s/empty.txt', { body: bodies[1]! }), filename: 'dir/empty.txt' },
      { url: origin.set('/s/big.dat', { body: bodies[2]!, etag: '"b1"' }) },
      { url: origin.set('/s/tiny', { body: bodies[3]! }), filename: 'ünïcode.txt' },
      { url: origin.set('/s/last.bin', { body: bodies[4]!, noHead: true }) },
    ], key, { zip_filename: 'stream.zip' });
    layout = await layoutOf(job.zips[0].id);
    expected = renderWhole(layout, bodies);
  });

  it('is completed with the exact size, before any byte is built', () => {
    expect(job.zips[0]).toMatchObject({ status: 'completed', size: layout.totalSize, download_url: expect.any(String) });
  });

  it('serves ranges at every kind of boundary before the CRCs are known, then the whole ZIP', async () => {
    const url = job.zips[0].download_url;
    const e = layout.entries;
    const size = layout.totalSize;
    const ranges: [number, number][] = [
      [5, 20], // inside the first local header
      [e[0]!.dataOffset + 1000, e[2]!.offset + 10], // body, descriptor, headers, into the next header
      [e[0]!.descriptorOffset, e[0]!.descriptorOffset + 5], // inside a descriptor (needs a CRC alone)
      [layout.centralOffset + 10, layout.centralOffset + 120], // inside the central directory
      [e[2]!.dataOffset + 700_000, size - 1], // a resume mid-body to the end
      [size - 1, size - 1], // the last byte
    ];
    for (const [start, end] of ranges) {
      const res = await download(url, { range: `bytes=${start}-${end}` });
      expect({ range: [start, end], status: res.status, cr: res.headers.get('content-range') }).toEqual({ range: [start, end], status: 206, cr: `bytes ${start}-${end}/${size}` });
      expect(res.body.equals(expected.subarray(start, end + 1))).toBe(true);
    }
    const suffix = await download(url, { range: 'bytes=-100' });
    expect(suffix.status).toBe(206);
    expect(suffix.body.equals(expected.subarray(size - 100))).toBe(true);

    const full = await download(url);
    expect(full.status).toBe(200);
    expect(full.headers.get('content-type')).toBe('application/zip');
    expect(full.headers.get('content-length')).toBe(String(size));
    expect(full.headers.get('accept-ranges')).toBe('bytes');
    expect(full.headers.get('content-disposition')).toBe(`attachment; filename="stream.zip"; filename*=UTF-8''stream.zip`);
    expect(full.headers.get('etag')).toMatch(/^"s-/);
    expect(full.body.equals(expected)).toBe(true);
    expect(await readZip(full.body)).toEqual([
      { name: 'alpha.bin', size: bodies[0]!.length, sha256: sha256(bodies[0]!) },
      { name: 'dir/empty.txt', size: 0, sha256: sha256(bodies[1]!) },
      { name: 'big.dat', size: bodies[2]!.length, sha256: sha256(bodies[2]!) },
      { name: 'ünïcode.txt', size: bodies[3]!.length, sha256: sha256(bodies[3]!) },
      { name: 'last.bin', size: bodies[4]!.length, sha256: sha256(bodies[4]!) },
    ]);
    // The full pass stored every CRC: a central-directory range now costs no origin bytes.
    const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId: job.zips[0].id }, orderBy: { position: 'asc' } });
    expect(rows.every((r) => r.crc32 !== null || r.size === 0n)).toBe(true);
    origin.bytesSent.clear();
    const central = await download(url, { range: `bytes=${layout.centralOffset}-${size - 1}` });
    expect(central.body.equals(expected.subarray(layout.centralOffset))).toBe(true);
    expect([...origin.bytesSent.values()].reduce((a, b) => a + b, 0)).toBe(0);
    // A second download is byte-identical, with the same ETag.
    const again = await download(url);
    expect(again.body.equals(expected)).toBe(true);
    expect(again.headers.get('etag')).toBe(full.headers.get('etag'));
  });

  it('holds 50 concurrent downloads, each byte-identical', async () => {
    const url = job.zips[0].download_url;
    const all = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? download(url) : download(url, { range: `bytes=${i * 1000}-` }))));
    all.forEach((res, i) => expect(res.body.equals(i % 2 ? expected : expected.subarray(i * 1000))).toBe(true));
  });

  it('honours If-Range, answers 416 and HEAD', async () => {
    const url = job.zips[0].download_url;
    const size = layout.totalSize;
    const head = await fetch(url, { method: 'HEAD' });
    const etag = head.headers.get('etag')!;
    expect(head.headers.get('content-length')).toBe(String(size));
    const ok = await download(url, { range: 'bytes=10-19', 'if-range': etag });
    expect(ok.status).toBe(206);
    expect(ok.body.equals(expected.subarray(10, 20))).toBe(true);
    const stale = await download(url, { range: 'bytes=10-19', 'if-range': '"s-other"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(expected)).toBe(true);
    const bad = await download(url, { range: `bytes=${size}-` });
    expect(bad.status).toBe(416);
    expect(bad.headers.get('content-range')).toBe(`bytes */${size}`);
  });
});

describe('unknown sizes', () => {
  it('streams a valid ZIP chunked, without ranges, when an input size is unknown', async () => {
    const a = bytesOf(150, 120_000);
    const b = bytesOf(151, 3000);
    const job = await streamJob([{ url: origin.set('/u/chunked.bin', { body: a, chunked: true }) }, { url: origin.set('/u/known.bin', { body: b }) }]);
    expect(job.zips[0].size).toBeNull();
    const res = await download(job.zips[0].download_url, { range: 'bytes=0-99' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBeNull();
    expect(res.headers.get('accept-ranges')).toBeNull();
    expect(res.headers.get('content-type')).toBe('application/zip');
    expect(await readZip(res.body)).toEqual([
      { name: 'chunked.bin', size: a.length, sha256: sha256(a) },
      { name: 'known.bin', size: b.length, sha256: sha256(b) },
    ]);
  });
});

describe('resume', () => {
  it('fetches from the origin little more than the bytes the client lacks', async () => {
    const big = bytesOf(201, 48 * MiB);
    const job = await streamJob([{ url: origin.set('/r/first.bin', { body: bytesOf(200, 1000), etag: '"f"' }) }, { url: origin.set('/r/big.bin', { body: big, etag: '"big"' }) }]);
    const url = job.zips[0].download_url;
    const layout = await layoutOf(job.zips[0].id);
    const size = layout.totalSize;
    const cut = Math.floor(size * 0.9);
    const first = await partialGet(url, cut);
    expect(first.status).toBe(200);
    // The disconnect leaves a checkpoint at or past what the client has.
    const bigEntry = layout.entries[1]!;
    await until(async () => {
      const row = await stack.ctx.db.jobFile.findFirstOrThrow({ where: { zipId: job.zips[0].id, position: 1 } });
      return row.crcPrefixLen !== null && Number(row.crcPrefixLen) >= cut - bigEntry.dataOffset;
    });
    // Requests the first download opened just before its client left may reach the origin
    // later on a loaded machine: they are not the resume's.
    for (let seen = -1; seen !== origin.requests.length; ) {
      seen = origin.requests.length;
      await new Promise((r) => setTimeout(r, 300));
    }
    origin.bytesSent.clear();
    origin.requests.length = 0;
    const rest = await download(url, { range: `bytes=${cut}-`, 'if-range': first.etag });
    expect(rest.status).toBe(206);
    const whole = Buffer.concat([first.got, rest.body]);
    expect(whole.length).toBe(size);
    expect(whole.equals(renderWhole(layout, [bytesOf(200, 1000), big]))).toBe(true);
    const fetched = [...origin.bytesSent.values()].reduce((a, b) => a + b, 0);
    // Only the bytes after the cut (plus the origin's chunking) are fetched again.
    expect(fetched / (size - cut)).toBeLessThanOrEqual(1.2);
    expect(origin.requests.every((r) => r.path !== '/r/first.bin')).toBe(true);
    await readZip(whole);
  });
});

describe('refusals', () => {
  it('refuses an input that changed since probing, before the first byte', async () => {
    const job = await streamJob([{ url: origin.set('/c/one.bin', { body: bytesOf(300, 5000), etag: '"v1"' }) }, { url: origin.set('/c/two.bin', { body: bytesOf(301, 5000) }) }]);
    origin.set('/c/one.bin', { body: bytesOf(399, 5000), etag: '"v2"' });
    const res = await call(job.zips[0].download_url.replace(/\/download\/.*/, ''), 'GET', job.zips[0].download_url.replace(/^.*(\/download\/)/, '$1'));
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ success: false, error: { code: 'SOURCE_UNAVAILABLE', message: expect.stringMatching(/changed/) } });
    expect(res.headers.get('content-disposition')).toBeNull();
  });

  it('cuts the transfer short when a later input changed (size)', async () => {
    const job = await streamJob([{ url: origin.set('/c/a.bin', { body: bytesOf(310, 200_000) }) }, { url: origin.set('/c/b.bin', { body: bytesOf(311, 5000) }) }]);
    origin.set('/c/b.bin', { body: bytesOf(312, 6000) });
    const res = await fetch(job.zips[0].download_url);
    expect(res.status).toBe(200);
    await expect(res.arrayBuffer()).rejects.toThrow();
  });

  it('refuses a download over the stream quota with 403 QUOTA_EXCEEDED, and counts delivered bytes', async () => {
    const user = await createUser(stack.ctx, { plan: 'free' });
    const job = await streamJob([{ url: origin.set('/q/a.bin', { body: bytesOf(400, 10_000) }) }], user.apiKey);
    const full = await download(job.zips[0].download_url);
    expect(full.status).toBe(200);
    await download(job.zips[0].download_url, { range: 'bytes=0-99' });
    const sum = async () =>
      (await stack.ctx.db.usageRecord.aggregate({ where: { userId: user.userId, kind: 'stream_bytes', month: monthStart() }, _sum: { amount: true } }))._sum.amount;
    await until(async () => (await sum()) === BigInt(full.body.length + 100));
    await stack.ctx.db.usageRecord.create({ data: { userId: user.userId, kind: 'stream_bytes', month: monthStart(), amount: 20_000_000_000n } });
    const refused = await download(job.zips[0].download_url);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body.toString())).toEqual({ success: false, error: { code: 'QUOTA_EXCEEDED', message: expect.any(String) } });
  });
});

describe('disconnect', () => {
  it('aborts the origin fetch at once', async () => {
    const job = await streamJob([{ url: `${synthetic.url}/zeros/${2 * 1024 * MiB}/huge.bin` }]);
    const before = synthetic.bytesSent;
    await partialGet(job.zips[0].download_url, 4 * MiB);
    await until(() => synthetic.open === 0, 2000);
    expect(synthetic.bytesSent - before).toBeLessThan(256 * MiB);
  });
});

describe('ZIP64', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'ap-stream64-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * Python's zipfile checks every CRC (testzip) and lists the entries; unzip lists them and tests
   * the entries named in `tested`. One full CRC pass of the big entry is enough: Python's is the
   * cheap one, unzip's takes many times longer.
   */
  async function checkWithReaders(file: string, tested: string[]): Promise<{ python: { name: string; size: number }[]; unzip: { name: string; size: number }[] }> {
    const py = `import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
bad = z.testzip()
if bad is not None: sys.exit("bad entry: " + bad)
print(json.dumps([{"name": i.filename, "size": i.file_size} for i in z.infolist()]))`;
    const [python, listed] = await Promise.all([
      execFileAsync('python3', ['-c', py, file], { maxBuffer: 1 << 28 }),
      execFileAsync('unzip', ['-l', file]),
      execFileAsync('unzip', ['-tqq', file, ...tested]),
    ]);
    // unzip -l: "  Length      Date    Time    Name" rows between two dashed lines.
    const rows = listed.stdout.split('\n');
    const first = rows.findIndex((r) => /^-{6,}/.test(r));
    const last = rows.findIndex((r, i) => i > first && /^-{6,}/.test(r));
    const unzip = rows.slice(first + 1, last).map((r) => {
      const m = /^\s*(\d+)\s+\S+\s+\S+\s+(.+)$/.exec(r);
      if (!m) throw new Error(`unzip -l row not understood: ${r}`);
      return { name: m[2]!, size: Number(m[1]) };
    });
    return { python: JSON.parse(python.stdout), unzip };
  }

  /** What `command` writes to stdout when the file is piped into it (it must exit 0). */
  function fromPipe(file: string, [command, ...args]: string[]): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const child = spawn(command!, args, { stdio: ['pipe', 'pipe', 'pipe'] });
      const out: Buffer[] = [];
      let err = '';
      child.stdout.on('data', (c: Buffer) => out.push(c));
      child.stderr.on('data', (c: Buffer) => (err += c.toString()));
      child.stdin.on('error', () => undefined); // a reader that stops early closes its stdin
      createReadStream(file).pipe(child.stdin);
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`${command} exited ${code}: ${err}`))));
    });
  }

  it('streams an entry over 4 GiB that unzip, zipfile and bsdtar from a pipe open', async () => {
    const big = 4 * 1024 * MiB + 12345;
    const users = await createUser(stack.ctx, { plan: 'scale' });
    const job = await streamJob([{ url: `${synthetic.url}/tiny/7/a.txt` }, { url: `${synthetic.url}/zeros/${big}/huge.bin` }, { url: `${synthetic.url}/tiny/8/z.txt` }], users.apiKey);
    const layout = await layoutOf(job.zips[0].id);
    expect(layout.entries[1]!.zip64).toBe(true);
    const file = path.join(dir, 'big.zip');
    expect(await downloadSparse(job.zips[0].download_url, file)).toBe(layout.totalSize);
    expect(statSync(file).size).toBe(layout.totalSize);
    // z.txt starts past 4 GiB: unzip finds and tests it only through the ZIP64 offset.
    const entries = [
      { name: 'a.txt', size: tinyBody(7).length },
      { name: 'huge.bin', size: big },
      { name: 'z.txt', size: tinyBody(8).length },
    ];
    // A forward-only reader from a pipe beside them: it learns from huge.bin's local header (its
    // ZIP64 extra) that its descriptor is 24 bytes, and z.txt's, past 4 GiB, too. Fails without
    // them ("compressed data is wrong size").
    const [read, piped] = await Promise.all([checkWithReaders(file, ['a.txt', 'z.txt']), fromPipe(file, ['bsdtar', '-xOf', '-', 'a.txt', 'z.txt'])]);
    expect(read).toEqual({ python: entries, unzip: entries });
    expect(piped.toString()).toBe(tinyBody(7).toString() + tinyBody(8).toString());
    // A range across the ZIP64 descriptor and into the next entry equals the same bytes of the file.
    const start = layout.entries[1]!.descriptorOffset - 100;
    const part = await partialGet(job.zips[0].download_url, 1000, { range: `bytes=${start}-${start + 199}` });
    expect(part.status).toBe(206);
    const fd = openSync(file, 'r');
    const same = Buffer.alloc(200);
    readSync(fd, same, 0, 200, start);
    closeSync(fd);
    expect(part.got.equals(same)).toBe(true);
  }, 300_000);

  it('streams an archive of 70,000 entries', async () => {
    const users = await createUser(stack.ctx, { plan: 'scale' });
    const job = await streamJob([{ url: `${synthetic.url}/tiny/0/seed.txt` }], users.apiKey);
    const zipId = job.zips[0].id;
    // Over any plan's per-job file limit: the rows the preparer would write are put in place
    // directly, in one statement (through the ORM, 70,000 rows took ~20 s). One entry in ten has
    // a body (7,000 origin requests); the rest are empty, which no reader or writer skips but
    // which cost no request (70,000 requests took ~25 s of the test's ~30).
    const n = 70_000;
    const bodyOf = (i: number) => (i % 10 === 0 ? tinyBody(i) : Buffer.alloc(0));
    const db = stack.ctx.db;
    await db.jobFile.deleteMany({ where: { jobId: job.id } });
    const rows = Array.from({ length: n }, (_, i) => ({ name: `d${Math.floor(i / 1000)}/f${i}.txt`, size: bodyOf(i).length }));
    await db.$executeRaw`INSERT INTO job_files (job_id, position, url, size, etag, entry_name, zip_id)
      SELECT ${job.id}::uuid, i, ${synthetic.url} || '/tiny/' || i || '/f.txt', CASE WHEN i % 10 = 0 THEN (length('file ' || i) + 1) * (i % 3 + 1) ELSE 0 END,
        '"tiny-' || i || '"', 'd' || (i / 1000) || '/f' || i || '.txt', ${zipId}
      FROM generate_series(0, ${n - 1}::int) AS i`;
    const layout = planZip(rows, { mtime: (await db.job.findUniqueOrThrow({ where: { id: job.id } })).createdAt });
    await db.zip.update({ where: { id: zipId }, data: { size: BigInt(layout.totalSize), plannedSize: BigInt(layout.totalSize), fileCount: n } });
    const requestsBefore = synthetic.requests;
    const full = await download(job.zips[0].download_url);
    expect(full.status).toBe(200);
    expect(full.body.equals(renderWhole(layout, rows.map((_, i) => bodyOf(i))))).toBe(true);
    expect(synthetic.requests - requestsBefore).toBeGreaterThanOrEqual(n / 10);
    // unzip -t, Python's zipfile (every CRC) and yauzl, agreeing on every entry.
    const listed = await readZip(full.body);
    expect(listed).toHaveLength(n);
    expect(listed[n - 10]).toEqual({ name: `d69/f${n - 10}.txt`, size: tinyBody(n - 10).length, sha256: sha256(tinyBody(n - 10)) });
    expect(listed[n - 1]).toEqual({ name: `d69/f${n - 1}.txt`, size: 0, sha256: sha256(Buffer.alloc(0)) });
  }, 120_000);
});
