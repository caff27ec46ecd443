// Server-side assembly (docs/private-sources.md#server-side-assembly): a bin whose files are
// all objects of its destination's source is written by S3 itself, large bodies copied with
// UploadPartCopy; the packer uploads the records and the slices the part minimum needs. The
// bytes are those packFromStart writes; null from here means "pack through the packer".
import { createEntryNameDeduper, entryNameOf, parseS3Url } from '@ap/contract';
import { mapLimit } from '@ap/fetch';
import type { Logger } from '@ap/log';
import type { AssemblyPart, ObjectChecksum, ObjectRef, ObjectStore } from '@ap/storage';
import { crc32, crc32Combine, layoutOfFiles, planServerCopy, renderSegment, sliceRange, type ZipEncryption, type ZipLayout } from '@ap/zip';
import type { PackedBin, ProgressReport } from './pack';
import type { BinFile } from './resume';

export interface ServerCopyBin {
  key: string;
  mtime: Date;
  files: BinFile[];
  encryption: ZipEncryption | null;
  deflateLevel: number | null;
  /** The source whose credentials write the destination (null: our bucket, no assembly). */
  destinationSourceId: string | null;
}

export interface ServerCopySettings {
  /** Bodies at least this long are copied (SERVER_COPY_MIN_BYTES). */
  minBytes: number;
  /** Requests at once (heads, ranged reads, parts). */
  concurrency: number;
}

const READ_PIECE = 8 * 1024 * 1024;

/** Failures after which the bin is packed through the packer: a service without UploadPartCopy, or credentials that may not copy or read. */
function isRefusal(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode;
  return status === 501 || status === 403 || ['NotImplemented', 'AccessDenied', 'InvalidRequest'].includes(e?.name ?? '');
}

/** The bin's objects, when every file is an object of the destination's source. */
function objectsOf(bin: ServerCopyBin): ObjectRef[] | null {
  if (bin.encryption || bin.deflateLevel !== null || bin.destinationSourceId === null || bin.files.length === 0) return null;
  const refs: ObjectRef[] = [];
  for (const f of bin.files) {
    const access = f.access;
    if (!access || !('s3' in access) || access.s3.sourceId !== bin.destinationSourceId) return null;
    const location = parseS3Url(f.url);
    if (!location) return null;
    refs.push(location);
  }
  return refs;
}

async function readAll(store: ObjectStore, ref: ObjectRef, start: number, end: number): Promise<Buffer> {
  const read = await store.readFrom(ref, { start, end });
  const chunks: Buffer[] = [];
  for await (const chunk of read.body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The CRC-32 of an object read in ranged pieces in parallel, their CRCs combined; the bytes go nowhere. */
async function readCrc(store: ObjectStore, ref: ObjectRef, size: number, concurrency: number): Promise<number> {
  const pieces = Array.from({ length: Math.ceil(size / READ_PIECE) }, (_, i) => ({ start: i * READ_PIECE, end: Math.min(size, (i + 1) * READ_PIECE) - 1 }));
  const crcs = await mapLimit(pieces, concurrency, async (p) => crc32(await readAll(store, ref, p.start, p.end)));
  return pieces.reduce((crc, p, i) => crc32Combine(crc, crcs[i]!, p.end - p.start + 1), 0);
}

/** Bytes [start, start + length) of the ZIP that are not copied: records rendered, bodies read. */
async function renderBytes(store: ObjectStore, layout: ZipLayout, refs: readonly ObjectRef[], crcs: readonly number[], start: number, length: number): Promise<Buffer> {
  const pieces = await Promise.all(
    sliceRange(layout, start, start + length - 1).map(({ segment, from, length: n }) =>
      segment.kind === 'data' ? readAll(store, refs[segment.entry]!, from, from + n - 1) : Promise.resolve(renderSegment(layout, segment, (e) => crcs[e]!).subarray(from, from + n)),
    ),
  );
  return Buffer.concat(pieces);
}

/**
 * Writes the bin into `store` (the destination) inside S3, or returns null when it cannot (not
 * eligible, an object changed, a copy or read refused): the caller packs it through the packer.
 */
export async function assembleInStore(
  deps: { store: ObjectStore; log: Logger },
  bin: ServerCopyBin,
  settings: ServerCopySettings,
  { signal, progress, onCopied }: { signal: AbortSignal; progress: ProgressReport; onCopied(bytes: number): void },
): Promise<PackedBin | null> {
  const refs = objectsOf(bin);
  if (!refs) return null;
  const { store, log } = deps;
  const files = bin.files;
  try {
    const heads = await mapLimit(refs, settings.concurrency, (ref) => store.headChecksum(ref));
    const changed = heads.some((h, i): boolean => h === null || (files[i]!.size !== null && h.size !== Number(files[i]!.size)) || (files[i]!.etag !== null && h.etag !== files[i]!.etag));
    if (changed) return null; // the through-packer path reports the file's error as usual
    const known = heads as ObjectChecksum[];
    // A single ZIP's names come from the objects, as writeArchive names them (s3:// bodies have no Content-Disposition).
    const names = createEntryNameDeduper();
    const entries = files.map((f, i) => ({
      position: f.position,
      entryName: names.take(f.entryName ?? entryNameOf(f, { finalUrl: `s3://${refs[i]!.bucket}/${refs[i]!.key.split('/').map(encodeURIComponent).join('/')}` })),
      size: known[i]!.size,
    }));
    const layout = layoutOfFiles(entries, bin.mtime);
    const copyable = (entry: number) => known[entry]!.size >= settings.minBytes;
    const plan = planServerCopy(layout, copyable);
    if (!plan || !plan.some((p) => p.kind === 'copy')) return null;
    const crcs: number[] = [];
    for (const [i, head] of known.entries()) crcs[i] = head.crc32 ?? (await readCrc(store, refs[i]!, head.size, settings.concurrency));
    const parts: AssemblyPart[] = plan.map((p) =>
      p.kind === 'copy'
        ? { kind: 'copy', source: refs[p.entry]!, start: p.objectStart, end: p.objectStart + p.length - 1 }
        : { kind: 'upload', length: p.length, bytes: () => renderBytes(store, layout, refs, crcs, p.start, p.length) },
    );
    const object = await store.assemble(bin.key, parts, {
      contentType: 'application/zip',
      concurrency: settings.concurrency,
      signal,
      onPart: (index) => {
        const part = plan[index]!;
        progress.add(part.length);
        if (part.kind === 'copy') onCopied(part.length);
      },
    });
    return { object, urlErrors: [], packaged: entries };
  } catch (err) {
    if (signal.aborted || !isRefusal(err)) throw err;
    log.info({ key: bin.key, error: (err as Error).name }, 'server-side assembly refused: packing through the packer');
    return null;
  }
}
