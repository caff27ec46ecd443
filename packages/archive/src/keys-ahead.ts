import type { RangePlan, ZipEncryption } from '@ap/zip';

/** Entries whose keys are derived ahead of the one a reader needs: enough to keep the key pool busy for it, no more. */
const KEYS_AHEAD = 8;

/**
 * The AES keys of an encrypted range's entries, derived off the event loop in the order the
 * range uses them, a window ahead (docs/archive-options.md#key-derivation).
 */
export class KeysAhead {
  private readonly order: number[];
  private readonly positionOf = new Map<number, number>();
  private next = 0;
  private readonly started = new Map<number, Promise<void>>();

  constructor(
    private readonly encryption: ZipEncryption,
    plan: RangePlan,
  ) {
    const entries = new Set<number>(plan.upfront.map((u) => u.entry));
    for (const piece of plan.pieces) {
      if (piece.kind === 'body') entries.add(piece.entry);
      else if (piece.slice.segment.kind === 'header' || piece.slice.segment.kind === 'mac') entries.add(piece.slice.segment.entry);
    }
    this.order = [...entries];
    this.order.forEach((entry, i) => this.positionOf.set(entry, i));
  }

  /** Resolves once the entry's keys are kept; starts the next entries' derivations. */
  async need(entry: number): Promise<void> {
    const at = this.positionOf.get(entry);
    const until = Math.min(this.order.length, (at ?? this.next) + KEYS_AHEAD);
    while (this.next < until) {
      const e = this.order[this.next++]!;
      this.started.set(e, this.encryption.ready([e]));
    }
    const started = this.started.get(entry);
    this.started.delete(entry);
    await (started ?? this.encryption.ready([entry]));
  }
}
