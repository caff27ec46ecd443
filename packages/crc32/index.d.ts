/** CRC-32 (ISO-HDLC, as ZIP uses) of `data`, continuing from `previous`: zlib.crc32's contract. */
export declare function crc32(data: Uint8Array, previous?: number): number;
/** What `crc32` runs on this CPU. */
export declare const method: 'zlib' | 'pclmul' | 'vpclmul-avx2' | 'vpclmul-avx512';
/**
 * The addon itself: `method` 0 table, 1 PCLMULQDQ, 2 VPCLMULQDQ on AVX2 registers, 3 VPCLMULQDQ on
 * AVX-512 registers (capped at the CPU's best).
 */
export declare const addon: { crc32(data: Uint8Array, previous?: number, method?: number): number; method: 0 | 1 | 2 | 3 };
