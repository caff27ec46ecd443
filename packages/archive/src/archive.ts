import { performance } from 'node:perf_hooks';
import yazl from 'yazl';
import { createEntryNameDeduper } from '@ap/contract';
import { FetchError, type Fetcher, type OpenedBody } from '@ap/fetch';
import { entryNameOf } from '@ap/jobs';
import { YAZL_ENTRY_OPTIONS, ZipSizer } from '@ap/zip';

export const ARCHIVE_TOO_LARGE = "archive exceeds the plan's per-archive limit";

/**
 * The next file's request starts when the current body has less than this left to stream, and
 * no more than `prefetchMaxAheadMs` of it at the rate it streams: a response opened ahead is not
 * read until its turn, and a quiet connection meets the idle timeout (30 s) or the origin's own.
 */
const PREFETCH_WHEN_REMAINING = 8 * 1024 * 1024;
const PREFETCH_MAX_AHEAD_MS = 5_000;

/** A failure that retrying the bin cannot fix: the bin fails at once (the packer tells its queue so). */
export class BinFailure extends Error {}

/**
 * The bin failed because of its URLs (one with fail_on_url_error true, or all of them): the
 * failures are reported under their URLs (job_files), and the bin itself needs no message.
 */
export class UrlFailure extends BinFailure {
  constructor(readonly failures: { position: number; error: string }[]) {
    super(failures.map((f) => f.error).join('; '));
  }
}

export interface ArchiveFile {
  position: number;
  url: string;
  filename: string | null;
  /** Probed size (split jobs); null when the body's own length is to be trusted. */
  size: bigint | null;
  /** Name chosen while preparing (split jobs); derived from the response otherwise. */
  entryName: string | null;
}

export interface ArchiveOptions {
  fetcher: Fetcher;
  mtime: Date;
  failOnUrlError: boolean;
  archiveLimit: number;
  signal: AbortSignal;
  /** A body broke after its first bytes were written, with fail_on_url_error false. */
  onBrokenBody(file: ArchiveFile, error: string): Promise<void>;
  /** Sees each body as it streams (the packer's resume checkpoints). */
  observer?: BodyObserver;
  /** At most this long ahead of its turn is the next file's request opened. Default 5 s. */
  prefetchMaxAheadMs?: number;
}

/** Follows the bodies as they go into the archive, with yazl's running CRC-32. */
export interface BodyObserver {
  /** The body of `files[index]` starts, as this entry (size null: not known before it ends). */
  start(index: number, entry: { name: string; size: number | null; etag: string | null; lastModified: string | null }): void;
  /** `files[index]` is left out: its URL failed before any byte (fail_on_url_error false). */
  skip(index: number): void;
  /** A chunk of it went into the archive: the body's bytes so far and their CRC-32. */
  progress(bytes: number, crc: number): void;
  /** It ended whole. */
  end(crc: number): void;
}

export interface ArchiveResult {
  packaged: { position: number; entryName: string; size: number }[];
  urlErrors: { position: number; error: string }[];
}

/**
 * Streams the files, in order, into `zipfile` (which the caller ends and drains). The next
 * file's request is opened while the current body still has a few MiB to go, so the output
 * never waits on a connection setup between entries.
 */
