// Server-side assembly (docs/private-sources.md#server-side-assembly): a bin whose files are
// all objects of its destination's source is written by S3 itself, large bodies copied with
// UploadPartCopy; the packer uploads the records and the slices the part minimum needs. The
// bytes are those packFromStart writes; null from here means "pack through the packer".
import { createEntryNameDeduper, entryNameOf, parseS3Url } from '@ap/contract';
import { mapLimit } from '@ap/fetch';
import type { Logger } from '@ap/log';
import { quotedEtag, type AssemblyPart, type ObjectChecksum, type ObjectRef, type ObjectStore } from '@ap/storage';
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

/** An object copied or read changed since its ETag was learned (S3 answers 412 PreconditionFailed). */
function isPreconditionFailed(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.$metadata?.httpStatusCode === 412 || e?.name === 'PreconditionFailed';
}

/**
 * The objects of a bin's files when every file is an object of the destination's source (the
 * one predicate for "assembled inside S3": the fleet asks it too); null otherwise.
 */
export function objectsForServerCopy(files: readonly Pick<BinFile, 'url' | 'access'>[], destinationSourceId: string | null): ObjectRef[] | null {
  if (destinationSourceId === null || files.length === 0) return null;
  const refs: ObjectRef[] = [];
  for (const f of files) {
    const access = f.access;
    if (!access || !('s3' in access) || access.s3.sourceId !== destinationSourceId) return null;
    const location = parseS3Url(f.url);
    if (!location) return null;
    refs.push(location);
  }
  return refs;
}

/** The bin's objects, when it can be assembled inside S3 (stored, not encrypted, every file an object of the destination's source). */
function objectsOf(bin: ServerCopyBin): ObjectRef[] | null {
  if (bin.encryption || bin.deflateLevel !== null) return null;
  return objectsForServerCopy(bin.files, bin.destinationSourceId);
}

/** The objects' heads when each is there as the bin's records know it (size, ETag), else null. */
export async function headsAsRecorded(store: ObjectStore, refs: readonly ObjectRef[], files: readonly BinFile[], concurrency: number): Promise<ObjectChecksum[] | null> {
  const heads = await mapLimit(refs, concurrency, (ref) => store.headChecksum(ref));
  const changed = heads.some((h, i): boolean => h === null || (files[i]!.size !== null && h.size !== Number(files[i]!.size)) || (files[i]!.etag !== null && !sameEtag(h.etag, files[i]!.etag)));
  return changed ? null : (heads as ObjectChecksum[]);
}

/** Whether two ETags are the same, quoted (as HeadObject and the fetcher give them) or not (as the store's heads do). */
export const sameEtag = (a: string, b: string): boolean => quotedEtag(a) === quotedEtag(b);

/** The entries of the bin's ZIP: a single ZIP's names come from the objects, as writeArchive names them (s3:// bodies have no Content-Disposition). */
export function serverCopyEntries(files: readonly BinFile[], refs: readonly ObjectRef[], heads: readonly ObjectChecksum[]): { position: number; entryName: string; size: number }[] {
  const names = createEntryNameDeduper();
  return files.map((f, i) => ({
    position: f.position,
    entryName: names.take(f.entryName ?? entryNameOf(f, { finalUrl: `s3://${refs[i]!.bucket}/${refs[i]!.key.split('/').map(encodeURIComponent).join('/')}` })),
    size: heads[i]!.size,
  }));
}

