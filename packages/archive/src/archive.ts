import { createHash, type Hash } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { Readable } from 'node:stream';
import { ARCHIVE_TOO_LARGE, createEntryNameDeduper, entryNameOf, MANIFEST_ENTRY_NAME, manifestCsv, type ManifestRow } from '@ap/contract';
import { FetchAhead, FetchError, wordedError, type Fetcher, type FetchAheadOptions, type FileAccess, type OpenedBody } from '@ap/fetch';
import { ENTRY_OPTIONS, TarSizer, ZipSizer, type ZipOutput } from '@ap/zip';
import { hostOf } from './host-of';
import { spillBody } from './spill';

export { ARCHIVE_TOO_LARGE };

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
  /** Its request headers or source credentials. */
  access?: FileAccess;
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
  /** Connections and memory budget for fetching ahead (defaults: 8, 64 MiB). */
  fetchAhead?: FetchAheadOptions;
  /** Deflate at this level (zlib's raw deflate), or null to store. */
  deflateLevel?: number | null;
  /** Every entry is WinZip AES-256 encrypted: sizes grow by its framing. */
  aes?: boolean;
  /** The writer is a TarOutput: sizes are a tar's, and a body of unknown length is spilled to learn it first. */
  tar?: boolean;
  /** End the archive with manifest.csv; `leftOut`: URLs left out before packing (listed after this archive's own). */
  manifest?: { leftOut: { url: string; error: string }[] } | null;
  /** Sees the scheduler (benches and tests read its peak buffered bytes). */
  onFetchAhead?(ahead: FetchAhead<OpenedBody | FetchError>): void;
}

/** Follows the bodies as they go into the archive, with the writer's running CRC-32. */
export interface BodyObserver {
  /** The body of `files[index]` starts, as this entry (size null: not known before it ends). */
  start(index: number, entry: { name: string; size: number | null; etag: string | null; lastModified: string | null }): void;
  /** `files[index]` is left out: its URL failed before any byte (fail_on_url_error false). */
  skip(index: number): void;
  /** A chunk of it went into the archive: the body's bytes so far, their CRC-32, and the chunk. */
  progress(bytes: number, crc: number, chunk: Buffer): void;
  /** It ended whole. */
  end(crc: number): void;
}

export interface ArchiveResult {
  packaged: { position: number; entryName: string; size: number }[];
  urlErrors: { position: number; error: string }[];
}

/**
 * Streams the files, in order, into `zipfile` (which the caller ends and drains). Their bodies
 * are fetched ahead (FetchAhead: several requests at once within a memory budget), so the
 * output waits on neither a round trip per file nor one connection's pace between entries.
 */
export async function writeArchive(zipfile: ZipOutput, files: readonly ArchiveFile[], options: ArchiveOptions): Promise<ArchiveResult> {
  const { fetcher, signal } = options;
  // Every request in flight listens on the signal: more than Node's default 10 at once is normal here.
  setMaxListeners(0, signal);
  const packaged: ArchiveResult['packaged'] = [];
  const urlErrors: ArchiveResult['urlErrors'] = [];
  const names = createEntryNameDeduper();
  const manifestRows: ManifestRow[] = [];
  // The archive's exact size so far: the plan's per-archive limit is enforced before each body.
  const sizer = archiveSizer(options);

  const ahead = new FetchAhead<OpenedBody | FetchError>(
    files.map((file) => ({
      size: file.size === null ? null : Number(file.size),
      host: hostOf(file.url),
      open: () =>
        fetcher
          .openBody(file.url, { expectedSize: file.size === null ? undefined : Number(file.size), signal, ...(file.access ? { access: file.access } : {}) })
          .catch((err: unknown) => (err instanceof FetchError ? err : Promise.reject(err))),
    })),
    (opened) => (opened instanceof FetchError ? null : opened.stream),
    { hosts: fetcher.hosts, spill: fetcher.spill, ...options.fetchAhead },
  );
  options.onFetchAhead?.(ahead);
  try {
    for (let i = 0; i < files.length; i++) {
      const file = files[i]!;
      let opened = await ahead.take(i);
      if (signal.aborted) throw signal.reason;
      // A body that died for good while it waited its turn (body.ts continues what can be
      // continued): no byte of it is in the archive yet, so it fails as its URL.
      if (!(opened instanceof FetchError) && opened.stream.errored) {
        const error = opened.stream.errored;
        opened = error instanceof FetchError ? error : new FetchError('other', (error as Error).message, { retryable: false });
      }
      if (opened instanceof FetchError) {
        if (options.failOnUrlError) throw new UrlFailure([{ position: file.position, error: opened.userMessage }]);
        urlErrors.push({ position: file.position, error: opened.userMessage });
        options.observer?.skip(i);
        continue;
      }
      let size = file.size !== null ? Number(file.size) : opened.size;
      const entryName = names.take(file.entryName ?? entryNameOf(file, opened));
      if (size === null && options.tar) {
        const spilled = await spillBody(opened.stream, options.archiveLimit - sizer.totalWith(entryName, 0), signal);
        if (signal.aborted) throw signal.reason;
        if ('tooLarge' in spilled) throw new BinFailure(ARCHIVE_TOO_LARGE);
        if ('error' in spilled) {
          const error = spilled.error instanceof FetchError ? spilled.error.userMessage : (spilled.error as Error).message;
          if (options.failOnUrlError) throw new UrlFailure([{ position: file.position, error }]);
          urlErrors.push({ position: file.position, error });
          options.observer?.skip(i);
          continue;
        }
        opened = { ...opened, stream: spilled.stream, size: spilled.size };
        size = spilled.size;
      }
      if (size !== null && sizer.totalWith(entryName, size) > options.archiveLimit) {
        opened.stream.destroy();
        throw new BinFailure(ARCHIVE_TOO_LARGE);
      }
      options.observer?.start(i, { name: entryName, size, etag: opened.etag ?? null, lastModified: opened.lastModified ?? null });
      // A body of unknown length is stopped where the archive would pass the plan's limit.
      const maxBytes = size === null ? options.archiveLimit - sizer.totalWith(entryName, 0, false) : null;
      const hash = options.manifest ? createHash('sha256') : null;
      const body = await streamEntry(zipfile, opened, entryName, size, { mtime: options.mtime, deflateLevel: options.deflateLevel ?? null, hash }, options.observer, maxBytes);
      if (signal.aborted) throw signal.reason;
      if (body.tooLarge) throw new BinFailure(ARCHIVE_TOO_LARGE);
      if (body.error) {
        if (options.failOnUrlError) throw new UrlFailure([{ position: file.position, error: body.error }]);
        await options.onBrokenBody(file, body.error);
        throw new Error(`${file.url}: ${body.error}`);
      }
      sizer.add(entryName, body.bytes, size !== null);
      if (sizer.total() > options.archiveLimit) throw new BinFailure(ARCHIVE_TOO_LARGE);
      packaged.push({ position: file.position, entryName, size: body.bytes });
      if (hash) manifestRows.push({ name: entryName, size: body.bytes, sha256: hash.digest('hex'), url: file.url });
    }
    if (options.manifest && packaged.length > 0) {
      const errorOf = new Map(urlErrors.map((e) => [e.position, e.error]));
      const leftOut = files.filter((f) => errorOf.has(f.position)).map((f) => ({ url: f.url, error: errorOf.get(f.position)! }));
      const csv = manifestCsv([...manifestRows, ...leftOut, ...options.manifest.leftOut]);
      const name = names.take(MANIFEST_ENTRY_NAME);
      if (sizer.totalWith(name, csv.length) > options.archiveLimit) throw new BinFailure(ARCHIVE_TOO_LARGE);
      const opened = { stream: Readable.from([csv]), size: csv.length } as unknown as OpenedBody;
      const written = await streamEntry(zipfile, opened, name, csv.length, { mtime: options.mtime, deflateLevel: options.deflateLevel ?? null, hash: null }, undefined, null);
      if (written.error) throw new Error(`manifest.csv: ${written.error}`);
      sizer.add(name, csv.length);
    }
  } finally {
    // Requests opened ahead for files the archive did not reach (it failed first): their
    // responses are dropped, so their sockets are freed rather than left to time out unread.
    ahead.close();
  }
  if (packaged.length === 0) throw new UrlFailure(urlErrors);
  return { packaged, urlErrors };
}

