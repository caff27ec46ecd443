/** CRC-32 (ISO-HDLC, as ZIP uses) of `data`, continuing from `previous`: folded by carry-less multiplication (packages/crc32). */
export { crc32 } from '@ap/crc32';

// crc32Combine follows zlib's crc32_combine: multiplying by x^(8·len) modulo the CRC
// polynomial shifts a CRC over `len` zero bytes, so CRCs of adjacent pieces can be joined
// without the bytes. Lengths are JS numbers (exact up to 2^53).
const POLY = 0xedb88320;

function multModP(a: number, b: number): number {
  let m = 0x80000000;
  let p = 0;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) === 0) break;
    }
    m >>>= 1;
    b = b & 1 ? (b >>> 1) ^ POLY : b >>> 1;
  }
  return p >>> 0;
}

/** X2N[k] = x^(2^k) modulo the polynomial. */
const X2N: number[] = (() => {
  const table: number[] = [];
  let p = 0x40000000; // x^1
  table.push(p);
  for (let n = 1; n < 32; n++) table.push((p = multModP(p, p)));
  return table;
})();

/** x^(n·2^k) modulo the polynomial. */
function x2nModP(n: number, k: number): number {
  let p = 0x80000000; // x^0
  while (n > 0) {
    if (n % 2 === 1) p = multModP(X2N[k & 31]!, p);
    n = Math.floor(n / 2);
    k++;
  }
  return p;
}

/** CRC-32 of A‖B from crc(A), crc(B) and the length of B. */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  return (multModP(x2nModP(lengthB, 3), crcA >>> 0) ^ (crcB >>> 0)) >>> 0;
}
