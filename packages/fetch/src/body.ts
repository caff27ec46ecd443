/**
 * A response body that survives being cut midway (issue 14 item 4): after the headers, a
 * connection reset, an idle stall or a short close is continued with a ranged GET from the
 * last byte received (the fetcher's `resume`, which sends the validator), up to the retry
 * count; only then does the body error. The consumer sees one continuous stream, so whatever
 * it computes over the bytes (yazl's CRC-32, the layout reader's) carries on unchanged.
 *
 * It is also the fetch-ahead scheduler's buffer (ahead.ts): `readAhead` lets the body read
 * that many bytes into its own buffer while nobody consumes it (a small body whole, a large
 * one a slice), and a body held back that long is closed quietly before any idle timeout can
 * hit it, to be continued by range when it is read again.
 *
 * A large body from an origin that serves ranges can also be fetched as several ranges at once
 * (`addSegment`, asked by the scheduler when bytes arrive slower than they are read): the main
 * response stops at a cut, and each segment after it is a ranged GET read whole into memory
 * (its bytes are reserved by the scheduler), then handed on in order. Segments are checked like
 * continuations (validator, total size): a changed file is an error, never spliced bytes; an
 * origin answering 200 ends the ranged mode and the body goes on over one connection.
 */
import { Readable } from 'node:stream';
import { FetchError, shortBodyError } from './errors';

/** What a continuation may hand back: the body's bytes [offset, end). */
export type ResumeBody = (offset: number, end: number, signal: AbortSignal | undefined) => Promise<Readable>;
/** Opens the body's bytes [from, to) as a checked ranged GET; null: the origin sent the whole body instead. */
export type OpenSegment = (from: number, to: number, signal: AbortSignal | undefined) => Promise<Readable | null>;

export interface BodyStreamOptions {
  /** Bytes the whole body has, when known (a cut is then told from an end). */
  size: number | null;
  /** Continues the body from an offset; absent: a cut is final. */
  resume?: ResumeBody;
  /** Fetches a range of the body on a connection of its own; absent: no ranged mode. */
  segment?: OpenSegment;
  /** Continuations allowed after the first cut. */
  retries: number;
  /** Wait before continuation number n (1-based). */
  backoff(attempt: number): number;
  signal?: AbortSignal;
  /** What the length is called in a "body shorter than ..." message. */
  lengthName: string;
  /** A body held back (unread) this long is closed, to be continued when read. */
  holdLimitMs: number;
  /** Maps a source's error to a FetchError (the fetcher's classification). */
  toError(error: unknown): FetchError;
}

/** A cut that a ranged GET from the last byte can repair. */
export function isCut(error: FetchError): boolean {
  return error.kind === 'connection' || error.kind === 'timeout' || (error.kind === 'length' && error.userMessage.startsWith('body shorter'));
}

const noop = (): void => {};

/**
 * The reader found the buffer empty for this long in all, with the bytes arriving slower than
 * NETWORK_BOUND_RATE meanwhile: the body is network-bound (a distant or capped origin), and
 * more connections would bring it faster. On loopback bytes come faster than that rate.
 */
const STARVED_MS = 30;
/** Bytes per ms (100 MB/s): more than one connection to a distant origin brings, less than loopback. */
const NETWORK_BOUND_RATE = 100_000;

/** A range of the body fetched on a connection of its own, held until its turn. */
interface Segment {
  from: number;
  to: number;
  chunks: Buffer[];
  /** Bytes in `chunks`. */
  held: number;
  stream: Readable | null;
  /** Every byte arrived (its connection is free). */
  fetched: boolean;
  discarded: boolean;
}

export class BodyStream extends Readable {
  /** Body bytes received from the origin so far (pushed into this stream). */
  received = 0;
  /** Continuations made after cuts (not counting a held body's quiet reopen). */
  continuations = 0;
  private lead = 0;
  /** True once every byte came from the origin (the connection is free). */
  fetched = false;

  /** Called with the size of every chunk that arrives from the origin (the service's byte count). */
  onOriginBytes: ((bytes: number) => void) | null = null;
  /** Called whenever bytes were buffered (the scheduler's measurement). */
  onBuffered: (() => void) | null = null;