async function readAll(store: ObjectStore, ref: ObjectRef, start: number, end: number): Promise<Buffer> {
  const read = await store.readFrom(ref, { start, end });
  const chunks: Buffer[] = [];
  for await (const chunk of read.body as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** The CRC-32 of an object read in ranged pieces in parallel, their CRCs combined; the bytes go nowhere. */
/** The CRC-32 of bytes [from, to) of an object, as if they were the whole object: read in ranged pieces in parallel, their CRCs combined. */
export async function readRangeCrc(store: ObjectStore, ref: ObjectRef, from: number, to: number, concurrency: number, onRead?: (bytes: number) => void): Promise<number> {
  const pieces = Array.from({ length: Math.ceil((to - from) / READ_PIECE) }, (_, i) => ({ start: from + i * READ_PIECE, end: Math.min(to, from + (i + 1) * READ_PIECE) - 1 }));
  const crcs = await mapLimit(pieces, concurrency, async (p) => {
    const bytes = await readAll(store, ref, p.start, p.end);
    onRead?.(bytes.length);
    return crc32(bytes);
  });
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

const PAD_BYTES = 5 * 1024 * 1024;

/**
 * Parts of `records ‖ the first bytes of an object` made without uploading the object's bytes,
 * as awslabs s3tar does (docs/private-sources.md#server-side-assembly): pad‖records (the records
 * are that upload's last part, exempt from the minimum), then pad‖records‖slice (both copied),
 * and the part is that object's range after the pad. One 5 MiB pad object per ZIP is uploaded;
 * all are removed when the ZIP is done.
 */
class PaddedParts {
  private pad: Promise<unknown> | null = null;
  private readonly keys: string[] = [];
  private next = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly key: string,
  ) {}

  private intermediate(): string {
    const key = `${this.key}.assembly/${this.next++}`;
    this.keys.push(key);
    return key;
  }

  async part(records: Buffer, source: ObjectRef, sliceLength: number): Promise<AssemblyPart> {
    const padKey = `${this.key}.assembly/pad`;
    this.pad ??= (this.keys.push(padKey), this.store.assemble(padKey, [{ kind: 'upload', length: PAD_BYTES, bytes: async () => Buffer.alloc(PAD_BYTES) }], { concurrency: 1 }));
    await this.pad;
    const here = (key: string): ObjectRef => ({ bucket: this.store.bucket, key });
    const withRecords = this.intermediate();
    await this.store.assemble(withRecords, [{ kind: 'copy', source: here(padKey), start: 0, end: PAD_BYTES - 1 }, { kind: 'upload', length: records.length, bytes: async () => records }], { concurrency: 2 });
    const withSlice = this.intermediate();
    await this.store.assemble(withSlice, [{ kind: 'copy', source: here(withRecords), start: 0, end: PAD_BYTES + records.length - 1 }, { kind: 'copy', source, start: 0, end: sliceLength - 1 }], { concurrency: 2 });
    return { kind: 'copy', source: here(withSlice), start: PAD_BYTES, end: PAD_BYTES + records.length + sliceLength - 1 };
  }

  async remove(): Promise<void> {
    await this.pad?.catch(() => undefined);
    if (this.keys.length > 0) await this.store.deleteMany(this.keys).catch(() => undefined);
  }
}

/**
 * Writes the bin into `store` (the destination) inside S3, or returns null when it cannot (not
 * eligible, an object changed, a copy or read refused): the caller packs it through the packer.
 */
export async function assembleInStore(
  deps: { store: ObjectStore; log: Logger },
  bin: ServerCopyBin,
  settings: ServerCopySettings,
  {
    signal,
    progress,
    onCopied,
    onRead,
    crcsRead,
  }: {
    signal: AbortSignal;
    progress: ProgressReport;
    onCopied(bytes: number): void;
    /** Object bytes read for CRC-32s (not uploaded). */
    onRead?(bytes: number): void;
    /** CRC-32s of objects without a checksum, by entry, already read (by the bin's segments): not read again. */
    crcsRead?: ReadonlyMap<number, number>;
  },
): Promise<PackedBin | null> {
  const refs = objectsOf(bin);
  if (!refs) return null;
  const { store, log } = deps;
  const files = bin.files;
  try {
    const known = await headsAsRecorded(store, refs, files, settings.concurrency);
    if (!known) return null; // the through-packer path reports the file's error as usual
    // Every copy and read from here on holds the object to the ETag its size and CRC came with:
    // one that changes meanwhile fails with 412 (below) instead of lending other bytes.
    const pinned = refs.map((ref, i): ObjectRef => ({ ...ref, etag: known[i]!.etag }));
    const entries = serverCopyEntries(files, refs, known);
    const layout = layoutOfFiles(entries, bin.mtime);
    const copyable = (entry: number) => known[entry]!.size >= settings.minBytes;
    const plan = planServerCopy(layout, copyable);
    if (!plan || !plan.some((p) => p.kind === 'copy')) return null;
    const crcs: number[] = [];
    for (const [i, head] of known.entries()) crcs[i] = head.crc32 ?? crcsRead?.get(i) ?? (await readRangeCrc(store, pinned[i]!, 0, head.size, settings.concurrency, onRead));
    const render = (start: number, length: number) => renderBytes(store, layout, pinned, crcs, start, length);
    const padded = new PaddedParts(store, bin.key);
    try {
      const parts = await mapLimit(plan, settings.concurrency, async (p): Promise<AssemblyPart> => {
        if (p.kind === 'copy') return { kind: 'copy', source: pinned[p.entry]!, start: p.objectStart, end: p.objectStart + p.length - 1 };
        // Records joined to the first bytes of a copied body: made inside S3 too (s3tar's pad).
        const last = sliceRange(layout, p.start, p.start + p.length - 1).at(-1)!;
        const records = p.length - last.length;
        if (last.segment.kind === 'data' && copyable(last.segment.entry) && last.from === 0 && records > 0) {
          return padded.part(await render(p.start, records), pinned[last.segment.entry]!, last.length);
        }
        return { kind: 'upload', length: p.length, bytes: () => render(p.start, p.length) };
      });
      const object = await store.assemble(bin.key, parts, {
        contentType: 'application/zip',
        concurrency: settings.concurrency,
        signal,
        onPart: (index) => {
          progress.add(plan[index]!.length);
          if (parts[index]!.kind === 'copy') onCopied(plan[index]!.length);
        },
      });
      return { object, urlErrors: [], packaged: entries };
    } finally {
      await padded.remove();
    }
  } catch (err) {
    if (!signal.aborted && isPreconditionFailed(err)) {
      log.info({ key: bin.key }, 'an object changed during server-side assembly: packing through the packer');
      return null; // which reports the changed file as any changed file
    }
    if (signal.aborted || !isRefusal(err)) throw err;
    log.info({ key: bin.key, error: (err as Error).name }, 'server-side assembly refused: packing through the packer');
    return null;
  }
}
