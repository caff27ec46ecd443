import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { FetchError } from '@ap/fetch';
import type { AesCtr, EntryMac } from '@ap/zip';

/**
 * Plaintext blocks whose digests an entry's keystream is checked against before it encrypts
 * them (docs/archive-options.md#changed-origins): 16 bytes a MiB of body to keep, one Postgres
 * claim a MiB the first time, and at most one block held back per body being sent.
 */
export const PLAINTEXT_BLOCK = 1 << 20;

/** The blocks a slice [from, to) of a body of `size` bytes is checked by: the bytes to read. */
export function blockSpan(from: number, to: number, size: number): { start: number; end: number; size: number } {
  return { start: Math.floor(from / PLAINTEXT_BLOCK) * PLAINTEXT_BLOCK, end: Math.min(size, Math.ceil(to / PLAINTEXT_BLOCK) * PLAINTEXT_BLOCK), size };
}

/**
 * The bytes read are [start, end) of a body of `size` bytes; `check` throws when a block's
 * digest is not the one its keystream holds. A last block cut short by `end` (a MAC's prefix,
 * never sent) is not checked: it has no digest of its own.
 */
export interface BlockCheck {
  start: number;
  end: number;
  size: number;
  check(block: number, digest: Buffer): Promise<void>;
}

export function digestOf(pieces: readonly Buffer[]): Buffer {
  const hash = createHash('sha256');
  for (const piece of pieces) hash.update(piece);
  return hash.digest().subarray(0, 16);
}

/** A small body's bytes, read whole (checked ahead of its turn: its claim shares a round trip with the others opened ahead). */
export async function readWhole(stream: Readable, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    got += chunk.length;
    if (got > size) throw new FetchError('length', 'file is longer than probed', { retryable: false });
    chunks.push(chunk);
  }
  if (got !== size) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
  return Buffer.concat(chunks, size);
}

/** The digests of a body's plaintext blocks, from its chunks in order (a stored bin's writer records them). */
export class BlockHasher {
  private hash = createHash('sha256');
  private at = 0;

  constructor(private readonly size: number) {}

  /** The blocks this chunk completes. */
  update(chunk: Buffer): { block: number; digest: Buffer }[] {
    const done: { block: number; digest: Buffer }[] = [];
    let offset = 0;
    while (offset < chunk.length) {
      const blockEnd = Math.min(this.size, (Math.floor(this.at / PLAINTEXT_BLOCK) + 1) * PLAINTEXT_BLOCK);
      const n = Math.min(chunk.length - offset, blockEnd - this.at);
      if (n <= 0) break; // longer than probed: the archive fails it
      this.hash.update(n === chunk.length ? chunk : chunk.subarray(offset, offset + n));
      offset += n;
      this.at += n;
      if (this.at === blockEnd) {
        done.push({ block: Math.floor((this.at - 1) / PLAINTEXT_BLOCK), digest: this.hash.digest().subarray(0, 16) });
        this.hash = createHash('sha256');
      }
    }
    return done;
  }
}

/**
 * Body bytes [from, to) of an encrypted entry, as ciphertext. The MAC, when tracked, covers
 * [0, mac.at) and catches up once the slice passes a checkpoint ahead of its start; where
 * reading stops (every byte read was handed to the response) `onMac` gets it and how far it
 * reached: the body's end (learned) or a checkpoint to keep. With `blocks`, the stream holds
 * the whole blocks around the slice, and no block is encrypted before its digest is checked.
 */
export async function* encryptedBody(
  stream: Readable,
  from: number,
  to: number,
  cipher: AesCtr,
  mac: { at: number; mac: EntryMac } | null,
  onMac: (mac: EntryMac, hashed: number) => void,
  blocks: BlockCheck | null = null,
): AsyncGenerator<Buffer> {
  let hashed = mac?.at ?? -1;
  /** Encrypts plaintext at body offset `at` (within [from, to)) and tracks the MAC. */
  const encrypt = (chunk: Buffer, at: number): Buffer => {
    const ciphertext = cipher.xor(chunk, at);
    const end = at + chunk.length;
    if (mac && hashed >= at && hashed < end) {
      mac.mac.update(hashed === at ? ciphertext : ciphertext.subarray(hashed - at));
      hashed = end;
    }
    return ciphertext;
  };
  try {
    if (!blocks) {
      let at = from;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        if (chunk.length > to - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
        const ciphertext = encrypt(chunk, at);
        at += chunk.length;
        yield ciphertext;
      }
      if (at !== to) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
      return;
    }
    let at = blocks.start;
    let held: Buffer[] = [];
    let heldFrom = at;
    /** The held block, checked, then its part inside [from, to) encrypted. */
    async function* release(): AsyncGenerator<Buffer> {
      const block = Math.floor(heldFrom / PLAINTEXT_BLOCK);
      if (at === Math.min(blocks!.size, (block + 1) * PLAINTEXT_BLOCK)) await blocks!.check(block, digestOf(held));
      let p = heldFrom;
      for (const piece of held) {
        const lo = Math.max(p, from);
        const hi = Math.min(p + piece.length, to);
        if (hi > lo) yield encrypt(lo === p && hi === p + piece.length ? piece : piece.subarray(lo - p, hi - p), lo);
        p += piece.length;
      }
      held = [];
      heldFrom = p;
    }
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (chunk.length > blocks.end - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
      let offset = 0;
      while (offset < chunk.length) {
        const blockEnd = Math.min(blocks.end, (Math.floor(at / PLAINTEXT_BLOCK) + 1) * PLAINTEXT_BLOCK);
        const n = Math.min(chunk.length - offset, blockEnd - at);
        held.push(n === chunk.length ? chunk : chunk.subarray(offset, offset + n));
        offset += n;
        at += n;
        if (at === blockEnd) yield* release();
      }
    }
    if (at !== blocks.end) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
  } finally {
    if (mac && hashed > mac.at) onMac(mac.mac, hashed);
  }
}
