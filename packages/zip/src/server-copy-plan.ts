// Server-side assembly (docs/private-sources.md#server-side-assembly): the parts of a multipart
// upload that writes a ZIP whose large bodies are copied inside S3 (UploadPartCopy) instead of
// passing through the packer. Pure: the executor renders and reads what the parts name.
import type { ZipLayout } from './layout';

/** S3's limits on a multipart upload (AWS: "Amazon S3 multipart upload limits"). */
export interface PartLimits {
  /** Every part but the last is at least this long (5 MiB). */
  minPartBytes: number;
  /** A copied range is at most this long (5 GiB). */
  maxCopyBytes: number;
  /** An uploaded part is at most this long: the executor holds one in memory. */
  maxUploadBytes: number;
  /** At most this many parts (10,000). */
  maxParts: number;
}

export const S3_PART_LIMITS: PartLimits = {
  minPartBytes: 5 * 1024 * 1024,
  maxCopyBytes: 5 * 1024 * 1024 * 1024,
  maxUploadBytes: 16 * 1024 * 1024,
  maxParts: 10_000,
};

/**
 * One part, in archive coordinates ([start, start + length) of the ZIP). `upload`: the packer
 * sends these bytes (records, and bodies it reads); `copy`: S3 copies bytes
 * [objectStart, objectStart + length) of the body of `entry`, which are exactly those bytes of the ZIP.
 */
export type PlannedPart =
  | { kind: 'upload'; start: number; length: number }
  | { kind: 'copy'; start: number; length: number; entry: number; objectStart: number };

/**
 * Plans the parts of a ZIP of `layout` in which the bodies of the `copyable` entries are
 * copied, except the slices of them that bring a shorter run of records to the part minimum
 * (and bodies too short to leave a copy of at least the minimum, which are uploaded whole).
 * Null when the plan would need more parts than S3 allows (the caller packs through the packer).
 */
export function planServerCopy(layout: ZipLayout, copyable: (entry: number) => boolean, limits: PartLimits = S3_PART_LIMITS): PlannedPart[] | null {
  if (layout.encryption) throw new TypeError('an encrypted body is not its object\'s bytes: it cannot be copied');
  if (limits.maxUploadBytes < 2 * limits.minPartBytes || limits.maxCopyBytes < 2 * limits.minPartBytes) throw new RangeError('part limits leave no room to split');
  const parts: PlannedPart[] = [];
  // Start of the bytes to upload that no part holds yet.
  let pending = 0;
  for (const segment of layout.segments) {
    if (segment.kind !== 'data' || !copyable(segment.entry)) continue;
    const before = segment.start - pending;
    const slice = Math.max(0, limits.minPartBytes - before);
    const copied = segment.length - slice;
    // The copy is followed by at least the central directory, so it is never the last part.
    if (copied < limits.minPartBytes) continue;
    pushUploads(parts, pending, before + slice, limits);
    pushCopies(parts, segment.entry, segment.start + slice, slice, copied, limits);
    pending = segment.start + segment.length;
  }
  pushUploads(parts, pending, layout.totalSize - pending, limits);
  return parts.length > limits.maxParts ? null : parts;
}

/** [start, start + length) as upload parts of at most the upload maximum, each at least the minimum. */
function pushUploads(parts: PlannedPart[], start: number, length: number, limits: PartLimits): void {
  if (length === 0) return;
  const count = Math.ceil(length / limits.maxUploadBytes);
  for (let i = 0; i < count; i++) {
    const from = start + Math.floor((length * i) / count);
    const to = start + Math.floor((length * (i + 1)) / count);
    parts.push({ kind: 'upload', start: from, length: to - from });
  }
}

function pushCopies(parts: PlannedPart[], entry: number, start: number, objectStart: number, length: number, limits: PartLimits): void {
  const count = Math.ceil(length / limits.maxCopyBytes);
  for (let i = 0; i < count; i++) {
    const from = Math.floor((length * i) / count);
    const to = Math.floor((length * (i + 1)) / count);
    parts.push({ kind: 'copy', start: start + from, length: to - from, entry, objectStart: objectStart + from });
  }
}

/** Bytes the packer uploads under this plan. */
export function uploadedBytes(parts: readonly PlannedPart[]): number {
  return parts.reduce((sum, p) => sum + (p.kind === 'upload' ? p.length : 0), 0);
}
