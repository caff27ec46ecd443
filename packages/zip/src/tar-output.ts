// The stored-mode writer of a tar: what the packer and the unknown-size stream path write an
// archive into (ZipOutput's interface, as yazl and the AES writer offer it). Entries go out one
// after the other, each its headers (tar-format.ts), its body piped as it arrives and its
// padding; a body must have the size its header gave.
import { PassThrough } from 'node:stream';
import { finished } from 'node:stream/promises';
import { TAR_END_LENGTH, tarHeader, tarPadding } from './tar-format';
import type { ZipOutput } from './zip-output';

export class TarOutput implements ZipOutput {
  readonly outputStream = new PassThrough({ highWaterMark: 64 * 1024 });
  /** One per entry added, as yazl keeps them (a tar has no CRC: always 0). */
  readonly entries: { crc32: number }[] = [];
  private queue: Promise<void> = Promise.resolve();
  private readonly mtime: number;

  constructor(mtime: Date) {
    this.mtime = Math.floor(mtime.getTime() / 1000);
  }

  addReadStreamLazy(name: string, options: { size?: number }, open: (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void): void {
    const size = options.size;
    if (size === undefined) throw new TypeError(`tar entry ${name}: its size must be known before its header is written`);
    this.entries.push({ crc32: 0 });
    this.queue = this.queue.then(() => this.writeEntry(name, size, open));
  }

  /** An empty folder (its name ends in "/"). */
  addFolder(name: string): void {
    this.entries.push({ crc32: 0 });
    this.queue = this.queue.then(() => this.write(tarHeader({ name, size: 0, folder: true }, this.mtime)));
  }

  end(): void {
    this.queue = this.queue.then(async () => {
      await this.write(Buffer.alloc(TAR_END_LENGTH));
      this.outputStream.end();
    });
    this.queue.catch(() => undefined);
  }

  private async writeEntry(name: string, size: number, open: (cb: (err: unknown, stream: NodeJS.ReadableStream) => void) => void): Promise<void> {
    if (this.outputStream.destroyed) return;
    await this.write(tarHeader({ name, size, folder: false }, this.mtime));
    const body = await new Promise<NodeJS.ReadableStream>((resolve, reject) => open((err, stream) => (err ? reject(err as Error) : resolve(stream))));
    let bytes = 0;
    body.on('data', (chunk: Buffer) => void (bytes += chunk.length));
    body.pipe(this.outputStream, { end: false });
    try {
      await finished(body as NodeJS.ReadableStream & NodeJS.EventEmitter);
    } catch {
      // The writer of the archive saw the body fail and stops it; nothing more goes out.
      return;
    }
    if (bytes !== size) {
      this.outputStream.destroy(new Error(`tar entry ${name}: body has ${bytes} bytes, its header says ${size}`));
      return;
    }
    await this.write(Buffer.alloc(tarPadding(size)));
  }

  private async write(bytes: Buffer): Promise<void> {
    if (bytes.length === 0 || this.outputStream.destroyed) return;
    if (!this.outputStream.write(bytes)) await new Promise<void>((resolve) => {
      const done = () => {
        this.outputStream.off('drain', done);
        this.outputStream.off('close', done);
        resolve();
      };
      this.outputStream.on('drain', done);
      this.outputStream.on('close', done);
    });
  }
}
