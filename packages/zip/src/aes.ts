// WinZip AES-256 encryption, AE-2 (https://www.winzip.com/en/support/aes-encryption/): each
// entry's data is a 16-byte salt, a 2-byte password verifier, the body encrypted with AES-256
// in counter mode, and a 10-byte HMAC-SHA1 of the ciphertext. Keys come from
// PBKDF2-HMAC-SHA1(password, salt, 1000 iterations): 32 bytes of AES key, 32 of HMAC key, 2 of
// verifier. The counter is a 128-bit little-endian integer starting at 1, so block n of a body
// (bytes 16n..16n+15) is encrypted with counter n+1 and any byte range can be encrypted alone:
// that is what keeps stream mode's exact sizes and Range. Node's aes-256-ctr counts big-endian,
// so the keystream is made here from AES-256-ECB blocks of the counters.
import { createCipheriv, createHash, createHmac, type Cipheriv, type Hash } from 'node:crypto';
import { processAesKeys, type AesKeyStore, type AesKeys } from './aes-keys';
import { counterBlocks, MAX_COUNTER_BYTES, xorInto } from './ctr-kernels';

export const AES_METHOD = 99;
export const AES_SALT = 16;
export const AES_VERIFIER = 2;
export const AES_MAC = 10;
/** Bytes an entry's data grows by: salt, verifier and MAC. */
export const AES_OVERHEAD = AES_SALT + AES_VERIFIER + AES_MAC;
/** The 0x9901 extra field, in both the local header and the central record. */
export const AES_EXTRA = 11;
const BLOCK = 16;

/**
 * An entry's salt: HMAC-SHA256 of the ZIP's sequence and the entry's index under the job's
 * seed. Unique per entry (a salt must never repeat under one password), and stable, so every
 * download and every resumed upload of one ZIP writes the same bytes.
 */
export function entrySalt(seed: Buffer, zipSequence: number, entry: number, generation = 0): Buffer {
  // Generation 0 keeps the bytes of ZIPs made before generations existed.
  const label = `winzip-aes-salt\0${zipSequence}\0${entry}${generation > 0 ? `\0${generation}` : ''}`;
  return createHmac('sha256', seed).update(label).digest().subarray(0, AES_SALT);
}

/**
 * The AE counter-mode cipher of one entry: encrypting and decrypting are the same XOR. The
 * keystream is made a window at a time, one ECB call each: the first as long as the first
 * chunk (a small entry makes only what it needs), then doubling up to 64 KiB, or as long as a
 * larger chunk. Each chunk is XORed into its window, which is returned: no buffer per chunk,
 * and a 64 KiB chunk at a block boundary gets a whole window, which the response frees once
 * written, as it does the origin's chunks (docs/archive-options.md "Speed").
 */
export class AesCtr {
  /** ECB over whole blocks keeps no state between calls: one key schedule per entry. */
  private readonly ecb: Cipheriv;
  private window: Buffer = EMPTY;
  /** Body offset of the window's first byte (a block boundary). */
  private windowAt = 0;
  /** Window bytes before this are handed out (ciphertext now), the rest still keystream. */
  private used = 0;

  constructor(key: Buffer) {
    this.ecb = createCipheriv('aes-256-ecb', key, null).setAutoPadding(false);
  }

  /** `chunk` XOR the keystream, the chunk being body bytes [offset, offset + length). */
  xor(chunk: Buffer, offset: number): Buffer {
    if (chunk.length > MAX_COUNTER_BYTES - BLOCK) return this.xorPieces(chunk, offset);
    let at = offset - this.windowAt;
    if (at < this.used || at + chunk.length > this.window.length) {
      const firstBlock = Math.floor(offset / BLOCK);
      const skip = offset - firstBlock * BLOCK;
      const size = Math.max(skip + chunk.length, Math.min(WINDOW, this.window.length * 2));
      this.window = this.ecb.update(keystreamCounters(firstBlock + 1, Math.ceil(size / BLOCK)));
      this.windowAt = firstBlock * BLOCK;
      at = skip;
    }
    const out = this.window.subarray(at, at + chunk.length);
    xorInto(out, chunk);
    this.used = at + chunk.length;
    return out;
  }

  /** A chunk larger than a window (not from a socket: whole bodies in tests and tools), a window at a time. */
  private xorPieces(chunk: Buffer, offset: number): Buffer {
    const out = Buffer.allocUnsafe(chunk.length);
    for (let done = 0; done < chunk.length; done += WINDOW) this.xor(chunk.subarray(done, done + WINDOW), offset + done).copy(out, done);
    return out;
  }
}

const EMPTY = Buffer.alloc(0);
/** The keystream made per cipher call for chunks up to it (see AesCtr); measured against 256 KiB and 1 MiB. */
const WINDOW = 64 * 1024;

/** `count` counter blocks from `first`; from 2^32 on (64 GiB into a body), written here as 64-bit integers. */
function keystreamCounters(first: number, count: number): Buffer {
  if (first + count <= 0x100000000) return counterBlocks(first, count);
  const counters = Buffer.alloc(count * BLOCK);
  for (let i = 0, n = first; i < count; i++, n++) {
    counters.writeUInt32LE(n % 0x100000000, i * BLOCK);
    counters.writeUInt32LE(Math.floor(n / 0x100000000), i * BLOCK + 4);
  }
  return counters;
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
 * come from the process's key store: `ready` derives them off the event loop before they are
 * used; the other methods derive on the spot only keys not readied (tests, references).
 */
export class ZipEncryption {
  private readonly tag: string;

  constructor(
    private readonly password: string,
    private readonly seed: Buffer,
    private readonly zipSequence: number,
    private readonly keys: AesKeyStore = processAesKeys,
    /** Each entry's salt generation (job_files.aes_generation, docs/archive-options.md#changed-origins); none: all 0. */
    private readonly generations: readonly number[] = [],
    /** Whose turn its key derivations wait for (the job's user: users take turns); none: the password's own. */
    private readonly owner?: string,
  ) {
    this.tag = keys.passwordTag(password);
  }

  salt(entry: number): Buffer {
    return entrySalt(this.seed, this.zipSequence, entry, this.generationOf(entry));
  }

  generationOf(entry: number): number {
    return this.generations[entry] ?? 0;
  }

  /** Derives the entries' keys on the key pool (those not kept yet). */
  async ready(entries: Iterable<number>): Promise<void> {
    await Promise.all(Array.from(entries, (entry) => this.keys.ready(this.tag, this.password, this.salt(entry), this.owner)));
  }

  keysOf(entry: number): AesKeys {
    return this.keys.keysNow(this.tag, this.password, this.salt(entry));
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
