// Writes a WinZip AES-256 ZIP as its bodies arrive, for what yazl cannot encrypt: stored jobs
// and stream downloads of unknown size. It takes entries as the packers give them to yazl
// (`addReadStreamLazy`, in order, then `end`) and writes the records format.ts renders, so its
// bytes are those of the layout (planZip with the same encryption): a resumed upload, built
// from the layout, continues them exactly (aes-writer.test.ts).
import { Readable } from 'node:stream';
import type { ZipEncryption } from './aes';
import type { ZipOutput } from './yazl-options';
import { centralRecord, dataDescriptor, dosTime, endRecords, localHeader, storedLength, usesZip64, type DosTime, type EntryRecord } from './format';

type StreamCallback = (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void;

interface Pending {
  name: Buffer;
  time: DosTime;
  open: StreamCallback;
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

  constructor(private readonly encryption: ZipEncryption) {
    this.outputStream = new Readable({
      highWaterMark: 1 << 20,
      read: () => {
        const wake = this.wake;
        this.wake = null;
        wake?.();
      },
    });
  }

  /** yazl's signature; `size` is not needed (the descriptor carries it) and `compress` must be false. */
  addReadStreamLazy(name: string, options: { mtime?: Date; compress?: boolean }, open: StreamCallback): void {
    if (options.compress) throw new TypeError('an encrypted entry is stored: deflate is not combined with AES here');
    this.pending.push({ name: Buffer.from(name, 'utf8'), time: dosTime(options.mtime ?? new Date()), open });
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
    const header = { name: entry.name, size: 0, offset, zip64: false, aes: true };
    await this.push(Buffer.concat([localHeader(header, entry.time), this.encryption.preamble(index)]));
    const cipher = this.encryption.cipher(index);
    const mac = this.encryption.mac(index);
    let size = 0;
    // Consumed from within the callback, as yazl does: the packer adds its own 'data' listener
    // right after it, which starts the stream flowing, so no chunk may come before ours.
    await new Promise<void>((resolve, reject) =>
      entry.open((err, stream) => {
        if (err) return reject(err as Error);
        stream.on('data', (chunk: Buffer) => {
          const ciphertext = cipher.xor(chunk, size);
          size += chunk.length;
          mac.update(ciphertext);
          this.offset += ciphertext.length;
          if (!this.outputStream.push(ciphertext)) {
            stream.pause();
            this.wake = () => stream.resume();
          }
        });
        stream.once('end', () => resolve());
        stream.once('error', reject);
      }),
    );
    const digest = mac.digest();
    // The layout's rule: ZIP64 when the entry's stored data or its header's offset passes 4 GiB.
    const record = { ...header, size, zip64: usesZip64(storedLength(size, true), offset) };
    await this.push(Buffer.concat([digest, dataDescriptor(record, 0)]));
    this.written.push({ record, time: entry.time });
  }

  private async writeCentral(): Promise<void> {
    const centralOffset = this.offset;
    const records = this.written.map(({ record, time }) => centralRecord(record, 0, time));
    const central = Buffer.concat(records);
    await this.push(central);
    await this.push(endRecords(this.written.length, central.length, centralOffset));
  }
}
