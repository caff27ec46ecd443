// Resuming a bin's multipart upload from its last recorded part (docs/product-rules.md#lifecycle).
//
// A bin's bytes are a pure function of its layout (entry names and sizes, in order) and the
// inputs. While a bin is packed, each stored part (number, ETag) is recorded, with each
// finished entry's CRC-32 and a CRC checkpoint of the body under way at every part boundary.
// A later attempt continues the same upload at the end of the contiguous stored parts, P:
// bytes [P, end) of the layout come from the LayoutReader (stream mode's range builder), which
// fetches only the input bytes after P, plus the part of one body's prefix its CRC checkpoint
// does not cover.
// - Split bins have their layout fixed while preparing ("fixed"): the upload is tied to it.
// - A single-ZIP bin learns each entry's name and size from its response ("as-written"): each
//   entry is recorded as it starts, and a resume probes the files not reached yet (as the
//   preparer does) to lay out the rest.
import { createEntryNameDeduper, entryNameOf } from '@ap/contract';
import { binUploadParts, forgetBinUpload, markBinUploadNotResumable, recordBinPart, recordBinUpload, recordBlockDigests, recordEntries, type BinFileRow, type Db } from '@ap/db';
import { findFetchError, mapLimit, type Fetcher, type FileAccess } from '@ap/fetch';
import type { Logger } from '@ap/log';
import { ResumeRefused, type MultipartHooks, type ObjectInfo, type ObjectStore, type UploadedPart } from '@ap/storage';
import { layoutOfFiles, sliceRange, streamEtag, ZipSizer, type ZipEncryption, type ZipLayout } from '@ap/zip';
import type { BodyObserver } from './archive';
import { CrcStore } from './crc-store';
import { BlockHasher } from './encrypted-body';
import { LAYOUT_READER_DEFAULTS, LayoutReader, layoutInputsOf } from './layout-reader';

/** A bin's file as the packer loads it. */
export type BinFile = BinFileRow & { access?: FileAccess };

/**
 * How a bin's upload can be resumed; `id` (part size, and the layout digest for a fixed
 * layout) is stored with the upload, and a resume needs the same.
 */
export type UploadPlan =
  | { kind: 'fixed'; id: string; partSize: number; layout: ZipLayout; encryption: ZipEncryption | null }
  | { kind: 'as-written'; id: string; partSize: number; encryption: ZipEncryption | null };

/**
 * How the bin's upload resumes; null when it cannot: a deflate bin restarts from its first
 * byte (docs/archive-options.md: its bytes after a cut depend on compressed sizes before it,
 * and a compressor cannot resume mid-entry).
 */
export function uploadPlan(
  split: boolean,
  files: readonly BinFile[],
  mtime: Date,
  partSize: number,
  options: { encryption?: ZipEncryption | null; deflate?: boolean } = {},
): UploadPlan | null {
  if (options.deflate) return null;
  const encryption = options.encryption ?? null;
  if (!split) return { kind: 'as-written', partSize, id: `${partSize}/as-written${encryption ? '/aes-256' : ''}`, encryption };
  // Split bins: every name and size was settled while preparing.
  if (files.length === 0 || files.some((f) => f.size === null || f.entryName === null)) return null;
  const layout = layoutOfFiles(files, mtime, encryption);
  return { kind: 'fixed', layout, partSize, id: `${partSize}/${streamEtag(layout, files)}`, encryption };
}

/**
 * Records a fresh upload as it goes: the upload id (with the plan id), each stored part, the
 * entries as they start (as-written bins) and the CRC-32s a resume needs. A file left out (its
 * URL failed, fail_on_url_error false) or a body of unknown length (as-written) makes the
 * rest unrecordable: the record is dropped and nothing more is written.
 */