  private source: Readable | null;
  /** Where the current source's response ends (a cut before it is a cut). */
  private sourceEnd: number;
  /** Bytes before this come from the main source; the segments cover the rest, in order. */
  private mainStop: number;
  private readonly segments: Segment[] = [];
  /** The main source is done: bytes are handed on from `segments[0]`. */
  private draining = false;
  /** A segment was answered with the whole body: no more ranges for this body. */
  private rangesRefused = false;
  private requestsHeld = 0;
  private lastDelivery = 0;
  /** The lengths of the chunks pushed, from the first one not wholly read (`read`). */
  private readonly pushed: number[] = [];
  private pushedFirst = 0;
  private pushedBytes = 0;
  /** When a read found nothing (the reader waits), else 0. */
  private waitingSince = 0;
  /** Time the reader waited for bytes, and the bytes that ended its waits. */
  private waitedMs = 0;
  private waitedBytes = 0;
  private starvedSeen = false;
  private sourcePaused = false;
  private reopening = false;
  /** The source was closed while held back: reopen on the next read, no retry charged. */
  private parked = false;
  private holdTimer: NodeJS.Timeout | null = null;
  private readonly opts: BodyStreamOptions;

  constructor(source: Readable, opts: BodyStreamOptions) {
    super({ highWaterMark: 64 * 1024 });
    this.opts = opts;
    this.source = source;
    this.sourceEnd = opts.size ?? Infinity;
    this.mainStop = this.sourceEnd;
    this.attach(source);
    this.requestsHeld = 1;
  }

  /** Requests this body holds open now (its main response and its segments not yet fetched). */
  get requests(): number {
    let n = this.source !== null || this.reopening ? 1 : 0;
    for (const segment of this.segments) if (!segment.fetched) n++;
    return n;
  }

  /** Bytes buffered and not yet consumed: the stream's buffer plus the segments' bytes. */
  get heldBytes(): number {
    let n = this.readableLength;
    for (const segment of this.segments) n += segment.held;
    return n;
  }

  /** Bytes of the body no request covers yet (the main response covers all it has not cut). */
  unassignedBytes(): number {
    if (!this.opts.segment || this.opts.size === null || this.rangesRefused || this.fetched || this.destroyed) return 0;
    const last = this.segments.at(-1);
    return this.opts.size - (last ? last.to : this.received);
  }

  /** Whether the body has been split into segments. */
  get ranged(): boolean {
    return this.segments.length > 0 || this.draining;
  }

  /**
   * Fetches the next `bytes` of the body not yet covered on a connection of its own (the first
   * one also cuts the main response `bytes` further on, or at once when it holds no connection).
   * Returns the segment's length (0: none opened).
   */
  addSegment(bytes: number): number {
    const size = this.opts.size;
    if (this.unassignedBytes() <= 0 || size === null || !this.opts.segment) return 0;
    let from: number;
    if (this.segments.length > 0) from = this.segments.at(-1)!.to;
    else if (this.parked) {
      // The main response was let go: the segments take over from here.
      this.parked = false;
      from = this.received;
      this.mainStop = from;
      this.draining = true;
    } else {
      from = Math.min(size, this.received + bytes);
      this.mainStop = from;
    }
    const to = Math.min(size, from + bytes);
    if (to <= from) return 0;
    const segment: Segment = { from, to, chunks: [], held: 0, stream: null, fetched: false, discarded: false };
    this.segments.push(segment);
    this.opts.segment(from, to, this.opts.signal).then(
      (stream) => {
        if (segment.discarded || this.destroyed) {
          stream?.on('error', noop);
          stream?.destroy();
          return;
        }
        if (stream === null) return this.endRanged();
        segment.stream = stream;
        stream.on('data', (chunk: Buffer) => {
          if (segment.discarded) return;
          this.onOriginBytes?.(chunk.length);
          segment.chunks.push(chunk);
          segment.held += chunk.length;
          this.onBuffered?.();
          if (this.draining && this.segments[0] === segment) this.drain();
        });
        stream.once('end', () => {
          if (segment.discarded) return;
          segment.fetched = true;
          segment.stream = null;
          if (this.draining && this.segments[0] === segment) this.drain();
          this.noteRequests();
        });
        stream.on('error', (err: unknown) => {
          if (!segment.discarded) this.segmentFailed(this.opts.toError(err));
        });
      },
      (err: unknown) => {
        if (!segment.discarded && !this.destroyed) this.segmentFailed(this.opts.toError(err));
      },
    );
    this.noteRequests();
    return to - from;
  }

