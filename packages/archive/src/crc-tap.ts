// A body slice being sent, seen by its entry's shared CRC work (crc-work.ts): its bytes are
// hashed as they pass, in pieces cut wherever another piece of the entry starts or ends, so
// the CRCs of what several responses send join (crc32Combine) into the entry's.
import { crc32, crc32Combine } from '@ap/zip';

/** CRC-32 of body bytes [from, to) of one entry. */
export interface CrcPiece {
  from: number;
  to: number;
  crc: number;
}

export interface TapOwner {
  pieceOf(tap: CrcTap, piece: CrcPiece): void;
  tapEnded(tap: CrcTap): void;
}

export class CrcTap {
  /** Body offset reached: bytes [from, at) were hashed. */
  at: number;
  /** Where the piece being hashed began, and its CRC so far. */
  pieceFrom: number;
  private pieceCrc = 0;
  /** CRC of [from, pieceFrom): the pieces handed on, joined. */
  private before = 0;
  /** Points ahead where the piece is cut (sorted). */
  private cuts: number[] = [];
  readonly openedAt = performance.now();
  /** When its first bytes passed (null: not yet). */
  startedAt: number | null = null;
  lastProgressAt = this.openedAt;
  /** No longer counted on by the entry (it stalled, or the entry's CRC is known): it only hashes. */
  detached = false;
  ended = false;

  constructor(
    private readonly owner: TapOwner,
    readonly from: number,
    readonly to: number,
  ) {
    this.at = from;
    this.pieceFrom = from;
  }

  /** The next bytes of the slice, in order. */
  update(chunk: Buffer): void {
    this.startedAt ??= performance.now();
    let rest = chunk;
    while (this.cuts.length > 0 && this.cuts[0]! <= this.at + rest.length) {
      const cut = this.cuts.shift()!;
      if (cut <= this.at) {
        if (cut === this.at) this.split();
        continue;
      }
      const n = cut - this.at;
      this.pieceCrc = crc32(rest.subarray(0, n), this.pieceCrc);
      this.at = cut;
      rest = rest.subarray(n);
      this.split();
    }
    if (rest.length > 0) {
      this.pieceCrc = crc32(rest, this.pieceCrc);
      this.at += rest.length;
    }
    this.lastProgressAt = performance.now();
  }

  /** CRC-32 of [from, at). */
  run(): number {
    return this.pieceFrom === this.from ? this.pieceCrc : crc32Combine(this.before, this.pieceCrc, this.at - this.pieceFrom);
  }

  /** Cut the piece at `point` when the bytes reach it (now, when they are there). */
  cutAt(point: number): void {
    if (point < this.at || point >= this.to || point <= this.pieceFrom) return;
    if (point === this.at) return this.split();
    const i = this.cuts.findIndex((c) => c >= point);
    if (this.cuts[i] === point) return;
    this.cuts.splice(i === -1 ? this.cuts.length : i, 0, point);
  }

  /** Hands the piece so far on, and goes on hashing: the entry no longer counts on it. */
  detach(): void {
    if (this.detached) return;
    this.split();
    this.detached = true;
    this.cuts = [];
  }

  /** The slice stopped (sent whole, cut, or never opened): what was hashed is handed on. */
  end(): void {
    if (this.ended) return;
    this.split();
    this.ended = true;
    this.owner.tapEnded(this);
  }

  private split(): void {
    if (this.at === this.pieceFrom) return;
    const piece = { from: this.pieceFrom, to: this.at, crc: this.pieceCrc };
    this.before = this.run();
    this.pieceFrom = this.at;
    this.pieceCrc = 0;
    // Handed on once the tap stands at its new piece: the owner may cut it again meanwhile.
    if (!this.detached) this.owner.pieceOf(this, piece);
  }
}