export class UploadRecorder implements BodyObserver, MultipartHooks {
  private valid = true;
  private uploadId: string | null = null;
  private entry = -1;
  private dataOffset = 0;
  private nextCheckpoint = 0;
  /** The archive so far, and the entries not yet in Postgres (as-written bins). */
  private readonly written: ZipSizer;
  private started: { position: number; name: string; size: number; etag: string | null; lastModified: string | null }[] = [];
  /** An encrypted entry's plaintext block digests, made as its body goes in. */
  private blocks: BlockHasher | null = null;
  /** DB writes in order: an entry is recorded before a part holding its bytes is. */
  private writes: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly crcStore: CrcStore,
    private readonly zipId: string,
    private readonly jobId: string,
    private readonly files: readonly BinFile[],
    private readonly plan: UploadPlan,
  ) {
    this.written = new ZipSizer(plan.encryption !== null);
  }

  start(index: number, entry: { name: string; size: number | null; etag: string | null; lastModified: string | null }): void {
    if (index !== this.entry + 1) this.invalidate();
    this.entry = index;
    if (!this.valid) return;
    if (this.plan.kind === 'fixed') this.dataOffset = this.plan.layout.entries[index]!.dataOffset;
    else {
      if (entry.size === null) return this.invalidate();
      const nameBytes = Buffer.byteLength(entry.name);
      this.dataOffset = this.written.nextDataOffset(nameBytes, entry.size);
      this.written.add(nameBytes, entry.size);
      this.started.push({ position: this.files[index]!.position, ...entry, size: entry.size });
      if (this.started.length >= 2000) void this.write(() => this.recordStarted());
    }
    this.nextCheckpoint = (Math.floor(this.dataOffset / this.plan.partSize) + 1) * this.plan.partSize;
    this.blocks = this.plan.encryption && entry.size !== null ? new BlockHasher(entry.size) : null;
  }

  skip(): void {
    this.invalidate();
  }

  progress(bytes: number, crc: number, chunk: Buffer): void {
    if (!this.valid) return;
    // An encrypted entry has no CRC (AE-2): a resume learns its MAC from the body instead, and
    // checks it against the digests of the blocks written (docs/archive-options.md#changed-origins).
    if (this.plan.encryption) return this.recordBlocks(chunk);
    const at = this.dataOffset + bytes;
    if (at < this.nextCheckpoint) return;
    // The first chunk boundary past a part boundary: any checkpoint of the body serves a
    // resume (one before P is extended by fetching up to P, one after it by hashing on).
    this.nextCheckpoint = (Math.floor(at / this.plan.partSize) + 1) * this.plan.partSize;
    this.crcStore.checkpoint(this.jobId, this.files[this.entry]!.position, { length: bytes, crc });
  }

  end(crc: number): void {
    if (this.valid && !this.plan.encryption) this.crcStore.crc(this.jobId, this.files[this.entry]!.position, crc);
  }

  private recordBlocks(chunk: Buffer): void {
    const done = this.blocks?.update(chunk) ?? [];
    if (done.length === 0) return;
    const position = this.files[this.entry]!.position;
    const generation = this.plan.encryption!.generationOf(this.entry);
    // In the write order: a block's digest is in Postgres before a part after it is recorded.
    void this.write(() => recordBlockDigests(this.db, this.jobId, position, generation, done));
  }

  onStart(uploadId: string): void {
    this.uploadId = uploadId;
    const uploadLayout = this.valid ? this.plan.id : null;
    void this.write(() => recordBinUpload(this.db, this.zipId, uploadId, uploadLayout));
  }

  onPart(uploadId: string, part: UploadedPart): void {
    if (!this.valid || uploadId !== this.uploadId) return;
    // The entries and CRCs before this part's end are in Postgres before the part is.
    void this.write(async () => {
      await this.crcStore.flush();
      await this.recordStarted();
      await recordBinPart(this.db, this.zipId, uploadId, part, this.plan.partSize);
    });
  }

  /** Resolves once every record asked for so far is written (or given up). */
  settled(): Promise<void> {
    return this.writes.then(() => undefined);
  }

  /** Entries started since the last call, in one statement (10,000 small files, one part). */
  private async recordStarted(): Promise<void> {
    const rows = this.started.splice(0);
    await recordEntries(
      this.db,
      this.jobId,
      rows.map((r) => ({ position: r.position, entryName: r.name, size: r.size, etag: r.etag, lastModified: r.lastModified })),
    );
  }

  private invalidate(): void {
    if (!this.valid) return;
    this.valid = false;
    void this.write(() => markBinUploadNotResumable(this.db, this.zipId));
  }

  private write(run: () => Promise<unknown>): Promise<void> {
    const next = this.writes.then(run);
    // A lost record only costs a resume; the upload itself goes on.
    this.writes = next.catch(() => undefined);
    return next.then(
      () => undefined,
      () => undefined,
    );
  }
}

/** Forgets a bin's recorded upload, and asks the store (when given) to drop its parts. */
export async function dropRecordedUpload(db: Db, store: ObjectStore | null, zip: { id: string; uploadId: string | null }, key: string): Promise<void> {
  if (!zip.uploadId) return;
  await store?.abortUpload(key, zip.uploadId);
  await forgetBinUpload(db, zip.id);
}

export interface ResumeDeps {
  db: Db;
  store: ObjectStore;
  fetcher: Fetcher;
  log: Logger;
}

/** A resume's reach: bodies fetched ahead (within the budget beside the parts), and probes at once. */
export interface ResumeTuning {
  fetchConcurrency: number;
  fetchBudgetBytes: number;
  probeConcurrency: number;
}

export interface ResumedBin {
  object: ObjectInfo;
  entries: { position: number; entryName: string; size: number }[];
}

/**
 * Continues the bin's recorded upload and completes it. Null when it cannot be continued (no
 * stored part, a file not reached yet has no known size, the store refused the upload, an
 * input failed or changed): the caller packs the bin from its start, where URL failures follow
 * the job's rules.
 */
