/**
 * One spill file of a body (body-resume.ts): the bytes that arrived while the body's read-ahead
 * in memory was full, appended in order and read back in order. Bytes not yet written are read
 * from memory (a failed write keeps them there: the body then waits instead of spilling); the
 * file is removed once read to its end (or the body destroyed), and its bytes given back to the area.
 */
import { open, rm, type FileHandle } from 'node:fs/promises';
import type { SpillArea } from './spill-area';

/** Largest read back at once. */
const READ_BYTES = 1024 * 1024;
/** Bytes waiting to be written beyond which the body stops reading its origin until they are. */
const BACKLOG_BYTES = 1024 * 1024;

interface Pending {
  at: number;
  chunk: Buffer;
}

export class SpillFile {
  private readonly path: string;
  private handle: Promise<FileHandle> | null = null;
  /** Bytes appended, written to the file, and read back. */
  private appended = 0;
  private written = 0;
  private readPos = 0;
  private readonly pending: Pending[] = [];
  private pendingBytes = 0;
  private writing = false;
  /** A write failed: nothing more is appended (`usable`), what is pending stays in memory. */
  private broken = false;
  private removed = false;

  constructor(
    private readonly area: SpillArea,
    /** Called when the backlog has been written (the body may read its origin on). */
    private readonly onWritten: () => void,
  ) {
    this.path = area.nextPath();
  }

  /** Bytes appended and not yet read back. */
  get unread(): number {
    return this.appended - this.readPos;
  }

  /** Whether more may be appended now (room in the area, no failed write, no backlog). */
  get usable(): boolean {
    return !this.broken && !this.removed && this.pendingBytes < BACKLOG_BYTES && this.area.room() > 0;
  }

  append(chunk: Buffer): void {
    this.pending.push({ at: this.appended, chunk });
    this.pendingBytes += chunk.length;
    this.appended += chunk.length;
    this.area.take(chunk.length);
    void this.writeNext();
  }

  private async writeNext(): Promise<void> {
    if (this.writing || this.broken || this.removed) return;
    this.writing = true;
    try {
      while (this.pending.length > 0 && !this.removed) {
        const next = this.pending[0]!;
        this.handle ??= open(this.path, 'w+');
        const handle = await this.handle;
        await handle.write(next.chunk, 0, next.chunk.length, next.at);
        this.written = next.at + next.chunk.length;
        this.pending.shift();
        this.pendingBytes -= next.chunk.length;
      }
    } catch {
      // A full or failing disk: the bytes not written stay in memory, read from there.
      this.broken = true;
    } finally {
      this.writing = false;
    }
    this.onWritten();
  }

  /** The next bytes in order (up to `max`), from the file or, not yet written, from memory; null: none unread. */
  async read(max: number): Promise<Buffer | null> {
    if (this.unread === 0 || this.removed) return null;
    const at = this.readPos;
    if (at < this.written) {
      const length = Math.min(max, READ_BYTES, this.written - at);
      const buffer = Buffer.allocUnsafe(length);
      const { bytesRead } = await (await this.handle!).read(buffer, 0, length, at);
      if (this.removed) return null;
      this.readPos = at + bytesRead;
      return buffer.subarray(0, bytesRead);
    }
    const held = this.pending.find((p) => p.at <= at && at < p.at + p.chunk.length)!;
    const from = at - held.at;
    const out = held.chunk.subarray(from, from + Math.min(max, held.chunk.length - from));
    this.readPos = at + out.length;
    return out;
  }

  /** Removes the file and gives its bytes back (read to its end, or the body is gone). */
  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    this.pending.length = 0;
    this.pendingBytes = 0;
    this.area.give(this.appended);
    const handle = this.handle;
    if (handle) await handle.then((h) => h.close()).catch(() => undefined);
    await rm(this.path, { force: true });
  }
}
