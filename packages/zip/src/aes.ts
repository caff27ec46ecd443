// WinZip AES-256 encryption, AE-2 (https://www.winzip.com/en/support/aes-encryption/): each
// entry's data is a 16-byte salt, a 2-byte password verifier, the body encrypted with AES-256
// in counter mode, and a 10-byte HMAC-SHA1 of the ciphertext. Keys come from
// PBKDF2-HMAC-SHA1(password, salt, 1000 iterations): 32 bytes of AES key, 32 of HMAC key, 2 of
// verifier. The counter is a 128-bit little-endian integer starting at 1, so block n of a body
// (bytes 16n..16n+15) is encrypted with counter n+1 and any byte range can be encrypted alone:
// that is what keeps stream mode's exact sizes and Range. Node's aes-256-ctr counts big-endian,
// so the keystream is made here from AES-256-ECB blocks of the counters.
import { createCipheriv, createHash, createHmac, pbkdf2Sync, type Cipheriv, type Hash } from 'node:crypto';
import { endianness } from 'node:os';

export const AES_METHOD = 99;
export const AES_SALT = 16;
export const AES_VERIFIER = 2;
export const AES_MAC = 10;
/** Bytes an entry's data grows by: salt, verifier and MAC. */
export const AES_OVERHEAD = AES_SALT + AES_VERIFIER + AES_MAC;
/** The 0x9901 extra field, in both the local header and the central record. */
export const AES_EXTRA = 11;
const PBKDF2_ITERATIONS = 1000;
const BLOCK = 16;

export interface AesKeys {
  aesKey: Buffer;
  macKey: Buffer;
  verifier: Buffer;
}

/** PBKDF2-HMAC-SHA1 as AE-x specifies it: about a millisecond of CPU per entry. */
export function deriveAesKeys(password: string, salt: Buffer): AesKeys {
  const derived = pbkdf2Sync(Buffer.from(password, 'utf8'), salt, PBKDF2_ITERATIONS, 32 + 32 + AES_VERIFIER, 'sha1');
  return { aesKey: derived.subarray(0, 32), macKey: derived.subarray(32, 64), verifier: derived.subarray(64) };
}

/**
 * An entry's salt: HMAC-SHA256 of the ZIP's sequence and the entry's index under the job's
 * seed. Unique per entry (a salt must never repeat under one password), and stable, so every
 * download and every resumed upload of one ZIP writes the same bytes.
 */
export function entrySalt(seed: Buffer, zipSequence: number, entry: number): Buffer {
  return createHmac('sha256', seed).update(`winzip-aes-salt\0${zipSequence}\0${entry}`).digest().subarray(0, AES_SALT);
}

/** The AE counter-mode cipher of one entry: encrypting and decrypting are the same XOR. */
export class AesCtr {
  /** ECB over whole blocks keeps no state between calls: one key schedule per entry. */
  private readonly ecb: Cipheriv;

  constructor(key: Buffer) {
    this.ecb = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false);
  }

  /** `chunk` XOR the keystream, the chunk being body bytes [offset, offset + length). */
  xor(chunk: Buffer, offset: number): Buffer {
    const firstBlock = Math.floor(offset / BLOCK);
    const skip = offset - firstBlock * BLOCK;
    const blocks = Math.ceil((skip + chunk.length) / BLOCK);
    // The keystream is a fresh buffer: XORed in place and returned (no third buffer).
    const keystream = this.ecb.update(counterBlocks(firstBlock + 1, blocks));
    const out = keystream.subarray(skip, skip + chunk.length);
    xorInto(out, chunk);
    return out;
  }
}

const LITTLE_ENDIAN = endianness() === 'LE';

