// Any byte range of a planned ZIP, as a plan: the pieces it is made of (records rendered from
// the layout, slices of bodies), the CRC-32s it needs before its first byte, and how each body
// in it learns its own CRC on the way. Pure: whoever runs the plan brings the bodies (the
// archive engine fetches them; `buildRange` takes them from memory, for tests and references).
import type { ZipEncryption } from './aes';
import { crc32 } from './crc32';
import { renderSegment, sliceRange, type SegmentSlice, type ZipLayout } from './layout';
import { crcsNeededUpfront, crcStart, planCrc, type CrcCheckpoint, type CrcPlan } from './stream-plan';

/** What is known of the entries' CRC-32s before the range is built. */
export interface KnownCrcs {
  /** The entry's CRC-32 is known. */
  has(entry: number): boolean;
  /** The entry's best CRC checkpoint (a prefix of its body), when its CRC is not known. */
  checkpoint(entry: number): CrcCheckpoint | null;
}

export type RangePiece =
  /** Bytes of a header, descriptor, central or end record, rendered from the layout. */
  | { kind: 'record'; slice: SegmentSlice }
  /**
   * Body bytes [from, to) of `entry`. `crc` says how the entry's CRC is learned while they
   * pass (null: already known, or not needed by this range and not learnable without extra bytes).
   */
  | { kind: 'body'; slice: SegmentSlice; entry: number; from: number; to: number; crc: Exclude<CrcPlan, { kind: 'none' }> | null };

export interface RangePlan {
  /** Entries whose CRC-32 the range's records need but whose body is not in it: computed first, from `from`. */
  upfront: { entry: number; from: CrcCheckpoint }[];
  /** The range's bytes, in order. */
  pieces: RangePiece[];
}

/** The plan of bytes [start, end] (inclusive, as HTTP ranges are) of the archive. */
export function planRange(layout: ZipLayout, start: number, end: number, known: KnownCrcs): RangePlan {
  return planSlices(layout, sliceRange(layout, start, end), known);
}

/** The plan of the bytes these slices cover (from `sliceRange`). */
export function planSlices(layout: ZipLayout, slices: readonly SegmentSlice[], knownCrcs: KnownCrcs): RangePlan {
  // A tar holds no CRC: no range of it needs one, upfront or on the way.
  const known: KnownCrcs = layout.tar ? { has: () => true, checkpoint: () => null } : knownCrcs;
  const upfront = crcsNeededUpfront(layout, slices, (e) => known.has(e)).map((entry) => ({
    entry,
    from: crcStart(layout.entries[entry]!.size, known.checkpoint(entry)),
  }));
  const pieces = slices.map((slice): RangePiece => {
    const { segment } = slice;
    if (segment.kind !== 'data') return { kind: 'record', slice };
    const entry = segment.entry;
    const from = slice.from;
    const to = slice.from + slice.length;
    const plan = known.has(entry) ? null : planCrc(from, to, segment.length, known.checkpoint(entry));
    return { kind: 'body', slice, entry, from, to, crc: plan === null || plan.kind === 'none' ? null : plan };
  });
  return { upfront, pieces };
}

/**
 * Extends a body's CRC checkpoint over a chunk of its bytes that starts at body offset `at`:
 * only a chunk that covers the checkpoint's end moves it (the bytes before it are not hashed
 * again, and a gap cannot be hashed over).
 */
export function extendCheckpoint(state: CrcCheckpoint, chunk: Buffer, at: number): CrcCheckpoint {
  const end = at + chunk.length;
  if (state.length < at || state.length >= end) return state;
  return { length: end, crc: crc32(state.length === at ? chunk : chunk.subarray(state.length - at), state.crc) };
}

/** Bodies held by the caller: bytes by range, and (optionally) a faster CRC of a stretch of them. */
export interface BodySource {
  /** Body bytes [from, to) of the entry. */
  read(entry: number, from: number, to: number): Buffer;
  /** CRC-32 of body bytes [from.length, to), continuing from.crc. Default: of `read`'s bytes. */
  crc?(entry: number, from: CrcCheckpoint, to: number): number;
}

export interface BuiltRange {
  bytes: Buffer;
  /** CRC-32s learned (whole bodies hashed), by entry. */
  learned: Map<number, number>;
  /** Checkpoints reached in bodies the range ends inside, by entry. */
  checkpoints: Map<number, CrcCheckpoint>;
  /** MACs learned (whole ciphertexts authenticated), by entry: encrypted ZIPs. */
  macs?: Map<number, Buffer>;
}