export async function resumeUpload(
  deps: ResumeDeps,
  bin: { zipId: string; jobId: string; key: string; uploadId: string; mtime: Date; archiveLimit: number },
  files: readonly BinFile[],
  plan: UploadPlan,
  tuning: ResumeTuning,
  { signal, progress }: { signal: AbortSignal; progress?: { add(bytes: number): void } },
): Promise<ResumedBin | null> {
  const { db, store, log } = deps;
  const rows = await binUploadParts(db, bin.zipId, bin.uploadId);
  if (rows.length === 0) return null;
  const laid = plan.kind === 'fixed' ? { layout: plan.layout, inputs: files, recordedEnd: plan.layout.totalSize } : await layOutAsWritten(deps, tuning.probeConcurrency, files, bin.mtime, signal, plan.encryption);
  if (!laid || laid.layout.totalSize > bin.archiveLimit) return null;
  const { layout } = laid;
  const total = layout.totalSize;
  // The stored prefix: parts 1..k, each a full part except one that ends the archive.
  const stored: UploadedPart[] = [];
  let resumeAt = 0;
  for (const row of rows) {
    const size = Number(row.size);
    if (row.partNumber !== stored.length + 1 || Number(row.offset) !== resumeAt) break;
    if (size !== plan.partSize && resumeAt + size !== total) break;
    stored.push({ partNumber: row.partNumber, etag: row.etag, size });
    resumeAt += size;
  }
  if (stored.length === 0 || resumeAt > laid.recordedEnd) return null;

  const { inputs, crcs, macs } = layoutInputsOf(laid.inputs);
  const crcStore = new CrcStore(db, log);
  const reader = new LayoutReader(deps.fetcher, {
    ...LAYOUT_READER_DEFAULTS,
    checkpointEvery: plan.partSize,
    fetchAhead: { concurrency: tuning.fetchConcurrency, budgetBytes: tuning.fetchBudgetBytes },
  }, crcStore, bin.jobId, layout, inputs, crcs, signal, macs);
  const slices = resumeAt < total ? sliceRange(layout, resumeAt, total - 1) : [];
  log.info({ jobId: bin.jobId, zipId: bin.zipId, parts: stored.length, resumeAt }, 'resuming the bin upload');
  // Pulled only once the store has confirmed the upload, where it can.
  // The stored parts count as written; the rest as it leaves for the upload.
  const body = async function* () {
    await reader.prepare(slices);
    progress?.add(resumeAt);
    for await (const chunk of reader.bytes(slices)) {
      progress?.add(chunk.length);
      yield chunk;
    }
  };
  try {
    const object = await store.resumeUpload(bin.key, {
      uploadId: bin.uploadId,
      partSize: plan.partSize,
      stored,
      body: body(),
      signal,
      onPart: async (part) => {
        await crcStore.flush();
        await recordBinPart(db, bin.zipId, bin.uploadId, part, plan.partSize).catch(() => undefined);
      },
    });
    return { object, entries: laid.inputs.map((f, i) => ({ position: f.position, entryName: layout.entries[i]!.name.toString('utf8'), size: Number(f.size) })) };
  } catch (err) {
    if (signal.aborted) throw err;
    const fetchError = findFetchError(err);
    if (!(err instanceof ResumeRefused) && !fetchError) throw err;
    log.warn({ jobId: bin.jobId, zipId: bin.zipId, reason: fetchError ? fetchError.userMessage : (err as Error).message }, 'bin upload not resumable; packing it from the start');
    return null;
  } finally {
    await reader.close();
  }
}

/**
 * The layout of an as-written bin: the entries recorded as they started (names and sizes from
 * their responses), then the files not reached yet, probed and named as the preparer would.
 * `recordedEnd` is where the recorded entries end: stored parts past it cannot be trusted.
 */
export async function layOutAsWritten(
  deps: Pick<ResumeDeps, 'fetcher'>,
  probeConcurrency: number,
  files: readonly BinFile[],
  mtime: Date,
  signal: AbortSignal,
  encryption: ZipEncryption | null,
): Promise<{ layout: ZipLayout; inputs: BinFile[]; recordedEnd: number } | null> {
  let recorded = 0;
  while (recorded < files.length && files[recorded]!.entryName !== null && files[recorded]!.size !== null) recorded++;
  const names = createEntryNameDeduper();
  for (const f of files.slice(0, recorded)) if (names.take(f.entryName!) !== f.entryName) return null;
  const probed = await mapLimit(files.slice(recorded), probeConcurrency, (f) => deps.fetcher.probe(f.url, { signal, ...(f.access ? { access: f.access } : {}) }));
  const rest: BinFile[] = [];
  for (const [i, p] of probed.entries()) {
    if (!p.ok || p.size === null) return null;
    const f = files[recorded + i]!;
    const entryName = names.take(entryNameOf(f, p));
    rest.push({ ...f, entryName, size: BigInt(p.size), etag: p.etag ?? null, lastModified: p.lastModified ?? null, crc32: null, crcPrefix: null, crcPrefixLen: null, aesMac: null });
  }
  const inputs = [...files.slice(0, recorded), ...rest];
  const layout = layoutOfFiles(inputs, mtime, encryption);
  const recordedEnd = recorded === 0 ? 0 : (layout.entries[recorded]?.offset ?? layout.centralOffset);
  return { layout, inputs, recordedEnd };
}