/** `count` counter blocks from `first`: a little-endian 64-bit counter in each block's low bytes (the high 8 stay 0 below 2^64 blocks). */
function counterBlocks(first: number, count: number): Buffer {
  const counters = Buffer.alloc(count * BLOCK);
  if (LITTLE_ENDIAN) {
    // Typed-array stores: a 64 KiB chunk's 4,096 counters in microseconds, not writeUInt32LE calls.
    const words = new Uint32Array(counters.buffer, counters.byteOffset, count * 4);
    if (first + count <= 0x100000000) {
      // Below 64 GiB into a body the high word stays 0: small integers only (the common case, 10x faster).
      for (let i = 0, at = 0; i < count; i++, at += 4) words[at] = first + i;
    } else {
      for (let i = 0, n = first; i < count; i++, n++) {
        words[i * 4] = n % 0x100000000;
        words[i * 4 + 1] = Math.floor(n / 0x100000000);
      }
    }
  } else {
    for (let i = 0, n = first; i < count; i++, n++) {
      counters.writeUInt32LE(n % 0x100000000, i * BLOCK);
      counters.writeUInt32LE(Math.floor(n / 0x100000000), i * BLOCK + 4);
    }
  }
  return counters;
}

/**
 * out[i] ^= a[i], four bytes at a time: `a` is first copied (a memcpy) to the same alignment as
 * `out` when the two differ, which a chunk from a socket at an odd body offset often does.
 */
function xorInto(out: Buffer, a: Buffer): void {
  const n = a.length;
  const shift = out.byteOffset & 3;
  let src = a;
  if ((a.byteOffset & 3) !== shift && n >= 64) {
    const aligned = Buffer.allocUnsafeSlow(n + shift);
    a.copy(aligned, shift);
    src = aligned.subarray(shift, shift + n);
  }
  let i = 0;
  if ((src.byteOffset & 3) === shift && n >= 64) {
    const head = (4 - shift) & 3;
    for (; i < head; i++) out[i]! ^= src[i]!;
    const words = (n - head) >>> 2;
    const o32 = new Int32Array(out.buffer, out.byteOffset + head, words);
    const a32 = new Int32Array(src.buffer, src.byteOffset + head, words);
    for (let w = 0; w < words; w++) o32[w]! ^= a32[w]!;
    i = head + (words << 2);
  }
  for (; i < n; i++) out[i]! ^= src[i]!;
}

/**
 * The authentication code of an entry: HMAC-SHA1 over its ciphertext, first 10 bytes. Built
 * from two SHA-1 hashes (RFC 2104) rather than an Hmac, because a Hash can be copied: a
 * download cut mid-entry keeps a copy, and its resume continues it instead of re-reading the
 * entry's prefix.
 */
export class EntryMac {
  private constructor(
    private readonly inner: Hash,
    private readonly outerKey: Buffer,
  ) {}

  static of(macKey: Buffer): EntryMac {
    const block = Buffer.alloc(64);
    macKey.copy(block); // 32 bytes: under SHA-1's block, so used as it is
    const pad = (byte: number) => Buffer.from(block.map((b) => b ^ byte));
    return new EntryMac(createHash('sha1').update(pad(0x36)), pad(0x5c));
  }

  update(ciphertext: Buffer): this {
    this.inner.update(ciphertext);
    return this;
  }

  /** An independent MAC in the same state. */
  copy(): EntryMac {
    return new EntryMac(this.inner.copy(), this.outerKey);
  }

  digest(): Buffer {
    return createHash('sha1').update(this.outerKey).update(this.inner.digest()).digest().subarray(0, AES_MAC);
  }
}

/**
 * The encryption of one ZIP: the password, the job's salt seed and the ZIP's sequence. Keys
 * are derived once per entry and kept (a download of many entries derives each once).
 */
export class ZipEncryption {
  private readonly keys = new Map<number, AesKeys>();

  constructor(
    private readonly password: string,
    private readonly seed: Buffer,
    private readonly zipSequence: number,
  ) {}

  salt(entry: number): Buffer {
    return entrySalt(this.seed, this.zipSequence, entry);
  }

  keysOf(entry: number): AesKeys {
    let keys = this.keys.get(entry);
    if (!keys) {
      keys = deriveAesKeys(this.password, this.salt(entry));
      this.keys.set(entry, keys);
    }
    return keys;
  }

  /** The salt and verifier that open the entry's data. */
  preamble(entry: number): Buffer {
    return Buffer.concat([this.salt(entry), this.keysOf(entry).verifier]);
  }

  cipher(entry: number): AesCtr {
    return new AesCtr(this.keysOf(entry).aesKey);
  }

  mac(entry: number): EntryMac {
    return EntryMac.of(this.keysOf(entry).macKey);
  }

  /** Never printed: the password stays out of logs and errors. */
  toJSON(): string {
    return '[ZipEncryption]';
  }
}
