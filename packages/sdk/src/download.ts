// Downloads one ZIP of a job to a file, resuming a partial file: the bytes already there are
// asked for again only if the ZIP changed (Range + If-Range with the ETag they came with, kept
// beside the file in `<file>.resume.json` until the download is complete), then verifies it.
// A partial file without that record is continued from its size and checked entry by entry.
import { createWriteStream } from 'node:fs';
import { readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ZipEntry } from './client';
import { verifyZip, type ZipCheck } from './verify';
import { verifyTar } from './verify-tar';

export interface DownloadProgress {
  /** Bytes of the ZIP on disk so far (resumed bytes included). */
  bytes: number;
  /** Total size when known. */
  total: number | null;
}

export interface DownloadOptions {
  /** Directory to write `<dir>/<zip filename>` into. */
  dir: string;
  signal?: AbortSignal;
  onProgress?: (progress: DownloadProgress) => void;
  /** Also read every entry and check its CRC-32 (slower; the default checks the directory and sizes). */
  crc?: boolean;
  fetch?: typeof fetch;
}

export interface DownloadResult {
  path: string;
  bytes: number;
  /** Bytes already on disk that were kept (0 when started from scratch). */
  resumedFrom: number;
  /** Bytes received in this call. */
  received: number;
  /** True when the file was already complete (nothing fetched). */
  alreadyComplete: boolean;
  check: ZipCheck;
}

export class DownloadError extends Error {
  override name = 'DownloadError';
  constructor(message: string, readonly status?: number, readonly code?: string) {
    super(message);
  }
}

interface ResumeState {
  zip_id: string;
  etag: string;
  size: number | null;
}

const resumeFile = (file: string) => `${file}.resume.json`;

async function readState(file: string): Promise<ResumeState | null> {
  try {
    return JSON.parse(await readFile(resumeFile(file), 'utf8')) as ResumeState;
  } catch {
    return null;
  }
}

/** A ZIP, tar or tar.gz (by its name, as the API gives it per format), checked without trusting it. */
function verifyArchive(file: string, options: { expectedSize?: number | null; crc?: boolean }): Promise<ZipCheck> {
  if (/\.tar$/i.test(file)) return verifyTar(file, options);
  if (/\.(tar\.gz|tar_\d+\.gz|tgz)$/i.test(file)) return verifyTar(file, { ...options, gzip: true });
  return verifyZip(file, options);
}

/** A name the API gave, as a file name in `dir` (no directory parts). */
function safeName(filename: string): string {
  const base = path.basename(filename.replace(/\\/g, '/'));
  if (!base || base === '.' || base === '..') throw new DownloadError(`unusable file name ${JSON.stringify(filename)}`);
  return base;
}

export async function downloadZip(zip: Pick<ZipEntry, 'id' | 'filename' | 'size' | 'download_url'>, options: DownloadOptions): Promise<DownloadResult> {
  if (!zip.download_url) throw new DownloadError(`ZIP ${zip.filename} has no download link (status not completed, or the job expired)`);
  const file = path.join(options.dir, safeName(zip.filename));
  const have = await stat(file).then((s) => s.size, () => 0);
  const state = await readState(file);

  // A file without a resume record is a finished download: keep it if it checks out.
  if (have > 0 && !state && (zip.size === null || have === zip.size)) {
    const check = await verifyArchive(file, { expectedSize: zip.size, crc: options.crc }).catch(() => null);
    if (check) return { path: file, bytes: have, resumedFrom: have, received: 0, alreadyComplete: true, check };
  }
  const recorded = have > 0 && state !== null && state.zip_id === zip.id && (zip.size === null || have < zip.size);
  // A shorter file with no record (cut by hand, or by another tool) is continued too, but its
  // bytes have no validator: every entry's CRC-32 is checked, and a mismatch starts over.
  const unrecorded = have > 0 && state === null && zip.size !== null && have < zip.size;
  const start = recorded || unrecorded ? have : 0;

  const headers: Record<string, string> = {};
  if (start > 0) headers.range = `bytes=${start}-`;
  if (recorded) headers['if-range'] = state.etag;
  const res = await (options.fetch ?? fetch)(zip.download_url, { headers, signal: options.signal });
  if (res.status !== 200 && res.status !== 206) {
    const text = await res.text().catch(() => '');
    let error: { code?: string; message?: string } | undefined;
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error;
    } catch {
      // not JSON
    }
    throw new DownloadError(`download of ${zip.filename} refused: HTTP ${res.status}${error ? ` ${error.code}: ${error.message}` : ''}`, res.status, error?.code);
  }
  let offset = 0;
  if (res.status === 206) {
    const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(res.headers.get('content-range') ?? '');
    if (!range || Number(range[1]) !== start) throw new DownloadError(`unexpected Content-Range ${res.headers.get('content-range')} for a resume at byte ${start}`);
    offset = start;
  }
  const total = res.status === 206 ? Number(/\/(\d+)$/.exec(res.headers.get('content-range')!)?.[1] ?? Number.NaN) : Number(res.headers.get('content-length') ?? Number.NaN);
  const size = Number.isFinite(total) ? total : zip.size;
  const etag = res.headers.get('etag');
  if (offset === 0) await truncate(file, 0).catch(() => undefined);
  // Resumable only with a strong validator to send back in If-Range.
  if (etag && !etag.startsWith('W/')) await writeFile(resumeFile(file), JSON.stringify({ zip_id: zip.id, etag, size } satisfies ResumeState));
  else await rm(resumeFile(file), { force: true });

  let written = offset;
  options.onProgress?.({ bytes: written, total: size });
  const counter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      written += chunk.length;
      options.onProgress?.({ bytes: written, total: size });
      done(null, chunk);
    },
  });
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  // Bytes that arrived are on disk even when interrupted: the write stream is flushed and closed.
  await pipeline(body, counter, createWriteStream(file, { flags: offset > 0 ? 'a' : 'w' }), { signal: options.signal });
  if (size !== null && written !== size) throw new DownloadError(`download of ${zip.filename} ended at ${written} of ${size} bytes; run again to resume`);

  let check: ZipCheck;
  try {
    check = await verifyArchive(file, { expectedSize: size, crc: options.crc || (unrecorded && offset > 0) });
  } catch (err) {
    if (!(unrecorded && offset > 0)) throw err;
    await rm(file, { force: true });
    await rm(resumeFile(file), { force: true });
    return downloadZip(zip, options);
  }
  await rm(resumeFile(file), { force: true });
  return { path: file, bytes: written, resumedFrom: offset, received: written - offset, alreadyComplete: false, check };
}