  /**
   * Lets the main response go now if the body can be continued later (a body waiting its turn
   * gives its connection to the one being read). False when it cannot.
   */
  letGo(): boolean {
    if (!this.source || this.reopening || this.ranged || !this.opts.resume || this.opts.size === null || this.fetched || this.destroyed) return false;
    this.dropSource();
    this.sourcePaused = false;
    this.parked = true;
    this.noteRequests();
    return true;
  }

  private noteRequests(): void {
    const n = this.requests;
    if (n === this.requestsHeld) return;
    this.requestsHeld = n;
    this.emit('requests', n);
  }

  /** Hands a chunk to the consumer, ending a wait for it. */
  private deliver(chunk: Buffer): void {
    this.received += chunk.length;
    const now = performance.now();
    // The reader waits: a read found nothing, or it takes every chunk as it comes (flowing).
    const waitedFrom = this.waitingSince !== 0 ? this.waitingSince : this.readableFlowing === true && this.readableLength === 0 ? this.lastDelivery : 0;
    this.waitingSince = 0;
    if (waitedFrom !== 0 && !this.starvedSeen) {
      this.waitedMs += now - waitedFrom;
      this.waitedBytes += chunk.length;
      if (this.waitedMs >= STARVED_MS && this.waitedBytes < this.waitedMs * NETWORK_BOUND_RATE) {
        this.starvedSeen = true;
        this.emit('starved');
      }
    }
    this.lastDelivery = now;
    if (chunk.length > 0) {
      this.forgetRead();
      this.pushed.push(chunk.length);
      this.pushedBytes += chunk.length;
    }
    this.push(chunk);
  }

  /** The main response reached its cut: the segments go on from there. */
  private handOver(): void {
    this.dropSource();
    this.sourcePaused = false;
    if (this.segments.length === 0) {
      // The segments were given up (ranges refused): one connection again, from here.
      this.mainStop = this.opts.size ?? Infinity;
      this.reopen(false);
    } else {
      this.draining = true;
      this.drain();
    }
    this.noteRequests();
  }

  /**
   * Hands on the first segment's bytes while there is room, then the next segment's. `asked`:
   * a read is waiting for a push (Node asks before it takes the bytes it reads off the buffer,
   * and asks no more until a push), so one chunk goes whatever the room.
   */
  private drain(asked = false): void {
    while (this.draining && !this.destroyed) {
      const segment = this.segments[0]!;
      while (segment.chunks.length > 0 && (asked || this.roomAhead())) {
        asked = false;
        const chunk = segment.chunks.shift()!;
        segment.held -= chunk.length;
        this.deliver(chunk);
      }
      if (segment.chunks.length > 0 || !segment.fetched) return;
      this.segments.shift();
      this.emit('segment-done', segment.to - segment.from);
      if (this.segments.length > 0) continue;
      this.draining = false;
      this.mainStop = this.opts.size ?? Infinity;
      if (this.received >= this.mainStop) this.finish();
      else this.reopen(false); // nothing covers the rest yet: the main goes on
    }
  }

  private finish(): void {
    this.fetched = true;
    this.noteRequests();
    this.push(null);
  }

  /** Drops every segment (their reservations go back); the body goes on from `received`. */
  private dropSegments(): void {
    for (const segment of this.segments.splice(0)) {
      segment.discarded = true;
      segment.chunks = [];
      segment.held = 0;
      if (segment.stream) {
        segment.stream.on('error', noop);
        segment.stream.destroy();
      }
      this.emit('segment-done', segment.to - segment.from);
    }
  }

