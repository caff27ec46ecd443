// The tar layout against the readers: what it lays out is what the stored writer (TarOutput)
// writes, byte for byte; GNU tar, bsdtar, Python's tarfile and 7-Zip read it name for name and
// byte for byte (a 250-byte name whose last part is over 100 bytes, non-ASCII names, folders,
// bodies around the block size); a body of 8 GiB and more gets its pax size record; and every
// sub-range built from the layout's plan equals the same bytes of the whole archive.
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync, ftruncateSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from '@jest/globals';
import { readTar } from '../../../test/tar-readers';
import { layoutOfFiles, planZip, renderSegment, sliceRange, type ZipLayout } from './layout';
import { buildRange, planRange } from './range';
import { planTar, TarSizer } from './tar-layout';
import { tarHeader, TAR_END_LENGTH, tarPadding, USTAR_MAX_SIZE } from './tar-format';
import { TarOutput } from './tar-output';

const MTIME = new Date('2026-11-25T18:00:00.700Z');
const SECONDS = Math.floor(MTIME.getTime() / 1000);

const longDir = `${'d'.repeat(60)}/${'e'.repeat(60)}`;
const longLast = `${'f'.repeat(107)}.txt`;
const FILES: { name: string; body: Buffer }[] = [
  { name: 'plain.txt', body: Buffer.from('hello tar\n') },
  { name: 'empty.bin', body: Buffer.alloc(0) },
  { name: 'block.bin', body: randomBytes(512) },
  { name: 'odd/one.bin', body: randomBytes(513) },
  // 250 bytes whose last part (111 bytes) fits no ustar name field.
  { name: `${longDir}/${'x'.repeat(250 - longDir.length - 1 - longLast.length)}/${longLast}`, body: randomBytes(100) },
  // Fits ustar's prefix and name split (no pax record).
  { name: `${'p'.repeat(120)}/${'n'.repeat(90)}`, body: randomBytes(7) },
  { name: 'Größe/日本語 ファイル.txt', body: Buffer.from('non-ASCII') },
  { name: 'exactly-a-hundred/'.padEnd(100, 'h'), body: randomBytes(1) },
];
const FOLDERS = ['empty/', 'nested/deeper/'];

function render(layout: ZipLayout, bodies: readonly Buffer[]): Buffer {
  return Buffer.concat(layout.segments.map((s) => (s.kind === 'data' ? bodies[s.entry]! : renderSegment(layout, s, () => 0))));
}

