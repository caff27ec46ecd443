import { randomBytes, randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, expect, it } from '@jest/globals';
import { addon, crc32, method } from '@ap/crc32';

// Every method the CPU has, down to the bytewise table: each must agree with zlib's.
const methods = Array.from({ length: addon.method + 1 }, (_, m) => m);
const reference = (data: Uint8Array, previous: number) => zlibCrc32(data, previous) >>> 0;

describe('@ap/crc32', () => {
  it('uses the fastest folding this CPU has', () => {
    const flags = new Set((/^flags\s*:(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '').trim().split(/\s+/));
    const has = (...names: string[]) => names.every((f) => flags.has(f));
    const expected = !has('pclmulqdq', 'sse4_1')
      ? 'zlib'
      : !has('vpclmulqdq', 'avx2')
        ? 'pclmul'
        : has('avx512f', 'avx512vl')
          ? 'vpclmul-avx512'
          : 'vpclmul-avx2';
    expect(method).toBe(expected);
  });

  it('gives the standard check value', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    for (const m of methods) expect(addon.crc32(Buffer.from('123456789'), 0, m)).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('agrees with zlib at every length around the fold widths, from any alignment and previous value', () => {
    const pool = randomBytes(4096 + 64);
    for (const m of methods) {
      for (let length = 0; length <= 1100; length++) {
        const offset = length % 61;
        const data = pool.subarray(offset, offset + length);
        const previous = (length * 2654435761) >>> 0;
        expect([m, length, addon.crc32(data, previous, m)]).toEqual([m, length, reference(data, previous)]);
      }
    }
  });

  it('agrees with zlib on large random buffers and continues across cuts', () => {
    for (let i = 0; i < 40; i++) {
      const data = randomBytes(randomInt(1, 3 * 1024 * 1024)).subarray(randomInt(0, 64));
      const whole = reference(data, 0);
      for (const m of methods) expect(addon.crc32(data, 0, m)).toBe(whole);
      const cut = randomInt(0, data.length + 1);
      expect(crc32(data.subarray(cut), crc32(data.subarray(0, cut)))).toBe(whole);
    }
  });

  it('takes previous values as zlib does (unsigned, or a signed 32-bit read back from a column)', () => {
    const data = randomBytes(5000);
    for (const previous of [0, 1, 0x7fffffff, 0x80000000, 0xffffffff]) {
      expect(crc32(data, previous)).toBe(reference(data, previous));
      expect(crc32(data, previous | 0)).toBe(reference(data, previous));
    }
  });

  // (By message: the addon's TypeError comes from Node's realm, not the test's.)
  it('refuses what is not bytes', () => {
    expect(() => addon.crc32('text' as unknown as Uint8Array)).toThrow('crc32: data must be a Uint8Array');
    expect(() => addon.crc32(new Uint16Array(4) as unknown as Uint8Array)).toThrow('crc32: data must be a Uint8Array');
    expect(() => addon.crc32(Buffer.alloc(4), 'x' as unknown as number)).toThrow('crc32: previous must be a number');
  });
});
