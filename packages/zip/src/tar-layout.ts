// A tar laid out like a ZIP (layout.ts): the archive is byte sources end to end, each entry's
// headers, its body and the body's padding, then the end blocks. The stream route, the packer's
// resume and ranges walk it through the same code as a ZIP's; a tar needs no CRC anywhere.
import { dosTime, type DosTime } from './format';
import { TAR_END_LENGTH, tarEntryLength, tarHeader, tarHeaderLength, tarPadding } from './tar-format';

// The layout's shapes, as layout.ts declares them for ZIPs (structurally the same: layout.ts
// hands this layout on as a ZipLayout without this module depending on it).
interface TarPlacedEntry {
  index: number;
  name: Buffer;
  size: number;
  offset: number;
  zip64: false;
  dataOffset: number;
  descriptorOffset: number;
}
type TarSegment =
  | { kind: 'header' | 'data' | 'padding'; start: number; length: number; entry: number }
  | { kind: 'end'; start: number; length: number };
export interface TarLayout {
  entries: TarPlacedEntry[];
  segments: TarSegment[];
  centralOffset: number;
  centralSize: number;
  totalSize: number;
  time: DosTime;
  encryption: null;
  tar: { mtime: number };
}

/** Lays out a tar of these entries (a name ending in "/" is a folder, of size 0), in this order. */
export function planTar(entries: readonly { name: string; size: number }[], options: { mtime: Date }): TarLayout {
  const placed: TarPlacedEntry[] = [];
  const segments: TarSegment[] = [];
  let cursor = 0;
  entries.forEach((e, index) => {
    if (!Number.isSafeInteger(e.size) || e.size < 0) throw new RangeError(`entry ${index}: size must be a non-negative integer`);
    if (e.name.endsWith('/') && e.size !== 0) throw new RangeError(`entry ${index}: a folder has no body`);
    const offset = cursor;
    const dataOffset = offset + tarHeaderLength(e.name, e.size);
    const paddingOffset = dataOffset + e.size;
    placed.push({ index, name: Buffer.from(e.name, 'utf8'), size: e.size, offset, zip64: false, dataOffset, descriptorOffset: paddingOffset });
    segments.push({ kind: 'header', start: offset, length: dataOffset - offset, entry: index });
    if (e.size > 0) segments.push({ kind: 'data', start: dataOffset, length: e.size, entry: index });
    const padding = tarPadding(e.size);
    if (padding > 0) segments.push({ kind: 'padding', start: paddingOffset, length: padding, entry: index });
    cursor = paddingOffset + padding;
  });
  segments.push({ kind: 'end', start: cursor, length: TAR_END_LENGTH });
  const totalSize = cursor + TAR_END_LENGTH;
  return { entries: placed, segments, centralOffset: cursor, centralSize: 0, totalSize, time: dosTime(options.mtime), encryption: null, tar: { mtime: Math.floor(options.mtime.getTime() / 1000) } };
}

/** The bytes of a tar layout's header, padding or end segment. */
export function renderTarSegment(layout: { entries: readonly { name: Buffer; size: number }[]; tar: { mtime: number } }, segment: { kind: string; length: number; entry?: number }): Buffer {
  switch (segment.kind) {
    case 'header': {
      const entry = layout.entries[segment.entry!]!;
      const name = entry.name.toString('utf8');
      return tarHeader({ name, size: entry.size, folder: name.endsWith('/') }, layout.tar.mtime);
    }
    case 'padding':
    case 'end':
      return Buffer.alloc(segment.length);
    default:
      throw new TypeError(`a tar has no ${segment.kind} segment`);
  }
}

/** Running exact size of a tar as entries are appended (ZipSizer's interface): O(1) per entry. */
export class TarSizer {
  private cursor = 0;
  private count = 0;

  add(name: string, size: number): void {
    this.cursor += tarEntryLength(name, size);
    this.count++;
  }

  nextDataOffset(name: string, size: number): number {
    return this.cursor + tarHeaderLength(name, size);
  }

  total(): number {
    return this.cursor + TAR_END_LENGTH;
  }

  totalWith(name: string, size: number): number {
    return this.cursor + tarEntryLength(name, size) + TAR_END_LENGTH;
  }

  get entryCount(): number {
    return this.count;
  }
}