export async function writeArchive(zipfile: yazl.ZipFile, files: readonly ArchiveFile[], options: ArchiveOptions): Promise<ArchiveResult> {
  const { fetcher, signal } = options;
  const packaged: ArchiveResult['packaged'] = [];
  const urlErrors: ArchiveResult['urlErrors'] = [];
  const names = createEntryNameDeduper();
  // The archive's exact size so far: the plan's per-archive limit is enforced before each body.
  const sizer = new ZipSizer();

  const open = (file: ArchiveFile): Promise<OpenedBody | FetchError> =>
    fetcher
      .openBody(file.url, { expectedSize: file.size === null ? undefined : Number(file.size), signal })
      .catch((err: unknown) => (err instanceof FetchError ? err : Promise.reject(err)));

  // Bytes per millisecond of the last body, to place a small body's successor before its first chunk.
  const pace = { bytesPerMs: null as number | null };
  let next: Promise<OpenedBody | FetchError> | null = files.length ? open(files[0]!) : null;
  try {
    for (let i = 0; i < files.length; i++) {
      const file = files[i]!;
      let opened = await next!;
      next = null;
      if (signal.aborted) throw signal.reason;
      // A response opened ahead can die unread while it waits for its turn (our idle timeout
      // or the origin closes the quiet connection, behind a slow body): it is opened again.
      if (!(opened instanceof FetchError) && opened.stream.errored) opened = await open(file);
      const startNext = () => {
        if (next === null && i + 1 < files.length) next = open(files[i + 1]!);
      };
      if (opened instanceof FetchError) {
        if (options.failOnUrlError) throw new UrlFailure([{ position: file.position, error: opened.userMessage }]);
        urlErrors.push({ position: file.position, error: opened.userMessage });
        options.observer?.skip(i);
        startNext();
        continue;
      }
      const size = file.size !== null ? Number(file.size) : opened.size;
      const entryName = names.take(file.entryName ?? entryNameOf(file, opened));
      if (size !== null && sizer.totalWith(Buffer.byteLength(entryName), size) > options.archiveLimit) {
        opened.stream.destroy();
        throw new BinFailure(ARCHIVE_TOO_LARGE);
      }
      options.observer?.start(i, { name: entryName, size, etag: opened.etag ?? null, lastModified: opened.lastModified ?? null });
      const body = await streamEntry(zipfile, opened, entryName, size, options.mtime, { startNext, maxAheadMs: options.prefetchMaxAheadMs ?? PREFETCH_MAX_AHEAD_MS, pace }, options.observer);
      if (signal.aborted) throw signal.reason;
      if (body.error) {
        if (options.failOnUrlError) throw new UrlFailure([{ position: file.position, error: body.error }]);
        await options.onBrokenBody(file, body.error);
        throw new Error(`${file.url}: ${body.error}`);
      }
      sizer.add(Buffer.byteLength(entryName), body.bytes);
      if (sizer.total() > options.archiveLimit) throw new BinFailure(ARCHIVE_TOO_LARGE);
      packaged.push({ position: file.position, entryName, size: body.bytes });
    }
  } finally {
    // A request opened ahead for a file the archive did not reach (it failed first): its
    // response is dropped, so its socket is freed rather than left to time out unread.
    const unread = next as Promise<OpenedBody | FetchError> | null;
    if (unread) void unread.then((o) => (o instanceof FetchError ? undefined : o.stream.destroy()), () => undefined);
  }
  if (packaged.length === 0) throw new UrlFailure(urlErrors);
  return { packaged, urlErrors };
}

/**
 * Adds one body to the archive and resolves when it has streamed through, with the byte count
 * or the error that cut it short. Starts the next request once little is left of this one.
 */
function streamEntry(
  zipfile: yazl.ZipFile,
  opened: OpenedBody,
  entryName: string,
  size: number | null,
  mtime: Date,
  prefetch: { startNext: () => void; maxAheadMs: number; pace: { bytesPerMs: number | null } },
  observer: BodyObserver | undefined,
): Promise<{ bytes: number; error: string | null }> {
  return new Promise((resolve) => {
    const { startNext, maxAheadMs, pace } = prefetch;
    const stream = opened.stream;
    let bytes = 0;
    let settled = false;
    // Whether `remaining` bytes are close enough to the end, by size and, at the pace bodies
    // stream, by time.
    const nearEnd = (remaining: number) =>
      remaining <= PREFETCH_WHEN_REMAINING && pace.bytesPerMs !== null && remaining <= pace.bytesPerMs * maxAheadMs;
    const finish = (error: string | null) => {
      if (settled) return;
      settled = true;
      startNext();
      resolve({ bytes, error });
    };
    const failed = (err: unknown) => finish(err instanceof FetchError ? err.userMessage : (err as Error).message);
    // An error emitted before this listener was added is not emitted again.
    if (stream.errored) return failed(stream.errored);
    stream.once('error', failed);
    if (size !== null && nearEnd(size)) startNext();
    // Lazy: yazl asks for the stream when the entry's turn comes; the byte counter is attached
    // right after yazl's pipe, so no chunk can flow before yazl listens.
    zipfile.addReadStreamLazy(entryName, YAZL_ENTRY_OPTIONS(mtime, size), (cb) => {
      cb(null, stream);
      // yazl (patched) keeps the entry's running CRC-32 on it; this entry is its last.
      const entries = (zipfile as unknown as { entries: { crc32: number }[] }).entries;
      const entry = entries[entries.length - 1]!;
      const startedAt = performance.now();
      stream.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        observer?.progress(bytes, entry.crc32);
        if (size !== null && size - bytes <= PREFETCH_WHEN_REMAINING) {
          pace.bytesPerMs = bytes / Math.max(performance.now() - startedAt, 0.001);
          if (nearEnd(size - bytes)) startNext();
        }
      });
      stream.once('end', () => {
        // yazl's own 'end' listener ran first and set the final CRC.
        observer?.end(entry.crc32 >>> 0);
        finish(null);
      });
    });
  });
}
