// Deflate for stored jobs (yazl's own compression): read byte for byte by unzip, Python's
// zipfile, 7-Zip and yauzl; split deflate jobs keep every ZIP under its cap; bad archive
// options are 400s naming the field.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { readWithYauzl } from '../packages/zip/src/testing';
import { call, createUser, download, waitForJob } from './helpers';
import { startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { startSyntheticOrigin, type SyntheticOrigin } from './synthetic-origin';

const MiB = 1024 * 1024;
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

async function completedJob(body: Record<string, unknown>) {
  const res = await call(stack.url, 'POST', '/jobs', { key, body });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, key, res.body.job_id);
  expect(job.status).toBe('completed');
  return job;
}

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