/** The running size of the archive being written, by entry name and body size. */
function archiveSizer(options: Pick<ArchiveOptions, 'aes' | 'tar'>): {
  /** `knownFirst`: the body's size was known before it (a ZIP entry without ZIP64 in its local header then). */
  add(name: string, size: number, knownFirst?: boolean): void;
  totalWith(name: string, size: number, knownFirst?: boolean): number;
  total(): number;
} {
  if (options.tar) return new TarSizer();
  const zip = new ZipSizer(options.aes === true);
  return {
    add: (name, size, knownFirst) => zip.add(Buffer.byteLength(name), size, knownFirst),
    totalWith: (name, size, knownFirst) => zip.totalWith(Buffer.byteLength(name), size, knownFirst),
    total: () => zip.total(),
  };
}

/**
 * Adds one body to the archive and resolves when it has streamed through, with the byte count
 * or the error that cut it short (after body.ts ran out of continuations).
 */
function streamEntry(
  zipfile: ZipOutput,
  opened: OpenedBody,
  entryName: string,
  size: number | null,
  { mtime, deflateLevel, hash }: { mtime: Date; deflateLevel: number | null; hash: Hash | null },
  observer: BodyObserver | undefined,
  /** Bytes the body may have (unknown length); one more stops it: `tooLarge`. */
  maxBytes: number | null,
): Promise<{ bytes: number; error: string | null; tooLarge?: boolean }> {
  return new Promise((resolve) => {
    const stream = opened.stream;
    let bytes = 0;
    let settled = false;
    const finish = (error: string | null, tooLarge = false) => {
      if (settled) return;
      settled = true;
      resolve({ bytes, error, tooLarge });
    };
    const failed = (err: unknown) => finish(wordedError(err, 'origin'));
    // An error emitted before this listener was added is not emitted again.
    if (stream.errored) return failed(stream.errored);
    stream.once('error', failed);
    // Lazy: the writer asks for the stream when the entry's turn comes (and lets go of this
    // function then); the byte counter is attached right after the writer's listener, so no
    // chunk can flow before the writer listens.
    zipfile.addReadStreamLazy(entryName, ENTRY_OPTIONS(mtime, size, deflateLevel), (cb) => {
      cb(null, stream);
      // The writer keeps the entry's running CRC-32 on it; this entry is its last.
      const entries = (zipfile as unknown as { entries: { crc32: number }[] }).entries;
      const entry = entries[entries.length - 1]!;
      if (observer) {
        stream.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          observer.progress(bytes, entry.crc32, chunk);
        });
      } else stream.on('data', (chunk: Buffer) => void (bytes += chunk.length));
      if (hash) stream.on('data', (chunk: Buffer) => void hash.update(chunk));
      if (maxBytes !== null) {
        stream.on('data', () => {
          if (bytes <= maxBytes) return;
          finish(null, true);
          stream.destroy();
        });
      }
      stream.once('end', () => {
        // The writer's own 'data' listener ran first on every chunk: the CRC is final.
        observer?.end(entry.crc32 >>> 0);
        finish(null);
      });
    });
  });
}
