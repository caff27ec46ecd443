// The two loops of AE counter mode that JavaScript runs slowly, as WebAssembly: writing the
// counter blocks a window of keystream is made from, and XORing a chunk with its keystream
// 16 bytes a step. Copying the operands into the module's memory and the result back costs
// less than the four-byte typed-array loop it replaces, and needs no alignment; figures are in
// docs/archive-options.md "Speed". The module (about 150 bytes) is assembled below from its
// instructions, so there is no binary to trust.

/** Bytes XORed per call: the module's memory holds two such regions, each with 16 spare bytes. */
const PIECE = 64 * 1024;
/** Counter blocks made per call: one window of keystream. */
export const MAX_COUNTER_BYTES = 1024 * 1024;

const DST_AT = 0;
const SRC_AT = PIECE + 16;
const COUNTERS_AT = 2 * (PIECE + 16);
const PAGES = Math.ceil((COUNTERS_AT + MAX_COUNTER_BYTES) / 65536);

const leb = (n: number): number[] => {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
};
const section = (id: number, body: number[]) => [id, ...leb(body.length), ...body];
const name = (s: string) => [...leb(s.length), ...Buffer.from(s)];
const get = (local: number) => [0x20, local];
const set = (local: number) => [0x21, local];
const add = (local: number, n: number) => [...get(local), 0x41, ...leb(n), 0x6a, ...set(local)]; // local += n (n < 64)
const MEMARG = [0x00, 0x00]; // align 1, offset 0
const I32_STORE = [0x36, ...MEMARG];
const V128 = { load: [0xfd, 0x00, ...MEMARG], store: [0xfd, 0x0b, ...MEMARG], xor: [0xfd, 0x51] };
/** A function body: locals `$end` (i32), then `end = p0 + p2 << shift` and a loop while p0 < end. */
const loopBody = (shift: number, step: number[]) => {
  const code = [
    0x01, 0x01, 0x7f, // locals: one i32 ($end, local 3)
    ...get(0), ...get(2), 0x41, shift, 0x74, 0x6a, ...set(3), // end = p0 + (p2 << shift)
    0x02, 0x40, 0x03, 0x40, // block, loop
    ...get(0), ...get(3), 0x4f, 0x0d, 0x01, // br_if (p0 >= end) out of the block
    ...step,
    0x0c, 0x00, 0x0b, 0x0b, 0x0b, // br loop, end loop, end block, end function
  ];
  return [...leb(code.length), ...code];
};

/**
 * (func $xor (param $dst i32) (param $src i32) (param $n i32)): while dst < dst + n,
 *   v128.store(dst, v128.load(dst) ^ v128.load(src)); dst += 16; src += 16
 *   (a tail under 16 bytes is XORed whole: each region has 16 spare bytes after it)
 * (func $counters (param $at i32) (param $first i32) (param $count i32)): count blocks at `at`,
 *   i32.store(at, first); at += 16; first += 1 (the blocks' other 12 bytes are never written: 0)
 */
function kernelsModule(): Uint8Array {
  const xor = loopBody(0, [...get(0), ...get(0), ...V128.load, ...get(1), ...V128.load, ...V128.xor, ...V128.store, ...add(0, 16), ...add(1, 16)]);
  const counters = loopBody(4, [...get(0), ...get(1), ...I32_STORE, ...add(0, 16), ...add(1, 1)]);
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // "\0asm", version 1
    ...section(1, [0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00]), // one type: (i32 i32 i32) -> ()
    ...section(3, [0x02, 0x00, 0x00]), // two functions of that type
    ...section(5, [0x01, 0x00, PAGES]), // one memory
    ...section(7, [0x03, ...name('memory'), 0x02, 0x00, ...name('xor'), 0x00, 0x00, ...name('counters'), 0x00, 0x01]),
    ...section(10, [0x02, ...xor, ...counters]),
  ]);
}

// The WebAssembly global, typed here: the project's libs are ES and Node's, which leave it out.
const { Instance, Module } = (globalThis as unknown as { WebAssembly: { Module: new (bytes: Uint8Array) => object; Instance: new (module: object) => { exports: Record<string, unknown> } } }).WebAssembly;
const { exports } = new Instance(new Module(kernelsModule()));
const wasmXor = exports.xor as (dst: number, src: number, n: number) => void;
const wasmCounters = exports.counters as (at: number, first: number, count: number) => void;
const heap = Buffer.from((exports.memory as { buffer: ArrayBuffer }).buffer); // the memory never grows

/** out[i] ^= a[i] for every byte of `a` (`out` as long). */
export function xorInto(out: Uint8Array, a: Uint8Array): void {
  const n = a.length;
  if (n < 64) {
    for (let i = 0; i < n; i++) out[i]! ^= a[i]!;
    return;
  }
  for (let done = 0; done < n; done += PIECE) {
    const length = Math.min(PIECE, n - done);
    heap.set(out.subarray(done, done + length), DST_AT);
    heap.set(a.subarray(done, done + length), SRC_AT);
    wasmXor(DST_AT, SRC_AT, length);
    out.set(heap.subarray(DST_AT, DST_AT + length), done);
  }
}

/**
 * `count` AE counter blocks from `first` (a 128-bit little-endian integer per block), for
 * first + count <= 2^32 and count * 16 <= MAX_COUNTER_BYTES. The buffer is the module's memory:
 * valid until the next call, so for a synchronous use such as a cipher's update.
 */
export function counterBlocks(first: number, count: number): Buffer {
  if (count * 16 > MAX_COUNTER_BYTES || first + count > 0x100000000) throw new RangeError('counter blocks out of range');
  wasmCounters(COUNTERS_AT, first, count);
  return heap.subarray(COUNTERS_AT, COUNTERS_AT + count * 16);
}