async function written(entries: readonly { name: string; body: Buffer | null }[]): Promise<Buffer> {
  const out = new TarOutput(MTIME);
  const chunks: Buffer[] = [];
  out.outputStream.on('data', (c: Buffer) => chunks.push(c));
  for (const e of entries) {
    if (e.body === null) out.addFolder(e.name);
    else out.addReadStreamLazy(e.name, { size: e.body.length }, (cb) => cb(null, Readable.from([e.body!])));
  }
  out.end();
  await new Promise((resolve) => out.outputStream.on('end', resolve));
  return Buffer.concat(chunks);
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('a tar', () => {
  const entries = [...FOLDERS.map((name) => ({ name, body: null })), ...FILES];
  const layout = planTar(
    entries.map((e) => ({ name: e.name, size: e.body?.length ?? 0 })),
    { mtime: MTIME },
  );
  const bodies = entries.map((e) => e.body ?? Buffer.alloc(0));
  const whole = render(layout, bodies);

  it('is laid out exactly as the stored writer writes it, and sized so as it grows', async () => {
    expect((await written(entries)).equals(whole)).toBe(true);
    expect(whole.length).toBe(layout.totalSize);
    expect(whole.length % 512).toBe(0);
    const sizer = new TarSizer();
    for (const e of entries) sizer.add(e.name, e.body?.length ?? 0);
    expect(sizer.total()).toBe(layout.totalSize);
    expect(layoutOfFiles(FILES.map((f) => ({ entryName: f.name, size: f.body.length })), MTIME, null, 'tar')).toEqual(planTar(FILES.map((f) => ({ name: f.name, size: f.body.length })), { mtime: MTIME }));
    // The same files as a ZIP are another layout.
    expect(layoutOfFiles(FILES.map((f) => ({ entryName: f.name, size: f.body.length })), MTIME)).toEqual(planZip(FILES.map((f) => ({ name: f.name, size: f.body.length })), { mtime: MTIME }));
  });

  it('is read name for name and byte for byte by GNU tar, bsdtar, tarfile and 7-Zip, with pax headers only where ustar cannot hold the name', async () => {
    const { entries: read, members } = await readTar(whole);
    const expected = new Map<string, { size: number; sha256: string | null }>();
    for (const f of FILES) {
      expected.set(f.name, { size: f.body.length, sha256: sha(f.body) });
      const parts = f.name.split('/');
      for (let i = 1; i < parts.length; i++) expected.set(`${parts.slice(0, i).join('/')}/`, { size: 0, sha256: null });
    }
    for (const name of FOLDERS) expected.set(name, { size: 0, sha256: null });
    expected.set('nested/', { size: 0, sha256: null });
    expect(read).toEqual([...expected].map(([name, e]) => ({ name, ...e })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
    // The archive's own entries, in order, as written: files 0644, folders 0755, owner 0 and unnamed, the job's second.
    expect(members.map((m) => m.name)).toEqual(entries.map((e) => e.name));
    for (const m of members) {
      expect({ mode: m.mode, mtime: m.mtime, uid: m.uid, gid: m.gid, uname: m.uname, gname: m.gname }).toEqual({ mode: m.name.endsWith('/') ? 0o755 : 0o644, mtime: SECONDS, uid: 0, gid: 0, uname: '', gname: '' });
    }
    const paxBefore = layout.entries.filter((e) => renderSegment(layout, layout.segments.find((s) => s.kind === 'header' && s.entry === e.index)!, () => 0).length > 512);
    expect(paxBefore.map((e) => e.name.toString())).toEqual([FILES[4]!.name, FILES[6]!.name]);
  });

  it('serves every sub-range from its plan as the same bytes of the whole', () => {
    const small = planTar([{ name: 'a', size: 3 }, { name: 'b/', size: 0 }, { name: 'c', size: 600 }], { mtime: MTIME });
    const smallBodies = [randomBytes(3), Buffer.alloc(0), randomBytes(600)];
    const full = render(small, smallBodies);
    const source = { read: (entry: number, from: number, to: number) => smallBodies[entry]!.subarray(from, to) };
    const known = { has: () => false, checkpoint: () => null };
    const cuts = [...new Set(small.segments.flatMap((s) => [s.start - 1, s.start, s.start + 1, s.start + s.length - 1]))].filter((o) => o >= 0 && o < full.length);
    for (const start of cuts) {
      for (const end of cuts) {
        if (end < start) continue;
        const built = buildRange(small, planRange(small, start, end, known), source, new Map());
        expect(built.bytes.equals(full.subarray(start, end + 1))).toBe(true);
      }
    }
    expect(sliceRange(small, 0, full.length - 1).reduce((n, s) => n + s.length, 0)).toBe(full.length);
  });

  it('gives a body of 8 GiB or more its size in a pax record, which every reader takes', async () => {
    const size = USTAR_MAX_SIZE + 1 + 5;
    const header = tarHeader({ name: 'big.bin', size, folder: false }, SECONDS);
    expect(header.length).toBe(1536);
    expect(header.subarray(512, 1024).toString('latin1')).toContain(`size=${size}\n`);
    // A sparse file: the header, a hole for the body, its padding and the end blocks.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'ap-bigtar-'));
    const file = path.join(dir, 'big.tar');
    try {
      const fd = openSync(file, 'w');
      writeSync(fd, header, 0, header.length, 0);
      ftruncateSync(fd, header.length + size + tarPadding(size) + TAR_END_LENGTH);
      closeSync(fd);
      for (const lister of [['tar', '-tvf'], ['bsdtar', '-tvf']]) {
        const listing = execFileSync(lister[0]!, [lister[1]!, file], { encoding: 'utf8' });
        expect(listing).toContain(String(size));
        expect(listing).toContain('big.bin');
      }
      // Listed only (headers, bodies skipped): tarfile hashing 8 GiB would take a minute.
      const py = execFileSync('python3', ['-c', 'import sys, tarfile; m = tarfile.open(sys.argv[1]).getmembers(); print(len(m), m[0].name, m[0].size)', file], { encoding: 'utf8' });
      expect(py.trim()).toBe(`1 big.bin ${size}`);
      const seven = execFileSync('7z', ['l', file], { encoding: 'utf8' });
      expect(seven).toContain(String(size));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
