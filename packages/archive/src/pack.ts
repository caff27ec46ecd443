// A bin into the store: the one way a stored bin's bytes go from its origins to its object.
// The packer holds the lease and settles the outcome; everything between (resume or fresh
// start, the ZIP output, the multipart upload, its resume records, progress, the CRC store)
// is here.
import { pipeline, type Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { ARCHIVE_CONTENT_TYPES, type ArchiveFormat } from '@ap/contract';
import { recordFileErrors, resetBinFilesForRepack, type Db } from '@ap/db';
import { freeChunk, type Fetcher } from '@ap/fetch';
import type { Logger } from '@ap/log';
import { partBufferBytes, partSizeFor, type ObjectInfo, type ObjectStore } from '@ap/storage';
import { newZipOutput, TarOutput, type ZipEncryption, type ZipOutput } from '@ap/zip';
import { writeArchive, type ArchiveResult } from './archive';
import { CrcStore } from './crc-store';
import { dropRecordedUpload, resumeUpload, uploadPlan, UploadRecorder, type BinFile, type UploadPlan } from './resume';

/** What the engine needs of its service: no configuration, no queue. */
export interface PackDeps {
  db: Db;
  store: ObjectStore;
  fetcher: Fetcher;
  log: Logger;
}

/** How hard one bin may pull: the packer's settings, as the engine reads them. */
export interface PackTuning {
  /** Bodies fetched at once ahead of the one being written. */
  fetchConcurrency: number;
  /** The memory of the archive being written: the upload's part buffers plus the bodies fetched ahead. */
  fetchBudgetBytes: number;
  /** Probes at once (a single-ZIP bin's resume lays out the files not reached yet). */
  probeConcurrency: number;
}

/** Where the bytes of the ZIP written so far are reported (the bin's `bytes_done`). */
export interface ProgressReport {
  add(bytes: number): void;
}

export interface BinToPack {
  zipId: string;
  jobId: string;
  /** The object's key: fixed per bin, so a second writer writes the same bytes to the same place. */
  key: string;
  mtime: Date;
  failOnUrlError: boolean;
  /** A bin of a split job: its layout was fixed while preparing. */
  split: boolean;
  /** The bin's predicted size, when known (it sizes the upload's parts). */
  plannedSize: number | null;
  /** The plan's per-archive limit (infinite for a split job's bins). */
  archiveLimit: number;
  /** Its files, in order; those an earlier attempt recorded as failed are left out. */
  files: BinFile[];
  encryption: ZipEncryption | null;
  deflateLevel: number | null;
  /** The archive's format (default zip); a tar.gz is gzipped whole at `gzipLevel`. */
  format?: ArchiveFormat;
  gzipLevel?: number | null;
  /** End with manifest.csv, listing also these URLs left out before packing. */
  manifest?: { leftOut: { url: string; error: string }[] } | null;
  /** The upload an earlier attempt recorded; `mayBeInUse`: its writer may still run. */
  recordedUpload: { id: string | null; layout: string | null; mayBeInUse: boolean };
}

export interface PackedBin {
  object: ObjectInfo;
  packaged: ArchiveResult['packaged'];
  urlErrors: ArchiveResult['urlErrors'];
}

/**
 * Packs the bin into its object and returns what went in. It continues the recorded upload
 * when its plan still applies (resume.ts), else starts afresh; `signal` stops it (the lease
 * lost, the packer stopping) with the signal's reason.
 */
export async function packBinIntoStore(
  deps: PackDeps,
  bin: BinToPack,
  tuning: PackTuning,
  { signal, progress }: { signal: AbortSignal; progress: ProgressReport },
): Promise<PackedBin> {
  const partSize = partSizeFor(bin.plannedSize ?? bin.archiveLimit);
  // A tar bin, or one ending with a manifest, starts over when retried: resume records hold a
  // ZIP's entries from its files alone (docs/archive-options.md#formats-and-contents).
  const plan = (bin.format ?? 'zip') === 'zip' && !bin.manifest ? uploadPlan(bin.split, bin.files, bin.mtime, partSize, { encryption: bin.encryption, deflate: bin.deflateLevel !== null }) : null;
  const fetchBudget = bodyBudgetBesideParts(tuning.fetchBudgetBytes, partSize);
  const upload = bin.recordedUpload;
  if (plan && upload.id && upload.layout === plan.id) {
    const resumeTuning = { fetchConcurrency: tuning.fetchConcurrency, fetchBudgetBytes: fetchBudget, probeConcurrency: tuning.probeConcurrency };
    const resumed = await resumeUpload(deps, { ...bin, uploadId: upload.id }, bin.files, plan, resumeTuning, { signal, progress });
    if (resumed) return { object: resumed.object, urlErrors: [], packaged: resumed.entries };
  }
  // An upload left by a worker that may still be running (a duplicate delivery) is only
  // forgotten; the bucket's lifecycle rule removes abandoned parts.
  await dropRecordedUpload(deps.db, upload.mayBeInUse ? null : deps.store, { id: bin.zipId, uploadId: upload.id }, bin.key);
  return packFromStart(deps, bin, { partSize, plan, fetchBudget, fetchConcurrency: tuning.fetchConcurrency }, { signal, progress });
}

/**
 * Bytes of bodies a bin may fetch ahead. The fetch budget is the memory of the archive being
 * written (spec "Fetching many files"): the upload's part buffers are in it, the bodies get the
 * rest, but never less than a quarter of it (parts of 52 MiB, for a 500 GB archive, would
 * otherwise leave nothing). With the defaults: 64 MiB - 2 x 8 or 10 MiB parts = 48 or 44 MiB.
 */
export function bodyBudgetBesideParts(fetchBudget: number, partSize: number): number {
  return Math.max(fetchBudget - partBufferBytes(partSize), Math.floor(fetchBudget / 4));
}

/** Streams the bin's files through the ZIP writer into a new multipart upload, recorded when resumable. */
async function packFromStart(
  deps: PackDeps,
  bin: BinToPack,
  upload: { partSize: number; plan: UploadPlan | null; fetchBudget: number; fetchConcurrency: number },
  { signal, progress }: { signal: AbortSignal; progress: ProgressReport },
): Promise<PackedBin> {
  const { db, fetcher, store, log } = deps;
  const { plan } = upload;
  // What an earlier attempt recorded for a resume no longer applies. A single-ZIP bin's names
  // and sizes come from the responses, not from those records.
  const asWritten = plan?.kind === 'as-written';
  await resetBinFilesForRepack(db, bin.zipId, asWritten);
  const files = asWritten ? bin.files.map((f) => ({ ...f, entryName: null, size: null })) : bin.files;
  const crcStore = new CrcStore(db, log);
  const recorder = plan ? new UploadRecorder(db, crcStore, bin.zipId, bin.jobId, files, plan) : undefined;
  const format = bin.format ?? 'zip';
  const zipfile: ZipOutput = format === 'zip' ? newZipOutput(bin.encryption) : new TarOutput(bin.mtime);
  // Stops the fetches when the upload fails, as well as when the caller stops the bin.
  const abort = new AbortController();
  const stop = () => abort.abort(signal.reason);
  signal.addEventListener('abort', stop, { once: true });
  if (signal.aborted) stop();
  // The ZIP's bytes are counted as they leave for the upload; a listener, not a stream in
  // between, so no chunk waits in another buffer.
  const written = zipfile.outputStream as unknown as Readable;
  // A tar.gz is the tar gzipped whole (a failure of either ends the other, and the upload).
  const output = format === 'tar.gz' ? pipeline(written, createGzip({ level: bin.gzipLevel ?? 6 }), () => undefined) : written;
  output.on('data', (chunk: Buffer) => progress.add(chunk.length));
  const uploaded = store.upload(bin.key, output, {
    contentType: ARCHIVE_CONTENT_TYPES[format],
    partSize: upload.partSize,
    signal: abort.signal,
    multipart: recorder,
    // Nothing uses the archive's chunks once they are in a part: the bodies fetched ahead
    // leave the packer's memory as they are uploaded, not at V8's next full GC.
    freeReadChunk: freeChunk,
  });
  // An upload that fails stops the fetches at once (instead of waiting on a stalled pipe).
  uploaded.catch((err: unknown) => abort.abort(err));
  try {
    const { packaged, urlErrors } = await writeArchive(zipfile, files, {
      fetcher,
      mtime: bin.mtime,
      failOnUrlError: bin.failOnUrlError,
      archiveLimit: bin.archiveLimit,
      deflateLevel: bin.deflateLevel,
      aes: bin.encryption !== null,
      tar: format !== 'zip',
      manifest: bin.manifest ?? null,
      signal: abort.signal,
      observer: recorder,
      fetchAhead: { concurrency: upload.fetchConcurrency, budgetBytes: upload.fetchBudget },
      // The entry's bytes are already in the archive: the bin must start over. With
      // fail_on_url_error false the URL is recorded as failed first, so the next attempt skips it.
      onBrokenBody: async (file, error) => {
        await recordFileErrors(db, bin.jobId, [{ position: file.position, error }]);
      },
    });
    zipfile.end();
    const object = await uploaded;
    // No record may land after the bin's completion clears them.
    await recorder?.settled();
    return { object, packaged, urlErrors };
  } catch (err) {
    abort.abort(err);
    written.destroy();
    output.destroy();
    await uploaded.catch(() => undefined);
    // The upload's id is on the bin's row before the bin is failed (and its upload aborted).
    await recorder?.settled();
    throw err;
  } finally {
    signal.removeEventListener('abort', stop);
    await crcStore.flush();
  }
}