  /** The origin answered a range with the whole body: this body goes on over one connection. */
  private endRanged(): void {
    this.rangesRefused = true;
    this.dropSegments();
    this.mainStop = this.opts.size ?? Infinity;
    if (this.draining) {
      this.draining = false;
      this.reopen(false);
    }
    this.noteRequests();
  }

  private segmentFailed(error: FetchError): void {
    if (this.destroyed) return;
    // A server that answers ranges with another range is served over one connection instead;
    // anything else (a changed file above all) is the body's error.
    if (error.kind === 'range') return this.endRanged();
    this.destroy(this.finalError(error));
  }

  /**
   * Bytes this body may hold unread in its buffer before it stops reading its source
   * (the scheduler's reservation). 0: ordinary stream backpressure (highWaterMark). Raising it
   * on a body held back lets its source go on at once.
   */
  get readAhead(): number {
    return this.lead;
  }

  set readAhead(bytes: number) {
    this.lead = bytes;
    if (this.sourcePaused && this.source && !this.destroyed && this.roomAhead()) {
      this.clearHold();
      this.sourcePaused = false;
      this.source.resume();
    }
  }

  /** Whether the source may still be read further into the buffer. */
  private roomAhead(): boolean {
    return this.readableLength < Math.max(this.readAhead, this.readableHighWaterMark);
  }

  private attach(source: Readable): void {
    this.sourcePaused = false;
    // An error kept from before this listener (stream.errored) is reported by 'error' anyway
    // on the next tick of a destroyed stream; readable streams re-emit nothing, so check it.
    source.on('data', (chunk: Buffer) => {
      if (source !== this.source) return;
      this.onOriginBytes?.(chunk.length);
      if (this.opts.size !== null && this.received + chunk.length > this.opts.size) {
        this.received += chunk.length;
        return this.fail(new FetchError('length', `body longer than ${this.opts.lengthName} (more than ${this.opts.size} bytes)`, { retryable: false }));
      }
      if (this.received + chunk.length >= this.mainStop && this.mainStop < this.sourceEnd) {
        // The cut: the bytes after it are the segments'.
        if (this.mainStop > this.received) this.deliver(chunk.subarray(0, this.mainStop - this.received));
        return this.handOver();
      }
      this.deliver(chunk);
      // A source whose last byte is in is left to end (its connection is then free), full or not.
      if (!this.roomAhead() && this.received < this.sourceEnd) this.holdSource(source);
    });
    source.once('end', () => {
      if (source !== this.source) return;
      this.clearHold();
      if (this.opts.size !== null && this.received < this.sourceEnd) return this.cut(shortBodyError(this.received, this.opts.size, this.opts.lengthName));
      if (this.opts.size !== null && this.received < this.mainStop) {
        // A continuation asked before the segments were given up: the rest, uncharged.
        this.source = null;
        return this.reopen(false);
      }
      if (this.ranged) return this.handOver();
      this.source = null;
      this.finish();
    });
    source.on('error', (err: unknown) => {
      if (source !== this.source) return;
      this.cut(this.opts.toError(err));
    });
    if (source.errored) queueMicrotask(() => source.emit('error', source.errored));
  }

  private holdSource(source: Readable): void {
    if (this.sourcePaused) return;
    this.sourcePaused = true;
    source.pause();
    // Read slower than it arrives: a later wait is measured afresh.
    this.starvedSeen = false;
    this.waitedMs = 0;
    this.waitedBytes = 0;
    this.emit('held');
    // Held back this long: let the connection go before a timeout (ours or the origin's) does.
    if (this.opts.resume && this.opts.size !== null) {
      this.holdTimer = setTimeout(() => this.park(), this.opts.holdLimitMs);
      this.holdTimer.unref();
    }
  }

  private clearHold(): void {
    if (this.holdTimer) clearTimeout(this.holdTimer);
    this.holdTimer = null;
  }

