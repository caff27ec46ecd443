// Writes the archive as its bodies arrive: every ZIP the services write (stored jobs, stream
// downloads of unknown size, AES or not). It takes entries as the packers give them
// (`addReadStreamLazy`, in order, then `end`) and writes the records format.ts renders, so its
// bytes are those of the layout (planZip with the same sizes and encryption): a resumed upload,
// built from the layout, continues them exactly (zip-writer.test.ts, format.test.ts). An entry
// added with `compress: true` (stored deflate jobs) is deflated (and then encrypted, with
// 0x9901's method 8); its sizes go in the descriptor, as every entry's do, and such a bin has
// no layout to resume from (it restarts from its first byte).
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { createDeflateRaw } from 'node:zlib';
import type { ZipEncryption } from './aes';
import { crc32 } from './crc32';
import { centralRecord, dataDescriptor, dosTime, endRecords, localHeader, storedLength, usesZip64, type DosTime, type EntryRecord } from './format';
import { deflateBound } from './layout';
import type { EntryOptions, ZipOutput } from './zip-output';

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
  /** The body's length, when known before it streams (it must have exactly this many bytes). */
  size: number | null;
  /** Deflate level, or null to store. */
  level: number | null;
}

export class ZipWriter implements ZipOutput {
  readonly outputStream: Readable;
  /** Each entry's running CRC-32 as its body streams (the packers checkpoint it); AE-2 has none: 0. */
  readonly entries: { crc32: number }[] = [];
  private readonly pending: Pending[] = [];
  private readonly written: { record: EntryRecord; time: DosTime; crc: number }[] = [];
  private offset = 0;
  private ended = false;
  private pumping = false;
  private wake: (() => void) | null = null;
  private readonly listeners: ((err: Error) => void)[] = [];

  constructor(
    /** Every entry WinZip AES-256 encrypted with this; null: a plain ZIP. */
    private readonly encryption: ZipEncryption | null = null,
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

  addReadStreamLazy(name: string, options: EntryOptions, open: StreamCallback): void {
    const level = options.compress ? (options.compressionLevel ?? 6) : null;
    this.pending.push({ name: Buffer.from(name, 'utf8'), time: dosTime(options.mtime ?? new Date()), open, size: options.size ?? null, level });
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
      // A body's error reaches the packer through the body too: an output nobody reads (its
      // upload gone) is closed without an error event no one would handle.
      this.outputStream.destroy(this.outputStream.listenerCount('error') > 0 ? (err as Error) : undefined);
      for (const l of this.listeners) l(err as Error);
    } finally {
      this.pumping = false;
    }
  }

  private async writeEntry(entry: Pending): Promise<void> {
    const index = this.written.length;
    const offset = this.offset;
    const encryption = this.encryption;
    const aes = encryption !== null;
    const deflate = entry.level !== null;
    // The layout's rule, decided before the header: ZIP64 when the entry's data (at most
    // deflateBound of its size, deflated) or its offset passes 4 GiB (format.ts#usesZip64).
    const headerZip64 = usesZip64(entry.size === null ? 0 : storedLength(deflate ? deflateBound(entry.size) : entry.size, aes), offset);
    // A deflated entry's header says so (method 8, or 8 in its 0x9901 field); its sizes come later.
    const header: EntryRecord = { name: entry.name, size: 0, offset, zip64: headerZip64, ...(aes ? { aes } : {}), ...(deflate ? { deflated: 0 } : {}) };
    if (encryption) {
      // Derived on the thread pool: the event loop serves other requests meanwhile.
      await encryption.ready([index]);
      await this.push(Buffer.concat([localHeader(header, entry.time), encryption.preamble(index)]));
    } else await this.push(localHeader(header, entry.time));
    const cipher = encryption?.cipher(index);
    const mac = encryption?.mac(index);
    const running = this.entries[index]!;
    let size = 0;
    let crc = 0;
    let written = 0;
    // Writes what it is given (the body, or its deflated bytes; encrypted in an AES ZIP) into
    // the output, pausing `source` while the output is full.
    const write = (source: NodeJS.ReadableStream) => (chunk: Buffer) => {
      const bytes = cipher ? cipher.xor(chunk, written) : chunk;
      written += chunk.length;
      mac?.update(bytes);
      this.offset += bytes.length;
      if (!this.outputStream.push(bytes)) {
        source.pause();
        this.wake = () => source.resume();
      }
    };
    const count = (chunk: Buffer) => {
      size += chunk.length;
      if (!aes) running.crc32 = crc = crc32(chunk, crc);
    };
    // Consumed from within the callback: the packer adds its own 'data' listener right after
    // it, which starts the stream flowing, so no chunk may come before ours (and the running
    // CRC it reads is this chunk's).
    await new Promise<void>((resolve, reject) =>
      entry.open((err, stream) => {
        if (err) return reject(err as Error);
        stream.once('error', reject);
        if (!deflate && this.checkBlock) {
          this.checkedBody(index, stream, write(stream), count).then(resolve, reject);
          return;
        }
        if (!deflate) {
          const out = write(stream);
          stream.on('data', (chunk: Buffer) => {
            count(chunk);
            out(chunk);
          });
          stream.once('end', () => resolve());
          return;
        }
        const deflater = createDeflateRaw({ level: entry.level! });
        deflater.on('data', write(deflater));
        deflater.once('end', () => resolve());
        deflater.once('error', reject);
        stream.once('error', () => deflater.destroy());
        stream.on('data', (chunk: Buffer) => {
          count(chunk);
          if (!deflater.write(chunk)) {
            stream.pause();
            deflater.once('drain', () => stream.resume());
          }
        });
        stream.once('end', () => deflater.end());
      }),
    );
    // Its header promised a length (and with it, its ZIP64 form): a body of another is an error.
    if (entry.size !== null && size !== entry.size) throw new Error(`entry ${index}: the body has ${size} bytes, not the ${entry.size} declared`);
    // A body of unknown length past 4 GiB: ZIP64 records after a header without the extra.
    const zip64 = headerZip64 || usesZip64(Math.max(size, storedLength(written, aes)), offset);
    const record: EntryRecord = { ...header, size, zip64, ...(zip64 === headerZip64 ? {} : { headerZip64 }), ...(deflate ? { deflated: written } : {}) };
    const trailer = dataDescriptor(record, crc);
    await this.push(mac ? Buffer.concat([mac.digest(), trailer]) : trailer);
    this.written.push({ record, time: entry.time, crc });
  }

  /**
   * An encrypted stored body whose blocks are each held until `checkBlock` allows them, then encrypted:
   * the stream is paused while a block is checked, so at most a block and a chunk are held.
   */
  private checkedBody(index: number, stream: NodeJS.ReadableStream, write: (chunk: Buffer) => void, count: (chunk: Buffer) => void): Promise<void> {
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
        count(chunk);
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
    const records = this.written.map(({ record, time, crc }) => centralRecord(record, crc, time));
    const central = Buffer.concat(records);
    await this.push(central);
    await this.push(endRecords(this.written.length, central.length, centralOffset));
  }
}
