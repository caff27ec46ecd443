import {
  centralRecord,
  centralRecordLength,
  dataDescriptor,
  descriptorLength,
  dosTime,
  endRecords,
  endRecordsLength,
  localHeader,
  localHeaderLength,
  needsZip64End,
  storedLength,
  usesZip64,
  type DosTime,
  type EntryRecord,
} from './format';
import { AES_MAC, AES_SALT, AES_VERIFIER, type ZipEncryption } from './aes';
import { planTar, renderTarSegment } from './tar-layout';

export interface ZipEntryInput {
  /** The entry's path inside the ZIP (already sanitised and de-duplicated). */
  name: string;
  /** Byte length of the body, or null when it is not known before fetching. */
  size: number | null;
}

/** One entry placed in the archive: where its header, body and descriptor sit. */
export interface PlacedEntry extends EntryRecord {
  index: number;
  /** Offset of the first body byte. */
  dataOffset: number;
  descriptorOffset: number;
}

/**
 * One contiguous byte source of the archive (the Esri/zipstream model): the archive is these
 * sources end to end. `header` and `end` bytes are known from the layout alone; `data` is an
 * input's body; `descriptor` and `central` need the entry's CRC-32. In an encrypted ZIP the
 * header ends with the entry's salt and verifier, `data` is the body encrypted, `mac` its
 * authentication code (which needs the whole ciphertext, as a CRC needs the whole body), and
 * `descriptor` and `central` need nothing (AE-2 writes CRC 0).
 */
export type Segment =
  | { kind: 'header'; start: number; length: number; entry: number }
  | { kind: 'data'; start: number; length: number; entry: number }
  | { kind: 'mac'; start: number; length: number; entry: number }
  | { kind: 'descriptor'; start: number; length: number; entry: number }
  | { kind: 'central'; start: number; length: number; entry: number }
  /** A tar's zeros after a body, up to its 512-byte block (tar-layout.ts). */
  | { kind: 'padding'; start: number; length: number; entry: number }
  | { kind: 'end'; start: number; length: number };

export interface ZipLayout {
  entries: PlacedEntry[];
  segments: Segment[];
  centralOffset: number;
  centralSize: number;
  totalSize: number;
  time: DosTime;
  /** Every entry is WinZip AES-256 encrypted with this (null: a plain ZIP). */
  encryption: ZipEncryption | null;
  /** Set when the archive is a tar (tar-layout.ts), not a ZIP: its entries' mtime in seconds. */
  tar?: { mtime: number };
}

/** Exact byte length of a ZIP of these entries, in this order; null if a size is unknown. */
export function zipSize(entries: readonly ZipEntryInput[], options: { aes?: boolean } = {}): number | null {
  const sizer = new ZipSizer(options.aes);
  for (const e of entries) {
    if (e.size === null) return null;
    sizer.add(Buffer.byteLength(e.name), e.size);
  }
  return sizer.total();
}

/**
 * Running exact size of an archive as entries are appended. Used by bin packing and by the
 * packer's per-archive limit; O(1) per entry.
 */
export class ZipSizer {
  private cursor = 0;
  private central = 0;
  private count = 0;

  /** `aes`: every entry encrypted (28 more bytes of data and 11 of extra field per header). */
  constructor(private readonly aes = false) {}

  /** `knownFirst` false: the size was not known when its header was written (a ZIP64 entry). */
  add(nameBytes: number, size: number, knownFirst = true): void {
    const next = this.next(nameBytes, size, knownFirst);
    this.cursor = next.cursor;
    this.central = next.central;
    this.count++;
  }

  /** Where the first body byte of an entry of this size appended now would sit (its salt, when encrypted). */
  nextDataOffset(nameBytes: number, size: number): number {
    return this.cursor + localHeaderLength(nameBytes, usesZip64(storedLength(size, this.aes), this.cursor), this.aes);
  }

  /** Size of the archive if it ended now. */
  total(): number {
    return this.cursor + this.central + endRecordsLength(needsZip64End(this.count, this.central, this.cursor));
  }

  /** Size of the archive with one more entry, without adding it. */
  totalWith(nameBytes: number, size: number, knownFirst = true): number {
    const { cursor, central } = this.next(nameBytes, size, knownFirst);
    return cursor + central + endRecordsLength(needsZip64End(this.count + 1, central, cursor));
  }

  get entryCount(): number {
    return this.count;
  }

  private next(nameBytes: number, size: number, knownFirst: boolean): { cursor: number; central: number } {
    const stored = storedLength(size, this.aes);
    const zip64 = usesZip64(stored, this.cursor);
    const headerZip64 = knownFirst ? zip64 : usesZip64(0, this.cursor);
    return {
      cursor: this.cursor + localHeaderLength(nameBytes, headerZip64, this.aes) + stored + descriptorLength(zip64),
      central: this.central + centralRecordLength(nameBytes, zip64, this.aes),
    };
  }
}

/**
 * Lays out a ZIP whose entry sizes are all known: every record's offset and length, the
 * archive's exact size, and the list of byte sources a download walks.
 */
