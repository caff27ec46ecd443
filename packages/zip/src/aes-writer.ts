// Writes a WinZip AES-256 ZIP as its bodies arrive, for what yazl cannot encrypt: stored jobs
// and stream downloads of unknown size. It takes entries as the packers give them to yazl
// (`addReadStreamLazy`, in order, then `end`) and writes the records format.ts renders, so its
// bytes are those of the layout (planZip with the same encryption): a resumed upload, built
// from the layout, continues them exactly (aes-writer.test.ts). An entry added with
// `compress: true` (stored deflate jobs) is deflated first and its compressed bytes encrypted
// (0x9901's method 8); its sizes go in the descriptor, as every entry's do, and such a bin has
// no layout to resume from (it restarts from its first byte).
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createDeflateRaw } from 'node:zlib';
import type { ZipEncryption } from './aes';
import type { ZipOutput } from './zip-output';
import { centralRecord, dataDescriptor, dosTime, endRecords, localHeader, storedLength, usesZip64, ZIP64_LIMIT, type DosTime, type EntryRecord } from './format';

type StreamCallback = (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void;

/** Plaintext block of a body whose digest `checkBlock` is asked about before it is encrypted. */
const CHECKED_BLOCK = 1 << 20;

/**
 * Whether entry `index`'s keystream may encrypt the plaintext block with this digest (16 bytes
 * of SHA-256): false ends the archive with an error before the block is encrypted.
 */
export type BlockChecker = (index: number, block: number, digest: Buffer) => Promise<boolean>;

interface Pending {
  name: Buffer;
  time: DosTime;
  open: StreamCallback;
  /** Deflate level, or null to store. */
  level: number | null;
}

export class AesZipWriter implements ZipOutput {
  readonly outputStream: Readable;
  /** As yazl's entries: the packers read a running CRC-32 here (AE-2 has none: it stays 0). */
  readonly entries: { crc32: number }[] = [];
  private readonly pending: Pending[] = [];
  private readonly written: { record: EntryRecord; time: DosTime }[] = [];
  private offset = 0;
  private ended = false;
  private pumping = false;
  private wake: (() => void) | null = null;
  private readonly listeners: ((err: Error) => void)[] = [];

  constructor(
    private readonly encryption: ZipEncryption,
    /** Stream downloads of unknown size check each stored body's blocks (docs/archive-options.md#changed-origins). */
    private readonly checkBlock: BlockChecker | null = null,
  ) {
    this.outputStream = new Readable({
      highWaterMark: 1 << 20,
      read: () => {
        const wake = this.wake;
        this.wake = null;
        wake?.();
      },
    });
  }

  /** yazl's signature; `size` is not needed (the descriptor carries it). */
  addReadStreamLazy(name: string, options: { mtime?: Date; compress?: boolean; compressionLevel?: number }, open: StreamCallback): void {
    const level = options.compress ? (options.compressionLevel ?? 6) : null;
    this.pending.push({ name: Buffer.from(name, 'utf8'), time: dosTime(options.mtime ?? new Date()), open, level });
    this.entries.push({ crc32: 0 });
    void this.pump();
  }

  end(): void {
    this.ended = true;
    void this.pump();
  }

  on(event: 'error', listener: (err: Error) => void): this {
    if (event === 'error') this.listeners.push(listener);
    return this;
  }

  private async push(bytes: Buffer): Promise<void> {
    this.offset += bytes.length;
    if (!this.outputStream.push(bytes)) await new Promise<void>((resolve) => (this.wake = resolve));
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.pending.length > 0) await this.writeEntry(this.pending.shift()!);
      if (this.ended && !this.outputStream.destroyed) {
        await this.writeCentral();
        this.outputStream.push(null);
      }
    } catch (err) {
      this.outputStream.destroy(err as Error);
      for (const l of this.listeners) l(err as Error);
    } finally {
      this.pumping = false;
    }
  }

  private async writeEntry(entry: Pending): Promise<void> {
    const index = this.written.length;
    const offset = this.offset;
    // A deflated entry's local header says method 8 in its 0x9901 field (its sizes come later).
    const header: EntryRecord = { name: entry.name, size: 0, offset, zip64: false, aes: true, ...(entry.level === null ? {} : { deflated: 0 }) };
    // Derived on the thread pool: the event loop serves other requests meanwhile.
    await this.encryption.ready([index]);
    await this.push(Buffer.concat([localHeader(header, entry.time), this.encryption.preamble(index)]));
    const cipher = this.encryption.cipher(index);
    const mac = this.encryption.mac(index);
    let size = 0;
    let encrypted = 0;
    // Encrypts what it is given (the body, or its deflated bytes) into the output, pausing
    // `source` while the output is full.
    const encrypt = (source: NodeJS.ReadableStream) => (chunk: Buffer) => {
      const ciphertext = cipher.xor(chunk, encrypted);
      encrypted += chunk.length;
      mac.update(ciphertext);
      this.offset += ciphertext.length;
      if (!this.outputStream.push(ciphertext)) {
        source.pause();
        this.wake = () => source.resume();
      }
    };
    // Consumed from within the callback, as yazl does: the packer adds its own 'data' listener
    // right after it, which starts the stream flowing, so no chunk may come before ours.
    await new Promise<void>((resolve, reject) =>
      entry.open((err, stream) => {
        if (err) return reject(err as Error);
        stream.once('error', reject);
        if (entry.level === null && this.checkBlock) {
          this.checkedBody(index, stream, encrypt(stream), (n) => (size += n)).then(resolve, reject);
          return;
        }
        if (entry.level === null) {
          const write = encrypt(stream);
          stream.on('data', (chunk: Buffer) => {
            size += chunk.length;
            write(chunk);
          });
          stream.once('end', () => resolve());
          return;
        }
        const deflate = createDeflateRaw({ level: entry.level });
        deflate.on('data', encrypt(deflate));
        deflate.once('end', () => resolve());
        deflate.once('error', reject);
        stream.once('error', () => deflate.destroy());
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (!deflate.write(chunk)) {
            stream.pause();
            deflate.once('drain', () => stream.resume());
          }
        });
        stream.once('end', () => deflate.end());
      }),
    );
    const digest = mac.digest();
    const deflated = entry.level === null ? {} : { deflated: encrypted };
    // The layout's rule: ZIP64 when the entry's stored data or its header's offset passes 4 GiB
    // (or, deflated, its body does).
    const zip64 = usesZip64(storedLength(encrypted, true), offset) || size > ZIP64_LIMIT;
    const record = { ...header, size, zip64, ...deflated };
    await this.push(Buffer.concat([digest, dataDescriptor(record, 0)]));
    this.written.push({ record, time: entry.time });
  }

  /**
   * A stored body whose blocks are each held until `checkBlock` allows them, then encrypted:
   * the stream is paused while a block is checked, so at most a block and a chunk are held.
   */
  private checkedBody(index: number, stream: NodeJS.ReadableStream, write: (chunk: Buffer) => void, count: (bytes: number) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let held: Buffer[] = [];
      let heldBytes = 0;
      let block = 0;
      let waiting: Buffer[] = [];
      let checking = false;
      let ended = false;
      const release = async (): Promise<void> => {
        const hash = createHash('sha256');
        for (const piece of held) hash.update(piece);
        if (!(await this.checkBlock!(index, block, hash.digest().subarray(0, 16)))) throw new Error('file changed since it was first read');
        for (const piece of held) write(piece);
        held = [];
        heldBytes = 0;
        block++;
      };
      const feed = (chunk: Buffer): void => {
        let offset = 0;
        while (offset < chunk.length) {
          const n = Math.min(chunk.length - offset, CHECKED_BLOCK - heldBytes);
          held.push(offset === 0 && n === chunk.length ? chunk : chunk.subarray(offset, offset + n));
          heldBytes += n;
          offset += n;
          if (heldBytes === CHECKED_BLOCK) {
            // The rest waits for the check.
            if (offset < chunk.length) waiting.unshift(chunk.subarray(offset));
            return check();
          }
        }
      };
      const check = (): void => {
        checking = true;
        stream.pause();
        release().then(() => {
          checking = false;
          const rest = waiting;
          waiting = [];
          for (const [i, chunk] of rest.entries()) {
            feed(chunk);
            if (checking) {
              waiting.push(...rest.slice(i + 1));
              return;
            }
          }
          if (ended) finish();
          else stream.resume();
        }, reject);
      };
      const finish = (): void => {
        if (heldBytes === 0) return resolve();
        release().then(resolve, reject);
      };
      stream.on('data', (chunk: Buffer) => {
        count(chunk.length);
        if (checking) {
          waiting.push(chunk);
          stream.pause();
        } else feed(chunk);
      });
      stream.once('end', () => {
        ended = true;
        if (!checking) finish();
      });
    });
  }

  private async writeCentral(): Promise<void> {
    const centralOffset = this.offset;
    const records = this.written.map(({ record, time }) => centralRecord(record, 0, time));
    const central = Buffer.concat(records);
    await this.push(central);
    await this.push(endRecords(this.written.length, central.length, centralOffset));
  }
}