/**
 * Runs a plan over bodies in memory: the reference for the archive engine's range builder,
 * which runs the same plan over bodies fetched from their origins.
 */
export function buildRange(
  layout: ZipLayout,
  plan: RangePlan,
  source: BodySource,
  knownCrcs: ReadonlyMap<number, number>,
  knownMacs: ReadonlyMap<number, Buffer> = new Map(),
): BuiltRange {
  if (layout.encryption) return buildEncryptedRange(layout, layout.encryption, plan, source, knownMacs);
  const learned = new Map<number, number>();
  const checkpoints = new Map<number, CrcCheckpoint>();
  const crcOf = (entry: number, from: CrcCheckpoint, to: number) =>
    from.length >= to ? from.crc : source.crc ? source.crc(entry, from, to) : crc32(source.read(entry, from.length, to), from.crc);
  const learn = (entry: number, crc: number) => void learned.set(entry, crc >>> 0);
  for (const { entry, from } of plan.upfront) learn(entry, crcOf(entry, from, layout.entries[entry]!.size));
  const out: Buffer[] = [];
  for (const piece of plan.pieces) {
    if (piece.kind === 'record') {
      const { segment, from, length } = piece.slice;
      const bytes = renderSegment(layout, segment, (e) => {
        // An empty body's CRC-32 is 0; any other is known, learned upfront or learned on the way.
        const crc = knownCrcs.get(e) ?? learned.get(e) ?? (layout.entries[e]!.size === 0 ? 0 : undefined);
        if (crc === undefined) throw new Error(`CRC of entry ${e} is not known`);
        return crc;
      });
      out.push(bytes.subarray(from, from + length));
      continue;
    }
    const { entry, from, to, crc } = piece;
    const bytes = source.read(entry, from, to);
    out.push(bytes);
    if (!crc) continue;
    const start = crc.kind === 'prefix' ? { length: from, crc: crcOf(entry, crc.state, from) } : crc.state;
    const state = extendCheckpoint(start, bytes, from);
    if (state.length === layout.entries[entry]!.size) learn(entry, state.crc);
    else checkpoints.set(entry, state);
  }
  return { bytes: Buffer.concat(out), learned, checkpoints };
}

/**
 * `buildRange` of an encrypted ZIP: bodies encrypted at their offsets, and MACs (over the
 * whole ciphertext: no checkpoint can shorten that) learned as the plan says. `knownMacs` are
 * MACs learned before.
 */
function buildEncryptedRange(layout: ZipLayout, encryption: ZipEncryption, plan: RangePlan, source: BodySource, knownMacs: ReadonlyMap<number, Buffer>): BuiltRange {
  const macs = new Map<number, Buffer>();
  const ciphertext = (entry: number, from: number, to: number) => encryption.cipher(entry).xor(source.read(entry, from, to), from);
  for (const { entry } of plan.upfront) macs.set(entry, encryption.mac(entry).update(ciphertext(entry, 0, layout.entries[entry]!.size)).digest());
  const out: Buffer[] = [];
  for (const piece of plan.pieces) {
    if (piece.kind === 'record') {
      const { segment, from, length } = piece.slice;
      const bytes = renderSegment(layout, segment, () => 0, (e) => {
        // An empty body's MAC is the HMAC of nothing: known from the keys alone.
        const mac = knownMacs.get(e) ?? macs.get(e) ?? (layout.entries[e]!.size === 0 ? encryption.mac(e).digest() : undefined);
        if (mac === undefined) throw new Error(`MAC of entry ${e} is not known`);
        return mac;
      });
      out.push(bytes.subarray(from, from + length));
      continue;
    }
    const { entry, from, to, crc } = piece;
    const bytes = ciphertext(entry, from, to);
    out.push(bytes);
    if (!crc) continue;
    const mac = encryption.mac(entry);
    if (crc.kind === 'prefix' && from > 0) mac.update(ciphertext(entry, 0, from));
    mac.update(bytes);
    if (to === layout.entries[entry]!.size) macs.set(entry, mac.digest());
  }
  return { bytes: Buffer.concat(out), learned: new Map(), checkpoints: new Map(), macs };
}
