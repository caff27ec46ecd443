// The CRC-32s one response (a LayoutReader's slices) needs and does not track itself, from the
// process's shared CRC work (docs/engine.md#stream-ranges): its body slices are tapped, the CRCs
// its records need are wanted at once and awaited only when their record's turn comes.
import type { CrcCheckpoint, RangePiece, RangePlan, SegmentSlice } from '@ap/zip';
import type { CrcTap } from './crc-tap';
import type { CrcInput, CrcWork } from './crc-work';
import type { CrcWaiter } from './entry-crc';

type BodyPiece = Extract<RangePiece, { kind: 'body' }>;

/**
 * Whole bodies from this size are seen by their entry's shared CRC work, as is every part of a
 * body: a smaller whole one learns its own CRC, and 20,000 of them stay out of it.
 */
const TAPPED_FROM = 1 << 20;

/** The entry whose CRC a record holds (a data descriptor, a central record), if any. */
export function crcNeeded(segment: SegmentSlice['segment']): number | null {
  return segment.kind === 'descriptor' || segment.kind === 'central' ? segment.entry : null;
}

export class ResponseCrcs {
  /** The body pieces' taps (entries whose CRC is not known), by piece. */
  private readonly taps = new Map<BodyPiece, CrcTap>();
  /** CRCs the response's records will need and its bodies do not track, being worked out meanwhile. */
  private readonly wanted = new Map<number, CrcWaiter>();

  constructor(
    private readonly work: CrcWork,
    private readonly jobId: string,
    private readonly inputs: readonly CrcInput[],
    /** The CRCs the reader knows (filled in here from the shared work). */
    private readonly crcs: Map<number, number>,
    private readonly signal: AbortSignal,
  ) {}

  /** The entry's CRC is known to the reader, or to the process's shared work. */
  has(entry: number): boolean {
    if (this.crcs.has(entry)) return true;
    const known = this.work.peek(this.jobId, this.inputs[entry]!)?.whole ?? null;
    if (known === null) return false;
    this.crcs.set(entry, known);
    return true;
  }

  /** The furthest known prefix CRC: stored, or learned in this process since. */
  checkpoint(entry: number): CrcCheckpoint | null {
    const stored = this.inputs[entry]!.checkpoint;
    const held = this.work.peek(this.jobId, this.inputs[entry]!)?.checkpoint;
    return held && held.length > (stored?.length ?? 0) ? held : stored;
  }

  /** Taps the plan's body slices and starts the CRCs its records will need. */
  start(plan: RangePlan): void {
    for (const piece of plan.pieces) {
      if (piece.kind !== 'body' || this.crcs.has(piece.entry)) continue;
      const size = this.inputs[piece.entry]!.size;
      if (piece.from > 0 || piece.to < size || size >= TAPPED_FROM) this.taps.set(piece, this.entry(piece.entry).tap(piece.from, piece.to));
    }
    for (const { entry } of plan.upfront) this.want(entry);
    for (const piece of plan.pieces) if (piece.kind === 'body' && piece.crc?.kind === 'prefix') this.want(piece.entry);
  }

  tapOf(piece: BodyPiece): CrcTap | null {
    return this.taps.get(piece) ?? null;
  }

  /** The CRC a record needs now (null: the reader knows it), once worked out. */
  async need(entry: number): Promise<number | null> {
    if (this.crcs.has(entry) || this.inputs[entry]!.size === 0) return null;
    this.want(entry);
    return this.wanted.get(entry)!.needed();
  }

  /** The reader learned an entry's CRC on its own: responses waiting for it elsewhere have it too. */
  learned(entry: number, crc: number): void {
    this.work.peek(this.jobId, this.inputs[entry]!)?.learned(crc);
  }

  forget(entry: number): void {
    this.work.forget(this.jobId, this.inputs[entry]!);
  }

  /** The response ended: its slices stop counting, and what it waited for is no longer its. */
  close(): void {
    for (const tap of this.taps.values()) tap.end();
    for (const waiter of this.wanted.values()) waiter.release();
  }

  private entry(entry: number) {
    return this.work.entry(this.jobId, this.inputs[entry]!);
  }

  private want(entry: number): void {
    if (this.crcs.has(entry) || this.wanted.has(entry) || this.inputs[entry]!.size === 0) return;
    this.wanted.set(entry, this.entry(entry).want(this.signal));
  }
}
