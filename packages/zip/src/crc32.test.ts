import { randomBytes } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { crc32, crc32Combine } from './crc32';
import { zerosCrc } from './testing';

describe('crc32', () => {
  it('matches the standard check value', () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.alloc(0))).toBe(0);
  });

  it('continues from a previous value', () => {
    const data = randomBytes(10_000);
    expect(crc32(data.subarray(3000), crc32(data.subarray(0, 3000)))).toBe(crc32(data));
  });

  it('combines CRCs of adjacent pieces without their bytes', () => {
    for (let i = 0; i < 200; i++) {
      const data = randomBytes(1 + Math.floor(Math.random() * 5000));
      const cut = Math.floor(Math.random() * (data.length + 1));
      const a = data.subarray(0, cut);
      const b = data.subarray(cut);
      expect(crc32Combine(crc32(a), crc32(b), b.length)).toBe(crc32(data));
    }
  });

  it('computes the CRC of long zero runs by combination', () => {
    for (const n of [0, 1, 2, 3, 1000, 65_537, 3 * 1024 * 1024 + 5]) expect(zerosCrc(n)).toBe(crc32(Buffer.alloc(n)));
  });
});
