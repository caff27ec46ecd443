/**
 * A response body (body-resume.ts: continued after a cut, parked while held back) that ranged
 * mode (`addSegment`) splits: the body is the concatenation of its main response, cut short,
 * and segments fetched on connections of their own (body-segments.ts); an origin answering a
 * segment with 200 ends ranged mode.
 */
import type { Readable } from 'node:stream';
import { SegmentList } from './body-segments';
import { ResumableBody } from './body-resume';
import type { FetchError } from './errors';

export type { BodyStreamOptions, OpenSegment, ResumeBody } from './body-options';
export { isCut } from './body-options';

export class BodyStream extends ResumableBody {
  private readonly segments = new SegmentList();
  /** The main source is done: bytes are handed on from `segments[0]`. */
  private draining = false;
  /** A segment was answered with the whole body: no more ranges for this body. */
  private rangesRefused = false;

  /** Requests this body holds open now (its main response and its segments not yet fetched). */
  override get requests(): number {
    return (this.source !== null || this.reopening ? 1 : 0) + this.segments.unfetched;
  }

  /** Bytes buffered and not yet consumed: the stream's buffer plus the segments' bytes. */
  get heldBytes(): number {
    return this.readableLength + this.segments.heldBytes;
  }

  /** Bytes of the body no request covers yet (the main response covers all it has not cut). */
  unassignedBytes(): number {
    if (!this.opts.segment || this.opts.size === null || this.rangesRefused || this.fetched || this.destroyed) return 0;
    const last = this.segments.list.at(-1);
    return this.opts.size - (last ? last.to : this.received);
  }

  /** Whether ranges of the body can be fetched on connections of their own (ranged mode). */
  get splittable(): boolean {
    return this.opts.segment !== undefined && this.opts.size !== null && !this.rangesRefused;
  }

  /** Whether the body has been split into segments. */
  override get ranged(): boolean {
    return this.segments.length > 0 || this.draining;
  }

  /**
   * Fetches the next `bytes` not yet covered on a connection of its own (the first one also cuts
   * the main response `bytes` further on, or at once when it holds none). Its length, 0: none.
   */
  addSegment(bytes: number): number {
    const size = this.opts.size;
    if (this.unassignedBytes() <= 0 || size === null || !this.opts.segment) return 0;
    let from: number;
    if (this.segments.length > 0) from = this.segments.list.at(-1)!.to;
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
    this.segments.add(from, to, this.opts.segment(from, to, this.opts.signal), {
      dead: () => this.destroyed,
      data: (segment, chunk) => {
        this.onOriginBytes?.(chunk.length);
        this.onBuffered?.();
        if (this.draining && this.segments.list[0] === segment) this.drain();
      },
      end: (segment) => {
        if (this.draining && this.segments.list[0] === segment) this.drain();
        this.noteRequests();
      },
      refused: () => this.endRanged(),
      failed: (err) => this.segmentFailed(this.opts.toError(err)),
    });
    this.noteRequests();
    return to - from;
  }

  /** Lets the main response go now if the body can be resumed later (for the body being read); false if not. */
  letGo(): boolean {
    if (!this.source || this.reopening || this.ranged || !this.opts.resume || this.opts.size === null || this.fetched || this.destroyed) return false;
    this.dropSource();
    this.sourcePaused = false;
    this.parked = true;
    this.noteRequests();
    return true;
  }

  /** The main response reached its cut: the segments go on from there. */
  protected handOver(): void {
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
   * Hands on the first segment's bytes while there is room, then the next segment's. `asked`: a
   * read waits for a push (Node asks no more until one), so one chunk goes whatever the room.
   */
  private drain(asked = false): void {
    while (this.draining && !this.destroyed) {
      const segment = this.segments.list[0]!;
      while (segment.chunks.length > 0 && (asked || this.roomAhead())) {
        asked = false;
        const chunk = segment.chunks.shift()!;
        segment.held -= chunk.length;
        this.deliver(chunk);
      }
      if (segment.chunks.length > 0 || !segment.fetched) return;
      this.segments.list.shift();
      this.emit('segment-done', segment.to - segment.from);
      if (this.segments.length > 0) continue;
      this.draining = false;
      this.mainStop = this.opts.size ?? Infinity;
      if (this.received >= this.mainStop) this.finish();
      else this.reopen(false); // nothing covers the rest yet: the main goes on
    }
  }

  /** Drops every segment (their reservations go back); the body goes on from `received`. */
  private dropSegments(): void {
    this.segments.dropAll((segment) => this.emit('segment-done', segment.to - segment.from));
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

  protected override pullIfIdle(): void {
    if (this.draining) this._read();
    else super.pullIfIdle();
  }

  override _read(): void {
    if (this.draining) return this.drain(true);
    super._read();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.dropSegments();
    super._destroy(error, callback);
  }
}
