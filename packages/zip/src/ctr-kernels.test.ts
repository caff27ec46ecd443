// The WebAssembly kernels against the plain loops they replace.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { counterBlocks, MAX_COUNTER_BYTES, xorInto } from './ctr-kernels';

describe('AE counter-mode kernels', () => {
  it('xorInto XORs every byte, for lengths around its 16-byte step and 64 KiB piece, at every alignment, and writes nothing else', () => {
    for (const n of [0, 1, 15, 16, 17, 63, 64, 65, 4095, 65_535, 65_536, 65_537, 200_003]) {
      for (const [outShift, aShift] of [[0, 0], [1, 0], [0, 3], [2, 1]] as const) {
        const target = randomBytes(n + 8);
        const out = target.subarray(outShift, outShift + n);
        const a = randomBytes(n + 4).subarray(aShift, aShift + n);
        const expected = Buffer.concat([target.subarray(0, outShift), Buffer.from(out.map((byte, i) => byte ^ a[i]!)), target.subarray(outShift + n)]);
        const aBefore = Buffer.from(a);
        xorInto(out, a);
        expect(target.equals(expected)).toBe(true);
        expect(a.equals(aBefore)).toBe(true);
      }
    }
  });

  it('counterBlocks writes 128-bit little-endian counters, up to 2^32 and a whole window', () => {
    for (const [first, count] of [[1, 1], [1, 5], [255, 3], [65_535, 2], [0xffff_fff0, 16], [7, MAX_COUNTER_BYTES / 16]] as const) {
      const blocks = Buffer.from(counterBlocks(first, count));
      expect(blocks.length).toBe(count * 16);
      const expected = Buffer.alloc(count * 16);
      for (let i = 0; i < count; i++) expected.writeBigUInt64LE(BigInt(first + i), i * 16);
      expect(blocks.equals(expected)).toBe(true);
    }
    expect(() => counterBlocks(0xffff_fff0, 17)).toThrow(RangeError);
    expect(() => counterBlocks(1, MAX_COUNTER_BYTES / 16 + 1)).toThrow(RangeError);
  });
});
