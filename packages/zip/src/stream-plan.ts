import { createHash } from 'node:crypto';
import type { SegmentSlice, ZipLayout } from './layout';

/** What a stream download knows about an input, as seen at probe time. */
export interface StreamInputValidators {
  etag: string | null;
  lastModified: string | null;
}

/**
 * Strong ETag of a stream ZIP: its bytes are a pure function of the layout (names, sizes,
 * offsets, mtime) and the inputs' bodies, which the probe-time validators stand for.
 */
export function streamEtag(layout: ZipLayout, inputs: readonly StreamInputValidators[]): string {
  const h = createHash('sha256');
  h.update(`zip-stream-v1\0${layout.totalSize}\0${JSON.stringify(layout.time)}\0`);
  if (layout.encryption) h.update('aes-256\0');
  layout.entries.forEach((e, i) => {
    const v = inputs[i];
    h.update(e.name);
    h.update(`\0${e.size}\0${e.offset}\0${v?.etag ?? ''}\0${v?.lastModified ?? ''}\0`);
    // A fresh salt is other bytes: a range of the old ones must not be spliced onto them.
    const generation = layout.encryption?.generationOf(i) ?? 0;
    if (generation > 0) h.update(`g${generation}\0`);
  });
  return `"s-${h.digest('base64url').slice(0, 32)}"`;
}

/**
 * Entries whose CRC-32 (MAC, when encrypted) a range needs (in a descriptor or central record) but which this
 * response cannot learn on the way: their body is not in the range, so the CRC has to be
 * computed from the entry alone (not sent) before those bytes. An entry whose body is in the
 * range reaches its end in it whenever its descriptor or central record is in it too (the
 * range is contiguous), so it is learned in-stream.
 */
export function crcsNeededUpfront(layout: ZipLayout, slices: readonly SegmentSlice[], known: (entry: number) => boolean): number[] {
  const streamed = new Set<number>();
  const needed = new Set<number>();
  // An encrypted ZIP's records hold CRC 0 (AE-2): only its MAC segments need the whole body.
  const needsSum = (kind: SegmentSlice['segment']['kind']) => (layout.encryption ? kind === 'mac' : kind === 'descriptor' || kind === 'central');
  for (const { segment } of slices) {
    if (segment.kind === 'data') streamed.add(segment.entry);
    else if (segment.kind !== 'header' && segment.kind !== 'end' && needsSum(segment.kind)) {
      const e = segment.entry;
      if (layout.entries[e]!.size > 0 && !known(e) && !streamed.has(e)) needed.add(e);
    }
  }
  return [...needed].sort((a, b) => a - b);
}

/** CRC-32 of a body's first `length` bytes. */
export interface CrcCheckpoint {
  length: number;
  crc: number;
}

/**
 * How a response sending body bytes [from, to) of an entry whose CRC is unknown gets to know it:
 * - `track`: extend `state` over the body bytes as they pass, from `state.length` on (a
 *   checkpoint at or past `from` costs nothing: the bytes before it are sent, not hashed);
 * - `prefix`: first fetch bytes [state.length, from) (not sent) to extend `state`, then track;
 * - `none`: the range stops before the body's end and no state is at hand: the CRC is not
 *   needed by this response and learning it would cost extra origin bytes.
 */
export type CrcPlan = { kind: 'track'; state: CrcCheckpoint } | { kind: 'prefix'; state: CrcCheckpoint } | { kind: 'none' };

export function planCrc(from: number, to: number, size: number, checkpoint: CrcCheckpoint | null): CrcPlan {
  if (from === 0) return { kind: 'track', state: { length: 0, crc: 0 } };
  if (checkpoint && checkpoint.length >= from && checkpoint.length <= size) return { kind: 'track', state: checkpoint };
  if (to < size) return { kind: 'none' };
  return { kind: 'prefix', state: checkpoint && checkpoint.length < from ? checkpoint : { length: 0, crc: 0 } };
}

/** Where computing an entry's CRC alone starts: its best checkpoint, else byte 0. */
export function crcStart(size: number, checkpoint: CrcCheckpoint | null): CrcCheckpoint {
  return checkpoint && checkpoint.length <= size ? checkpoint : { length: 0, crc: 0 };
}
