// WinZip AES-256 (AE-2) ZIPs built from the layout are read back exactly by an independent
// reader (testing-aes.ts), by 7-Zip and by libarchive (bsdtar), and refused with a wrong password.
import { execFile } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { AesCtr, ZipEncryption } from './aes';
import { planZip, type ZipLayout } from './layout';
import { buildRange, planRange } from './range';
import { readAesZip, WrongPassword } from './testing-aes';

const run = promisify(execFile);
const MTIME = new Date('2026-11-26T15:00:00Z');
const PASSWORD = 'correct horse battery';
const SEED = Buffer.alloc(32, 7);

// Sizes around the 16-byte AES block and beyond one 64 KiB chunk.
const BODIES = [0, 1, 15, 16, 17, 31, 33, 4096, 70_001].map((n) => randomBytes(n));
const NAMES = BODIES.map((_, i) => `dir/entry-${i}.bin`);

function aesZip(password = PASSWORD, seed = SEED, sequence = 1): { layout: ZipLayout; bytes: Buffer } {
  const layout = planZip(BODIES.map((b, i) => ({ name: NAMES[i]!, size: b.length })), { mtime: MTIME, encryption: new ZipEncryption(password, seed, sequence) });
  const plan = planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null });
  const built = buildRange(layout, plan, { read: (e, from, to) => BODIES[e]!.subarray(from, to) }, new Map());
  return { layout, bytes: built.bytes };
}

let dir: string;
let file: string;
let zip: Buffer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aes-zip-'));
  file = join(dir, 'enc.zip');
  zip = aesZip().bytes;
  await writeFile(file, zip);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('WinZip AES-256 ZIPs', () => {
  it('have the exact size the layout says: 28 bytes of data and 11 of extra field per header more than plain', () => {
    const { layout } = aesZip();
    const plain = planZip(BODIES.map((b, i) => ({ name: NAMES[i]!, size: b.length })), { mtime: MTIME });
    expect(zip.length).toBe(layout.totalSize);
    expect(layout.totalSize - plain.totalSize).toBe(BODIES.length * (28 + 11 + 11));
  });

  it('an independent AE-2 reader checks every verifier and MAC and gets every body back', () => {
    const read = readAesZip(zip, PASSWORD);
    expect(read.map((e) => e.name)).toEqual(NAMES);
    read.forEach((e, i) => expect(e.data.equals(BODIES[i]!)).toBe(true));
    expect(() => readAesZip(zip, 'not the password')).toThrow(WrongPassword);
  });

  it('a flipped ciphertext byte fails its MAC', () => {
    const { layout } = aesZip();
    const tampered = Buffer.from(zip);
    tampered[layout.entries[8]!.dataOffset + 1000]! ^= 1;
    expect(() => readAesZip(tampered, PASSWORD)).toThrow(/authentication code/);
  });

  it('is byte-identical on every build; salts differ per entry, per ZIP of the job and per job seed', () => {
    expect(aesZip().bytes.equals(zip)).toBe(true);
    const { layout } = aesZip();
    const salts = layout.entries.map((e) => zip.subarray(e.dataOffset - 18, e.dataOffset - 2).toString('hex'));
    expect(new Set(salts).size).toBe(BODIES.length);
    const other = aesZip(PASSWORD, SEED, 2);
    expect(other.bytes.subarray(layout.entries[0]!.dataOffset - 18, layout.entries[0]!.dataOffset - 2).toString('hex')).not.toBe(salts[0]);
    const otherSeed = aesZip(PASSWORD, Buffer.alloc(32, 8));
    expect(otherSeed.bytes.equals(zip)).toBe(false);
  });

  it('encrypts any byte range alone: the counter continues across blocks and chunks', () => {
    const enc = new ZipEncryption(PASSWORD, SEED, 1);
    const body = BODIES[8]!;
    const whole = enc.cipher(8).xor(body, 0);
    for (const cut of [1, 15, 16, 17, 4095, 4096, 65_537]) {
      const a = new AesCtr(enc.keysOf(8).aesKey).xor(body.subarray(0, cut), 0);
      const b = new AesCtr(enc.keysOf(8).aesKey).xor(body.subarray(cut), cut);
      expect(Buffer.concat([a, b]).equals(whole)).toBe(true);
    }
    // Input at every alignment, from every offset alignment, gives the same bytes.
    for (let shift = 0; shift < 4; shift++) {
      const unaligned = Buffer.alloc(body.length + 4);
      body.copy(unaligned, shift);
      const input = unaligned.subarray(shift, shift + body.length);
      for (const at of [0, 1, 2, 3, 5, 18]) expect(enc.cipher(8).xor(input.subarray(at), at).equals(whole.subarray(at))).toBe(true);
    }
  });

  it('one cipher over chunks of every size and alignment, read on, skipped ahead and back, gives every chunk its bytes and never changes one it gave', () => {
    const key = randomBytes(32);
    const size = 3 * 1024 * 1024 + 5;
    const body = randomBytes(size);
    // The AE keystream written out plainly: AES-256 of each block's little-endian counter, from 1.
    const counters = Buffer.alloc(Math.ceil(size / 16) * 16);
    for (let b = 0; b < counters.length / 16; b++) counters.writeBigUInt64LE(BigInt(b + 1), b * 16);
    const keystream = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false).update(counters);
    const expected = Buffer.from(body.map((byte, i) => byte ^ keystream[i]!));

    const cipher = new AesCtr(key);
    const given: { out: Buffer; at: number; copy: Buffer }[] = [];
    let at = 0;
    let seed = 20261126;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    while (given.length < 400) {
      const jump = next(10);
      if (jump === 0) at = next(size); // anywhere, back or ahead
      else if (jump === 1) at = Math.min(size - 1, at + next(100_000)); // a gap
      const length = Math.min(size - at, [1, 15, 16, 17, 1000, 16_384, 65_536, 65_537, 300_000, 1_100_000][next(10)]!);
      const shift = next(4);
      const input = Buffer.alloc(length + 4);
      body.copy(input, shift, at, at + length);
      const out = cipher.xor(input.subarray(shift, shift + length), at);
      expect(out.equals(expected.subarray(at, at + length))).toBe(true);
      given.push({ out, at, copy: Buffer.from(out) });
      at += length;
      if (at >= size) at = 0;
    }
    for (const g of given) expect(g.out.equals(g.copy)).toBe(true);
  });

  it('counts past 2^32 blocks: 64 GiB into a body', () => {
    const key = randomBytes(32);
    const at = 2 ** 36 - 40; // crosses block 2^32 - 1 into 2^32 (counters 2^32 and 2^32 + 1)
    const chunk = randomBytes(100);
    const firstBlock = Math.floor(at / 16);
    const counters = Buffer.alloc(Math.ceil((at + chunk.length) / 16 - firstBlock) * 16);
    for (let b = 0; b < counters.length / 16; b++) counters.writeBigUInt64LE(BigInt(firstBlock + b + 1), b * 16);
    const keystream = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false).update(counters).subarray(at - firstBlock * 16);
    expect(new AesCtr(key).xor(chunk, at).equals(Buffer.from(chunk.map((byte, i) => byte ^ keystream[i]!)))).toBe(true);
  });

  it('7-Zip extracts every entry exactly and refuses a wrong password', async () => {
    const out = join(dir, '7z');
    await run('7z', ['x', '-y', `-p${PASSWORD}`, `-o${out}`, file]);
    for (let i = 0; i < BODIES.length; i++) expect((await readFile(join(out, NAMES[i]!))).equals(BODIES[i]!)).toBe(true);
    await expect(run('7z', ['t', '-pwrong-password', file])).rejects.toThrow();
  });

  it('libarchive (bsdtar --passphrase) extracts every entry exactly and refuses a wrong password', async () => {
    const out = join(dir, 'bsdtar');
    await run('mkdir', ['-p', out]);
    await run('bsdtar', ['-xf', file, '--passphrase', PASSWORD, '-C', out]);
    for (let i = 0; i < BODIES.length; i++) expect((await readFile(join(out, NAMES[i]!))).equals(BODIES[i]!)).toBe(true);
    const wrong = join(dir, 'bsdtar-wrong');
    await run('mkdir', ['-p', wrong]);
    await expect(run('bsdtar', ['-xf', file, '--passphrase', 'wrong-password', '-C', wrong])).rejects.toThrow();
  });
});

