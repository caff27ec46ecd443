// Multipart parts cut from a byte stream into a few reused part-sized buffers.
//
// lib-storage, left to itself, gathers a stream's chunks and concatenates each part into a new
// buffer. A fresh multi-MiB buffer per part costs a page fault for every 4 KiB written into it,
// and once uploaded it is garbage that only a full GC returns (V8 starts one when about 64 MiB
// of external memory has built up): a packer held four parts live and up to 64 MiB of dead
// ones, and spent a third of its CPU on those copies and that GC. Here each chunk is copied
// once, into a part buffer from a small pool; a full part goes out as it is (lib-storage is
// patched to send an exact part without copying it), and its buffer comes back for the next
// part once S3 has answered for it. An upload holds at most `buffers` parts, whatever its size.
import { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/** Parts in flight at once. */
export const PARTS_IN_FLIGHT = 2;
/**
 * Part buffers an upload holds: one part goes up while the next fills, and both go up at once
 * when the source is ahead. A packer's memory is these two parts per bin, whatever its size
 * (a third, filling while two are in flight, measured no faster into s3rver and cost a part
 * more of memory per bin: bench/README.md).
 */
export const PART_BUFFERS = 2;

/** Memory an upload of this part size holds in part buffers, at most. */
export const partBufferBytes = (partSize: number): number => PART_BUFFERS * partSize;

/**
 * Idle part buffers kept for the next part or upload: their pages stay mapped, so refilling
 * one costs no page faults. Beyond `maxIdleBytes` a returned buffer is left to the GC.
 */
export class PartBufferPool {
  private readonly idle = new Map<number, Buffer[]>();
  private idleBytes = 0;
  /** Buffers allocated so far (for tests and diagnostics). */
  allocated = 0;

  constructor(private readonly maxIdleBytes: number) {}

  take(size: number): Buffer {
    const buffer = this.idle.get(size)?.pop();
    if (buffer) {
      this.idleBytes -= size;
      return buffer;
    }
    this.allocated++;
    return Buffer.allocUnsafeSlow(size);
  }

  give(buffer: Buffer): void {
    if (this.idleBytes + buffer.length > this.maxIdleBytes) return;
    const list = this.idle.get(buffer.length) ?? [];
    list.push(buffer);
    this.idle.set(buffer.length, list);
    this.idleBytes += buffer.length;
  }

  /** Bytes held idle (for tests and diagnostics). */
  get idleSize(): number {
    return this.idleBytes;
  }
}

/** The process's pool: enough for three uploads of two 10 MiB parts (a packer runs two by default). */
export const partBuffers = new PartBufferPool(64 * 1024 * 1024);

/** Which cutter a part's memory belongs to, so that whoever sent it can hand it back. */
const owners = new WeakMap<ArrayBufferLike, PartCutter>();

/**
 * Hands a sent part's buffer back to its cutter; anything else is ignored. Called once the
 * store has answered for the request that carried it (stored, or failed after its retries).
 */
export function releasePart(body: unknown): void {
  if (!(body instanceof Uint8Array)) return;
  owners.get(body.buffer)?.release(body.buffer);
}

export interface PartCutterOptions {
  /**
   * Called with each written chunk once it has been copied into a part, for a writer that does
   * not use the chunk again (the packer frees its memory with @ap/fetch's `freeChunk`).
   */
  freeWrittenChunk?: (chunk: Buffer) => void;
  /**
   * Who gives a sent part's buffer back: the store's client once it has answered for the
   * request (`releasePart`, for lib-storage's Upload), or the cutter's reader (`release`), as
   * `sendPartsOf` does for parts it sends and parts it passes over alike. One of them only: a
   * buffer given back twice could be given back while it already holds a later part.
   */
  releasedBy?: 'store' | 'reader';
}

/**
 * Bytes in, parts out: a Duplex whose writable side takes the object's bytes and whose
 * readable side yields each part (a Buffer of exactly `partSize`, the last one shorter) once
 * it is full. Writing waits while `buffers` parts are out and not yet released
 * (`releasePart`), which is the upload's backpressure on its source.
 */
export class PartCutter extends Duplex {
  private current: Buffer | null = null;
  private filled = 0;
  /** Buffers taken from the pool and not yet given back (filling, queued or being sent). */
  private readonly out = new Map<ArrayBufferLike, Buffer>();
  /** The rest of a write that found no free buffer. */
  private blocked: (() => void) | null = null;
  /** Written chunks to free at the next tick (`freeSoon`). */
  private readonly toFree: Buffer[] = [];

  constructor(
    readonly partSize: number,
    private readonly buffers: number,
    private readonly pool: PartBufferPool = partBuffers,
    private readonly options: PartCutterOptions = {},
  ) {
    super({ readableObjectMode: true, allowHalfOpen: true });
    if (buffers < 2) throw new RangeError('a part cutter needs at least two buffers (one filling, one out)');
  }

  /** Parts taken and not yet released: what this upload holds in memory, in parts. */
  get held(): number {
    return this.out.size;
  }

  override _read(): void {
    // Parts are pushed as they fill; how many are out is bounded by `buffers`, not by reads.
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.copy(chunk, 0, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    const last = this.current;
    this.current = null;
    if (last && this.filled > 0) this.push(last.subarray(0, this.filled));
    else if (last) this.giveBack(last);
    this.push(null);
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.blocked = null;
    if (this.current) this.giveBack(this.current);
    this.current = null;
    callback(error);
  }

  /** A part's request has ended: its buffer may take the next part. */
  release(memory: ArrayBufferLike): void {
    const buffer = this.out.get(memory);
    if (!buffer) return;
    this.giveBack(buffer);
    const resume = this.blocked;
    this.blocked = null;
    resume?.();
  }

  private copy(chunk: Buffer, from: number, callback: (error?: Error | null) => void): void {
    let at = from;
    while (at < chunk.length) {
      if (!this.current) {
        if (this.out.size >= this.buffers) {
          this.blocked = () => this.copy(chunk, at, callback);
          return;
        }
        this.current = this.pool.take(this.partSize);
        this.out.set(this.current.buffer, this.current);
        if (this.options.releasedBy !== 'reader') owners.set(this.current.buffer, this);
        this.filled = 0;
      }
      const n = chunk.copy(this.current, this.filled, at);
      this.filled += n;
      at += n;
      if (this.filled === this.partSize) {
        const full = this.current;
        this.current = null;
        this.push(full);
      }
    }
    if (this.options.freeWrittenChunk) this.freeSoon(chunk, this.options.freeWrittenChunk);
    callback();
  }

  /**
   * Frees a written chunk once the current call stack is done: a chunk is often written from
   * within its source's 'data' event (a pipe in flowing mode), whose later listeners still
   * read it (the packer counts each body's bytes that way).
   */
  private freeSoon(chunk: Buffer, free: (chunk: Buffer) => void): void {
    this.toFree.push(chunk);
    if (this.toFree.length === 1) process.nextTick(() => this.toFree.splice(0).forEach((written) => free(written)));
  }

  private giveBack(buffer: Buffer): void {
    this.out.delete(buffer.buffer);
    owners.delete(buffer.buffer);
    this.pool.give(buffer);
  }
}

/**
 * Cuts `body` into parts of exactly `partSize` bytes (the last one shorter) in part buffers of
 * the pool and hands each to `send`, in order, with its index from 0; PARTS_IN_FLIGHT sends at
 * most at once. A part's buffer goes back once its send has settled, whether it stored the part
 * or passed it over. The first failure (of the body or of a send) stops the cutting, and is
 * thrown once the sends under way have settled. Resolves with the number of parts.
 */
export async function sendPartsOf(
  body: AsyncIterable<Buffer>,
  partSize: number,
  send: (index: number, data: Buffer) => Promise<void>,
  options: Pick<PartCutterOptions, 'freeWrittenChunk'> & { pool?: PartBufferPool } = {},
): Promise<number> {
  const cutter = new PartCutter(partSize, PART_BUFFERS, options.pool ?? partBuffers, { ...options, releasedBy: 'reader' });
  const feeding = pipeline(body, cutter);
  // Awaited below; marked handled now, as a failed send stops the reading before it ends.
  feeding.catch(() => undefined);
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | null = null;
  let index = 0;
  try {
    for await (const data of cutter as AsyncIterable<Buffer>) {
      const sent: Promise<void> = send(index++, data)
        .catch((error: unknown) => void (failure ??= { error }))
        .finally(() => {
          cutter.release(data.buffer);
          inFlight.delete(sent);
        });
      inFlight.add(sent);
      if (inFlight.size >= PARTS_IN_FLIGHT) await Promise.race(inFlight);
      if (failure) break;
    }
    if (!failure) await feeding;
  } finally {
    cutter.destroy();
    await feeding.catch(() => undefined);
    await Promise.all(inFlight);
  }
  if (failure) throw (failure as { error: unknown }).error;
  return index;
}
