/**
 * The ranges of a body fetched on connections of their own (ranged mode): each is read whole
 * into memory as it arrives (its bytes are reserved by the scheduler) and handed on in order by
 * BodyStream, so the body is the concatenation of its main response and these ranges.
 */
import type { Readable } from 'node:stream';

/** A range of the body fetched on a connection of its own, held until its turn. */
export interface Segment {
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

export interface SegmentEvents {
  /** The body is gone: a late stream is dropped. */
  dead(): boolean;
  /** A chunk arrived and is held in the segment. */
  data(segment: Segment, chunk: Buffer): void;
  /** Every byte arrived. */
  end(segment: Segment): void;
  /** The origin answered the range with the whole body. */
  refused(): void;
  failed(error: unknown): void;
}

const noop = (): void => {};

export class SegmentList {
  readonly list: Segment[] = [];

  get length(): number {
    return this.list.length;
  }

  /** Bytes held in the segments, not yet handed on. */
  get heldBytes(): number {
    let n = 0;
    for (const segment of this.list) n += segment.held;
    return n;
  }

  /** Segments whose connection is still busy. */
  get unfetched(): number {
    let n = 0;
    for (const segment of this.list) if (!segment.fetched) n++;
    return n;
  }

  /** Adds [from, to), read from `opening`'s stream as it arrives. */
  add(from: number, to: number, opening: Promise<Readable | null>, on: SegmentEvents): void {
    const segment: Segment = { from, to, chunks: [], held: 0, stream: null, fetched: false, discarded: false };
    this.list.push(segment);
    opening.then(
      (stream) => {
        if (segment.discarded || on.dead()) {
          stream?.on('error', noop);
          stream?.destroy();
          return;
        }
        if (stream === null) return on.refused();
        segment.stream = stream;
        stream.on('data', (chunk: Buffer) => {
          if (segment.discarded) return;
          segment.chunks.push(chunk);
          segment.held += chunk.length;
          on.data(segment, chunk);
        });
        stream.once('end', () => {
          if (segment.discarded) return;
          segment.fetched = true;
          segment.stream = null;
          on.end(segment);
        });
        stream.on('error', (err: unknown) => {
          if (!segment.discarded) on.failed(err);
        });
      },
      (err: unknown) => {
        if (!segment.discarded && !on.dead()) on.failed(err);
      },
    );
  }

  /** Drops every segment (their connections closed), each told to `dropped`. */
  dropAll(dropped: (segment: Segment) => void): void {
    for (const segment of this.list.splice(0)) {
      segment.discarded = true;
      segment.chunks = [];
      segment.held = 0;
      if (segment.stream) {
        segment.stream.on('error', noop);
        segment.stream.destroy();
      }
      dropped(segment);
    }
  }
}