describe('ranges of an AES ZIP', () => {
  it('every range around each header, salt, body, MAC, descriptor and central boundary equals those bytes of the whole, with MACs unknown or known', () => {
    // Four entries (empty, under a block, over two blocks, 4 KiB): every pair of points is a range.
    const bodies = [BODIES[0]!, BODIES[4]!, BODIES[6]!, BODIES[7]!];
    const layout = planZip(bodies.map((b, i) => ({ name: NAMES[i]!, size: b.length })), { mtime: MTIME, encryption: new ZipEncryption(PASSWORD, SEED, 1) });
    const zip = buildRange(layout, planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null }), { read: (e, f, t) => bodies[e]!.subarray(f, t) }, new Map()).bytes;
    const { macs: allMacs } = buildRange(layout, planRange(layout, 0, layout.totalSize - 1, { has: () => false, checkpoint: () => null }), { read: (e, f, t) => bodies[e]!.subarray(f, t) }, new Map());
    const points = new Set<number>();
    const around = (at: number) => [at - 1, at, at + 1].forEach((p) => points.add(Math.min(layout.totalSize - 1, Math.max(0, p))));
    for (const s of layout.segments) around(s.start);
    // The salt and the verifier inside each header.
    for (const e of layout.entries) [e.dataOffset - 18, e.dataOffset - 2].forEach(around);
    const sorted = [...points].sort((a, b) => a - b);
    let ranges = 0;
    for (const known of [new Map<number, Buffer>(), allMacs!]) {
      for (const start of sorted) {
        for (const end of sorted) {
          if (end < start) continue;
          let read = 0;
          const source = { read: (e: number, f: number, t: number) => ((read += t - f), bodies[e]!.subarray(f, t)) };
          const plan = planRange(layout, start, end, { has: (e) => known.has(e), checkpoint: () => null });
          const built = buildRange(layout, plan, source, new Map(), known);
          expect(built.bytes.equals(zip.subarray(start, end + 1))).toBe(true);
          // A MAC not known (needed, or learnable because the range reaches its body's end)
          // costs at most its entry once, beyond the body bytes sent.
          const sentBody = plan.pieces.reduce((n, p) => n + (p.kind === 'body' ? p.to - p.from : 0), 0);
          const macEntries = layout.entries.filter((e) => e.descriptorOffset > start && e.descriptorOffset - 10 <= end + 1).map((e) => e.index);
          const bound = sentBody + (known.size ? 0 : macEntries.reduce((n, e) => n + layout.entries[e]!.size, 0));
          expect(read).toBeLessThanOrEqual(bound);
          ranges++;
        }
      }
    }
    expect(ranges).toBeGreaterThan(5_000);
  });
});
