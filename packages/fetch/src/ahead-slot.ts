/**
 * One body's place in the fetch-ahead scheduler (ahead.ts): its reservation of the budget, the
 * connections it holds, and how far it reads ahead of its turn.
 */
import type { Readable } from 'node:stream';
import { BodyStream } from './body';
import type { RangedState } from './ranged-mode';

/** Largest chunk a socket hands over at once: a body reading ahead stops this short of its reservation. */
const CHUNK_SLACK = 64 * 1024;
/**
 * What a body opened ahead costs besides its bytes (request, response and stream objects), so
 * that 70,000 tiny bodies are not all opened at once; and a cap on bodies ahead whatever their size.
 */
export const BODY_OVERHEAD = 8 * 1024;
export const MAX_BODIES_AHEAD = 1024;
/**
 * How far a body larger than its reservation reads ahead of its turn until the archive is
 * found bandwidth-bound: enough to have its first bytes in; from a fast origin, more would only
 * pass the bytes through memory once more, out of the CPU's caches (docs/engine.md#fetching-ahead).
 */
export const LEAD_WHILE_FAST = 256 * 1024;

export interface Slot<T> {
  reserved: number;
  /** Reserved for the body's segments not yet handed on. */
  segmentsReserved: number;
  opening: Promise<T>;
  body: Readable | null;
  /** Connections held (opening, reading its body from the origin, its segments). */
  connections: number;
  /** Handed to the consumer. */
  taken: boolean;
  /** The reservation was given back. */
  released: boolean;
  /** A body larger than its reservation: reads only `LEAD_WHILE_FAST` ahead unless ranged mode is on (or probed with it). */
  partial: boolean;
  probeLead: boolean;
  /** A body that cannot be split into ranges: it may spill to disk beyond a short lead (ahead-spill.ts). */
  unsplittable: boolean;
}

/**
 * A body's reservation: its size up to a slice, or (`size` null: not known before its headers)
 * a short lead, so that requests waiting for their first byte do not hold the budget from others.
 */
export function reserveFor(size: number | null, slice: number): number {
  return Math.max(Math.min(size ?? LEAD_WHILE_FAST, slice), Math.min(BODY_OVERHEAD, slice));
}

/**
 * How far a body ahead reads during a probe: about the probe's length at 2 MB/s, and at most half
 * its reservation unless the probe uses it instead of ranges. Its whole reservation filled the
 * budget in 0.3 s at 25 MB/s, and the probe then found no room for the ranges of the body being
 * read (docs/engine.md#fetching-ahead); with 2 MiB slices (a 16 MiB budget over 8 connections)
 * a 2 MiB lead was the whole reservation.
 */
const PROBE_LEAD = 2 * 1024 * 1024;

/**
 * How far a body larger than its reservation reads ahead now: a short lead while ranged mode is
 * off, its whole reservation once on (and, for the body being read, under a probe).
 */
export function leadOf(slot: Pick<Slot<unknown>, 'reserved' | 'probeLead' | 'taken'>, state: RangedState): number {
  const full = Math.max(0, slot.reserved - CHUNK_SLACK);
  if (state === 'off' && !slot.probeLead) return Math.min(LEAD_WHILE_FAST, full);
  if (state === 'on' || slot.taken) return full;
  // A body ahead that is the probe's own (nothing to split) fills its lead; the others leave room for the probe's ranges.
  return Math.min(PROBE_LEAD, slot.probeLead ? full : Math.floor(full / 2));
}

/** Body bytes still to come from the origin plus those buffered, when known. */
export function remainingOf(opened: unknown, body: BodyStream): number | null {
  const size = (opened as { size?: number | null }).size;
  if (typeof size !== 'number') return null;
  return Math.max(0, size - body.received + body.readableLength + body.spilledBytes);
}

/** Bytes of a body its consumer has read. */
export function consumedOf(body: Readable): number {
  return body instanceof BodyStream ? body.received - body.readableLength - body.spilledBytes : 0;
}

export function wholeFits(opened: unknown, body: BodyStream, reserved: number): boolean {
  const left = remainingOf(opened, body);
  return left !== null && left <= reserved;
}

export function sumOver<B>(items: Iterable<B>, count: (item: B) => number): number {
  let sum = 0;
  for (const item of items) sum += count(item);
  return sum;
}

/** Bytes a body set aside on disk, unread. */
export function spilledOf(body: Readable): number {
  return body instanceof BodyStream ? body.spilledBytes : 0;
}

/** Bytes a body holds unread in memory (a BodyStream's segments included). */
export function bufferedOf(body: Readable): number {
  return body instanceof BodyStream ? body.heldBytes : body.readableLength;
}

/** Calls `measure` whenever `body` buffered bytes (the scheduler's `measure` option: tests, benches). */
export function watchBuffered(body: Readable, measure: () => void): void {
  if (body instanceof BodyStream) body.onBuffered = measure;
  const original = body.push.bind(body);
  body.push = (chunk: unknown, encoding?: BufferEncoding) => {
    const more = original(chunk, encoding);
    measure();
    return more;
  };
}
