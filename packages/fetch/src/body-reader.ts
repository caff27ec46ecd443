/**
 * The reading side of a BodyStream: it tells whether its reader waits on the network
 * ('starved', `StarveMeter`), and keeps the lengths of the chunks it holds (`ChunkLengths`) so
 * that a read of "whatever is there" takes one chunk instead of a copy of them all.
 */
import { Readable } from 'node:stream';

/**
 * The reader found the buffer empty for this long in all, with the bytes arriving slower than
 * NETWORK_BOUND_RATE meanwhile: the body is network-bound (a distant or capped origin), and
 * more connections would bring it faster. On loopback bytes come faster than that rate.
 */
const STARVED_MS = 30;
/** Bytes per ms (100 MB/s): more than one connection to a distant origin brings, less than loopback. */
const NETWORK_BOUND_RATE = 100_000;

class StarveMeter {
  /** When a read found nothing (the reader waits), else 0. */
  private waitingSince = 0;
  private lastDelivery = 0;
  /** Time the reader waited for bytes, and the bytes that ended its waits. */
  private waitedMs = 0;
  private waitedBytes = 0;
  private starvedSeen = false;

  /** A read found nothing: the reader waits from now (unless it already did). */
  waiting(): void {
    if (this.waitingSince === 0) this.waitingSince = performance.now();
  }

  /**
   * `bytes` reached the reader; `flowingEmpty`: it takes every chunk as it comes (flowing, with
   * nothing buffered), so it waited since the last one. True the first time it is found starved.
   */
  delivered(bytes: number, flowingEmpty: boolean): boolean {
    const now = performance.now();
    const waitedFrom = this.waitingSince !== 0 ? this.waitingSince : flowingEmpty ? this.lastDelivery : 0;
    this.waitingSince = 0;
    let starved = false;
    if (waitedFrom !== 0 && !this.starvedSeen) {
      this.waitedMs += now - waitedFrom;
      this.waitedBytes += bytes;
      if (this.waitedMs >= STARVED_MS && this.waitedBytes < this.waitedMs * NETWORK_BOUND_RATE) {
        this.starvedSeen = true;
        starved = true;
      }
    }
    this.lastDelivery = now;
    return starved;
  }

  /** Read slower than it arrives: a later wait is measured afresh. */
  reset(): void {
    this.starvedSeen = false;
    this.waitedMs = 0;
    this.waitedBytes = 0;
  }
}

/** The lengths of the chunks pushed, from the first one not wholly read. */
class ChunkLengths {
  private readonly lengths: number[] = [];
  private first = 0;
  private bytes = 0;

  /** A chunk of `length` is pushed onto a buffer holding `buffered` bytes. */
  add(length: number, buffered: number): void {
    this.forget(buffered);
    this.lengths.push(length);
    this.bytes += length;
  }

  /** What is left of the first chunk in a buffer holding `buffered` bytes. */
  firstLeft(buffered: number): number {
    const gone = this.forget(buffered);
    return this.lengths[this.first]! - gone;
  }

  /**
   * Drops the lengths of the chunks read off the buffer whole (also on every push, so that a
   * body piped in flowing mode keeps none); the bytes already read of the first one left.
   */
  private forget(buffered: number): number {
    let gone = this.bytes - buffered;
    while (gone > 0 && gone >= this.lengths[this.first]!) {
      const length = this.lengths[this.first++]!;
      gone -= length;
      this.bytes -= length;
    }
    if (this.first > 1024 && this.first * 2 > this.lengths.length) {
      this.lengths.splice(0, this.first);
      this.first = 0;
    }
    return gone;
  }
}

/** A Readable fed by `deliver`, that measures its reader (see the top of this file). */
export abstract class MeteredReadable extends Readable {
  /** Body bytes received from the origin so far (pushed into this stream). */
  received = 0;
  /** True once every byte came from the origin (the connection is free). */
  fetched = false;
  private readonly pace = new StarveMeter();
  private readonly pushed = new ChunkLengths();

  /** A read found the buffer empty: start whatever would push more. */
  protected abstract pullIfIdle(): void;

  /** Read slower than it arrives: a later wait is measured afresh. */
  protected resetPace(): void {
    this.pace.reset();
  }

  /** Hands a chunk to the consumer, ending a wait for it; `arrived`: it comes from the origin now (not read back from a spill file). */
  protected deliver(chunk: Buffer, arrived = true): void {
    if (arrived) this.received += chunk.length;
    // The reader waits: a read found nothing, or it takes every chunk as it comes (flowing).
    if (this.pace.delivered(chunk.length, this.readableFlowing === true && this.readableLength === 0)) this.emit('starved');
    if (chunk.length > 0) this.pushed.add(chunk.length, this.readableLength);
    this.push(chunk);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Readable.read's own signature
  override read(size?: number): any {
    if (this.readableLength === 0) this.pullIfIdle();
    const out: unknown = super.read(size ?? this.firstChunkLeft());
    if (out === null && !this.fetched && !this.destroyed) this.pace.waiting();
    return out;
  }

  /**
   * What is left of the first chunk in the buffer, for a read of "whatever is there" in paused
   * mode (an async iterator's): Node would join every buffered chunk into a new buffer, a copy
   * of each byte read ahead (a third of a stream download's CPU). Undefined when nothing is
   * buffered, or in flowing mode, where Node hands on one chunk at a time itself.
   */
  private firstChunkLeft(): number | undefined {
    if (this.readableFlowing === true || this.readableLength === 0) return undefined;
    return this.pushed.firstLeft(this.readableLength);
  }
}