export function planZip(entries: readonly { name: string; size: number }[], options: { mtime: Date; encryption?: ZipEncryption | null }): ZipLayout {
  const encryption = options.encryption ?? null;
  const aes = encryption !== null;
  const placed: PlacedEntry[] = [];
  const segments: Segment[] = [];
  let cursor = 0;
  entries.forEach((e, index) => {
    if (!Number.isSafeInteger(e.size) || e.size < 0) throw new RangeError(`entry ${index}: size must be a non-negative integer`);
    const name = Buffer.from(e.name, 'utf8');
    if (name.length > 0xffff) throw new RangeError(`entry ${index}: name is longer than 65535 bytes`);
    const offset = cursor;
    const zip64 = usesZip64(storedLength(e.size, aes), offset);
    const dataOffset = offset + localHeaderLength(name.length, zip64, aes) + (aes ? AES_SALT + AES_VERIFIER : 0);
    const macOffset = dataOffset + e.size;
    const descriptorOffset = macOffset + (aes ? AES_MAC : 0);
    placed.push({ index, name, size: e.size, offset, zip64, dataOffset, descriptorOffset, ...(aes ? { aes } : {}) });
    segments.push({ kind: 'header', start: offset, length: dataOffset - offset, entry: index });
    if (e.size > 0) segments.push({ kind: 'data', start: dataOffset, length: e.size, entry: index });
    if (aes) segments.push({ kind: 'mac', start: macOffset, length: AES_MAC, entry: index });
    segments.push({ kind: 'descriptor', start: descriptorOffset, length: descriptorLength(zip64), entry: index });
    cursor = descriptorOffset + descriptorLength(zip64);
  });
  const centralOffset = cursor;
  for (const e of placed) {
    const length = centralRecordLength(e.name.length, e.zip64, aes);
    segments.push({ kind: 'central', start: cursor, length, entry: e.index });
    cursor += length;
  }
  const centralSize = cursor - centralOffset;
  const endLength = endRecordsLength(needsZip64End(placed.length, centralSize, centralOffset));
  segments.push({ kind: 'end', start: cursor, length: endLength });
  return { entries: placed, segments, centralOffset, centralSize, totalSize: cursor + endLength, time: dosTime(options.mtime), encryption };
}

/** The layout of a bin whose files all have their entry name and size (as its file rows hold them). */
export function layoutOfFiles(files: readonly { entryName: string | null; size: bigint | number | null }[], mtime: Date, encryption: ZipEncryption | null = null, format: 'zip' | 'tar' = 'zip'): ZipLayout {
  const entries = files.map((f) => ({ name: f.entryName!, size: Number(f.size) }));
  return format === 'tar' ? planTar(entries, { mtime }) : planZip(entries, { mtime, encryption });
}

/**
 * The bytes of a non-data segment. `crcOf` is asked only for `descriptor` and `central`
 * segments of a plain ZIP, i.e. only for entries whose CRC the segment actually contains;
 * `macOf` only for `mac` segments.
 */
export function renderSegment(layout: ZipLayout, segment: Segment, crcOf: (entry: number) => number, macOf?: (entry: number) => Buffer): Buffer {
  if (layout.tar) return renderTarSegment({ entries: layout.entries, tar: layout.tar }, segment);
  const crc = (entry: number) => (layout.encryption ? 0 : crcOf(entry));
  switch (segment.kind) {
    case 'header': {
      const header = localHeader(layout.entries[segment.entry]!, layout.time);
      return layout.encryption ? Buffer.concat([header, layout.encryption.preamble(segment.entry)]) : header;
    }
    case 'mac':
      if (!macOf) throw new TypeError('an encrypted ZIP needs its MACs');
      return macOf(segment.entry);
    case 'descriptor':
      return dataDescriptor(layout.entries[segment.entry]!, crc(segment.entry));
    case 'central':
      return centralRecord(layout.entries[segment.entry]!, crc(segment.entry), layout.time);
    case 'end':
      return endRecords(layout.entries.length, layout.centralSize, layout.centralOffset);
    case 'data':
      throw new TypeError('data segments are bodies: they come from the input, not the layout');
    case 'padding':
      throw new TypeError('a ZIP has no padding segments');
  }
}

/** A piece of a segment that falls inside a requested byte range. */
export interface SegmentSlice {
  segment: Segment;
  /** Offset inside the segment where the slice starts. */
  from: number;
  /** Length of the slice. */
  length: number;
}

/**
 * The segments (and the part of each) that cover bytes [start, end] of the archive, inclusive
 * as HTTP ranges are. Binary search to the first, then a walk: O(log n + k).
 */
export function sliceRange(layout: ZipLayout, start: number, end: number): SegmentSlice[] {
  if (!(start >= 0 && end >= start && end < layout.totalSize)) throw new RangeError(`range ${start}-${end} is outside 0-${layout.totalSize - 1}`);
  const { segments } = layout;
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (segments[mid]!.start <= start) lo = mid;
    else hi = mid - 1;
  }
  const slices: SegmentSlice[] = [];
  for (let i = lo; i < segments.length && segments[i]!.start <= end; i++) {
    const segment = segments[i]!;
    const from = Math.max(start, segment.start) - segment.start;
    const to = Math.min(end + 1, segment.start + segment.length) - segment.start;
    if (to > from) slices.push({ segment, from, length: to - from });
  }
  return slices;
}

/**
 * The most bytes zlib's raw deflate (windowBits 15, memLevel 8, as the writer runs it) writes for
 * `size` bytes: zlib's own deflateBound. Incompressible data goes out in stored blocks, a few
 * bytes of framing each; split jobs lay deflate bins out with this, so caps hold for any data.
 */
export function deflateBound(size: number): number {
  return size + Math.floor(size / 4096) + Math.floor(size / 16384) + Math.floor(size / 33554432) + 7;
}