  /** Closes the held connection quietly; the body continues from `received` when read. */
  private park(): void {
    this.holdTimer = null;
    if (!this.sourcePaused || !this.source || this.destroyed) return;
    this.dropSource();
    this.parked = true;
    this.noteRequests();
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- Readable.read's own signature
  override read(size?: number): any {
    // Node asks _read for more only once until a push: a body parked or draining since then
    // would never be asked again.
    if (this.readableLength === 0 && (this.parked || this.draining)) this._read();
    const out: unknown = super.read(size ?? this.firstChunkLeft());
    if (out === null && this.waitingSince === 0 && !this.fetched && !this.destroyed) this.waitingSince = performance.now();
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
    const gone = this.forgetRead();
    return this.pushed[this.pushedFirst]! - gone;
  }

  /**
   * Drops the lengths of the chunks read off the buffer whole (also on every push, so that a
   * body piped in flowing mode keeps none); the bytes already read of the first one left.
   */
  private forgetRead(): number {
    let gone = this.pushedBytes - this.readableLength;
    while (gone > 0 && gone >= this.pushed[this.pushedFirst]!) {
      const length = this.pushed[this.pushedFirst++]!;
      gone -= length;
      this.pushedBytes -= length;
    }
    if (this.pushedFirst > 1024 && this.pushedFirst * 2 > this.pushed.length) {
      this.pushed.splice(0, this.pushedFirst);
      this.pushedFirst = 0;
    }
    return gone;
  }

  override _read(): void {
    if (this.draining) return this.drain(true);
    if (this.parked) {
      this.parked = false;
      this.reopen(false);
      return;
    }
    if (this.sourcePaused && this.source) {
      this.clearHold();
      this.sourcePaused = false;
      this.source.resume();
    }
  }

  /** Lets the current response go (its late errors ignored). */
  private dropSource(): void {
    const source = this.source;
    this.source = null;
    this.clearHold();
    if (source) {
      source.on('error', noop);
      source.destroy();
    }
  }

  private fail(error: Error): void {
    this.dropSegments();
    this.dropSource();
    this.destroy(error);
  }

  /** The source died: continue from the last byte when that is allowed, else fail. */
  private cut(error: FetchError): void {
    this.dropSource();
    if (this.destroyed) return;
    const held = this.sourcePaused;
    const canContinue = this.opts.resume !== undefined && this.opts.size !== null && isCut(error) && !this.opts.signal?.aborted;
    if (canContinue && held) {
      // Died while we held it back (not the origin's fault): continue when read, uncharged.
      this.parked = true;
      this.noteRequests();
      return;
    }
    if (!canContinue || this.continuations >= this.opts.retries) {
      this.destroy(this.finalError(error));
      return;
    }
    this.reopen(true);
  }

  private finalError(error: FetchError): FetchError {
    if (error.kind === 'length' && this.opts.size !== null && this.received < this.opts.size && error.userMessage.startsWith('body shorter')) {
      const whole = shortBodyError(this.received, this.opts.size, this.opts.lengthName);
      whole.url = error.url;
      whole.attempts = this.continuations + 1;
      return whole;
    }
    error.attempts = this.continuations + 1;
    return error;
  }

  private reopen(charged: boolean): void {
    if (this.reopening || this.destroyed) return;
    this.reopening = true;
    if (charged) this.continuations++;
    const delay = charged ? this.opts.backoff(this.continuations) : 0;
    const go = async (): Promise<void> => {
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      if (this.destroyed) return;
      if (this.opts.signal?.aborted) throw new FetchError('aborted', 'cancelled', { retryable: false });
      const end = this.mainStop;
      return this.opts.resume!(this.received, end, this.opts.signal).then((next) => {
        this.reopening = false;
        if (this.destroyed) {
          next.on('error', noop);
          next.destroy();
          return;
        }
        this.source = next;
        this.sourceEnd = end;
        this.attach(next);
        this.noteRequests();
      });
    };
    this.noteRequests();
    go().catch((err: unknown) => {
      this.reopening = false;
      this.noteRequests();
      if (this.destroyed) return;
      const error = this.opts.toError(err);
      if (isCut(error) || error.retryable) {
        if (this.continuations < this.opts.retries) return this.reopen(true);
        this.destroy(this.finalError(error));
        return;
      }
      this.destroy(error);
    });
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.dropSource();
    this.dropSegments();
    this.noteRequests();
    callback(error);
  }
}
