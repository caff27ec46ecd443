// Stream-mode downloads (decisions.md "Download", "Lifecycle: stream job"): the ZIP is built
// while it is sent, from the layout computed at prepare time. Any byte range is served by
// fetching only the input bytes inside it plus the CRC-32s the headers in it need.
import type { Request, Response } from 'express';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yazl from 'yazl';
import { ApiError, errorEnvelope } from '@ap/contract';
import type { Db } from '@ap/db';
import { FetchError, findFetchError, type Fetcher, type OpenedBody } from '@ap/fetch';
import type { Logger } from '@ap/log';
import { writeArchive } from '@ap/packer';
import {
  crc32,
  crcsNeededUpfront,
  crcStart,
  planCrc,
  planZip,
  renderSegment,
  sliceRange,
  streamEtag,
  type CrcCheckpoint,
  type SegmentSlice,
  type ZipLayout,
} from '@ap/zip';
import { monthStart, streamQuotaExceeded } from '../domain/quota';
import { answerRange, contentDisposition } from '../routes/download';
import { CrcStore } from './crc-store';

export interface StreamDeps {
  db: Db;
  fetcher: Fetcher;
  log: Logger;
}

/** Tunables; tests and benches shrink them. */
export interface StreamOptions {
  /** A body's CRC checkpoint is persisted every this many bytes (and on disconnect). */
  checkpointEvery: number;
  /** The next body is requested when the current one has less than this left. */
  prefetchWhenRemaining: number;
}

const DEFAULTS: StreamOptions = { checkpointEvery: 64 << 20, prefetchWhenRemaining: 8 << 20 };

/** Non-data bytes are gathered into chunks of about this size (70,000 central records). */
const BATCH_BYTES = 64 * 1024;
/** Body chunks under this size are batched too. */
const SMALL_CHUNK = 16 * 1024;
/** Most body requests open ahead of the one being sent. */
const MAX_AHEAD = 16;

interface Input {
  position: number;
  url: string;
  size: number;
  etag: string | null;
  lastModified: string | null;
  checkpoint: CrcCheckpoint | null;
}

export function createStreamServer(deps: StreamDeps, options: Partial<StreamOptions> = {}) {
  const opts = { ...DEFAULTS, ...options };
  const crcStore = new CrcStore(deps.db, deps.log);

  return async function serveStream(req: Request, res: Response, zipId: string): Promise<void> {
    const zip = await deps.db.zip.findUniqueOrThrow({
      where: { id: zipId },
      select: {
        id: true,
        filename: true,
        size: true,
        completedAt: true,
        jobId: true,
        job: { select: { createdAt: true, user: { select: { id: true, plan: true, overageEnabled: true } } } },
      },
    });
    const user = zip.job.user;
    if (!user.overageEnabled && (await streamQuotaExceeded(deps.db, user))) {
      throw new ApiError('QUOTA_EXCEEDED', 'the monthly stream quota of your plan is used up and overage is disabled');
    }
    const rows = await deps.db.jobFile.findMany({
      where: { zipId, error: null },
      orderBy: { position: 'asc' },
      select: { position: true, url: true, size: true, etag: true, lastModified: true, entryName: true, crc32: true, crcPrefixLen: true, crcPrefix: true },
    });
    const ctx = { zipId, jobId: zip.jobId, userId: user.id };
    if (zip.size === null || rows.some((r) => r.size === null)) {
      // No length, so no ranges: a chunked 200.
      res.set({ 'Content-Type': 'application/zip', 'Content-Disposition': contentDisposition(zip.filename), 'Cache-Control': 'private, no-transform' });
      await serveUnknownSize(req, res, rows, zip.job.createdAt, ctx);
      return;
    }

    const mtime = zip.job.createdAt;
    const layout = planZip(rows.map((r) => ({ name: r.entryName!, size: Number(r.size) })), { mtime });
    if (layout.totalSize !== Number(zip.size)) throw new Error(`stream zip ${zipId}: layout ${layout.totalSize} != recorded ${zip.size}`);
    const inputs: Input[] = rows.map((r) => ({
      position: r.position,
      url: r.url,
      size: Number(r.size),
      etag: r.etag,
      lastModified: r.lastModified,
      checkpoint: r.crcPrefixLen === null || r.crcPrefix === null ? null : { length: Number(r.crcPrefixLen), crc: r.crcPrefix >>> 0 },
    }));
    const crcs = new Map<number, number>();
    rows.forEach((r, i) => {
      if (r.crc32 !== null) crcs.set(i, r.crc32 >>> 0);
      else if (inputs[i]!.size === 0) crcs.set(i, 0);
    });

    const span = answerRange(req, res, { filename: zip.filename, size: layout.totalSize, etag: streamEtag(layout, inputs), lastModified: zip.completedAt ?? mtime });
    if (!span) return;
    const { start, end } = span;
    if (req.method === 'HEAD') {
      res.end();
      return;
    }

    // The client going away aborts every origin request at once.
    const abort = new AbortController();
    res.once('close', () => abort.abort(new Error('client went away')));
    const session = new StreamSession(deps, opts, crcStore, ctx, layout, inputs, crcs, abort.signal);
    const slices = sliceRange(layout, start, end);
    try {
      // Everything that can fail before the first byte does: CRCs computed alone, and the
      // first body opened (its validators checked).
      await session.prepare(slices);
    } catch (err) {
      abort.abort();
      // Not a ZIP after all: the error envelope goes out without the download's headers.
      for (const h of ['Content-Disposition', 'Content-Range', 'Content-Length', 'ETag', 'Last-Modified', 'Accept-Ranges']) res.removeHeader(h);
      throw upstreamError(err);
    }
    const body = Readable.from(session.bytes(slices), { objectMode: false, highWaterMark: BATCH_BYTES });
    try {
      await pipeline(body, res);
    } catch (err) {
      // pipeline has destroyed the response: the client sees a truncated transfer.
      if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId }, 'stream download failed');
    } finally {
      await session.finish();
    }
  };

  async function serveUnknownSize(
    req: Request,
    res: Response,
    rows: { position: number; url: string; size: bigint | null; entryName: string | null }[],
    mtime: Date,
    ctx: { zipId: string; jobId: string; userId: string },
  ): Promise<void> {
    // No exact size, so no ranges: a chunked 200 that yazl writes as the bodies arrive.
    res.status(200);
    if (req.method === 'HEAD') return void res.end();
    const abort = new AbortController();
    res.once('close', () => abort.abort(new Error('client went away')));
    const zipfile = new yazl.ZipFile();
    let sent = 0;
    zipfile.outputStream.on('data', (c: Buffer) => (sent += c.length));
    const piping = pipeline(zipfile.outputStream, res);
    try {
      await writeArchive(
        zipfile,
        rows.map((r) => ({ position: r.position, url: r.url, filename: null, size: r.size, entryName: r.entryName })),
        {
          fetcher: deps.fetcher,
          mtime,
          failOnUrlError: true,
          archiveLimit: Number.MAX_SAFE_INTEGER,
          signal: abort.signal,
          onBrokenBody: async () => undefined,
        },
      );
      zipfile.end();
      await piping;
    } catch (err) {
      res.destroy();
      await piping.catch(() => undefined);
      if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId: ctx.zipId }, 'stream download failed');
    } finally {
      await recordUsage(deps.db, ctx, sent);
    }
  }
}

function clientLeft(err: unknown): boolean {
  return findFetchError(err)?.kind === 'aborted' || (err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE';
}

function upstreamError(err: unknown): unknown {
  const fe = findFetchError(err);
  if (!fe) return err;
  return new ApiError('INTERNAL_ERROR', `a source file could not be fetched: ${fe.userMessage}`, 502);
}

async function recordUsage(db: Db, ctx: { zipId: string; jobId: string; userId: string }, bytes: number): Promise<void> {
  if (bytes <= 0) return;
  await db.usageRecord.create({ data: { userId: ctx.userId, kind: 'stream_bytes', month: monthStart(), amount: BigInt(bytes), jobId: ctx.jobId, zipId: ctx.zipId } });
}

/** One response: the bytes of [start, end] of the layout, in order. */
class StreamSession {
  private first: { slice: SegmentSlice; source: DataSource } | null = null;
  private sent = 0;

  constructor(
    private readonly deps: StreamDeps,
    private readonly opts: StreamOptions,
    private readonly crcStore: CrcStore,
    private readonly ctx: { zipId: string; jobId: string; userId: string },
    private readonly layout: ZipLayout,
    private readonly inputs: Input[],
    private readonly crcs: Map<number, number>,
    private readonly signal: AbortSignal,
  ) {}

  async prepare(slices: SegmentSlice[]): Promise<void> {
    for (const entry of crcsNeededUpfront(this.layout, slices, (e) => this.crcs.has(e))) {
      const input = this.inputs[entry]!;
      const crc = await this.crcOfRange(input, crcStart(input.size, input.checkpoint), input.size);
      this.learn(entry, crc);
    }
    const slice = slices.find((s) => s.segment.kind === 'data');
    if (slice) this.first = { slice, source: await this.openSource(slice) };
  }

  async *bytes(slices: SegmentSlice[]): AsyncGenerator<Buffer> {
    // Small pieces (records, tiny bodies) are gathered into one chunk: 70,000 entries would
    // otherwise cost 200,000 writes.
    let batch: Buffer[] = [];
    let batched = 0;
    const take = () => {
      const out = this.count(batch.length === 1 ? batch[0]! : Buffer.concat(batch, batched));
      batch = [];
      batched = 0;
      return out;
    };
    // Bodies are requested ahead while what is ahead is small (at most MAX_AHEAD requests and
    // prefetchWhenRemaining bytes), so neither a big body nor many tiny ones wait on a round trip.
    const dataSlices = slices.filter((s) => s.segment.kind === 'data');
    const ahead = new Map<number, Promise<DataSource>>();
    let current = -1;
    let opened = this.first ? 0 : -1;
    let aheadBytes = 0;
    const prefetch = () => {
      while (opened + 1 < dataSlices.length && opened - current < MAX_AHEAD && (opened === current || aheadBytes < this.opts.prefetchWhenRemaining)) {
        const next = dataSlices[++opened]!;
        const opening = this.openSource(next);
        opening.catch(() => undefined); // reported when awaited
        ahead.set(opened, opening);
        aheadBytes += next.length;
      }
    };
    try {
      for (const slice of slices) {
        if (slice.segment.kind !== 'data') {
          const bytes = renderSegment(this.layout, slice.segment, (e) => this.crcOf(e));
          batch.push(slice.from === 0 && slice.length === bytes.length ? bytes : bytes.subarray(slice.from, slice.from + slice.length));
          batched += slice.length;
          if (batched >= BATCH_BYTES) yield take();
          continue;
        }
        current++;
        let source: DataSource;
        if (current === 0 && this.first?.slice === slice) source = this.first.source;
        else {
          const opening = ahead.get(current) ?? this.openSource(slice);
          if (current > opened) opened = current;
          else aheadBytes -= slice.length;
          ahead.delete(current);
          source = await opening;
        }
        try {
          for await (const chunk of source.read(this.opts.prefetchWhenRemaining, prefetch)) {
            if (chunk.length < SMALL_CHUNK) {
              batch.push(chunk);
              batched += chunk.length;
              if (batched >= BATCH_BYTES) yield take();
              continue;
            }
            if (batched > 0) yield take();
            yield this.count(chunk);
          }
        } finally {
          await source.close();
        }
        prefetch();
      }
      // CRCs learned here are stored before the last bytes go out, so a client that reads
      // the archive and then asks for a range finds them.
      await this.crcStore.flush();
      if (batched > 0) yield take();
    } finally {
      for (const opening of ahead.values()) void opening.then((s) => s.close(), () => undefined);
    }
  }

  async finish(): Promise<void> {
    if (this.first) await this.first.source.close();
    await this.crcStore.flush();
    await recordUsage(this.deps.db, this.ctx, this.sent).catch((err: Error) => this.deps.log.error({ err: err.message }, 'stream usage not recorded'));
  }

  private count(chunk: Buffer): Buffer {
    this.sent += chunk.length;
    return chunk;
  }

  private crcOf(entry: number): number {
    const crc = this.crcs.get(entry);
    if (crc === undefined) throw new Error(`CRC of entry ${entry} is not known`); // crcsNeededUpfront guarantees it
    return crc;
  }

  private learn(entry: number, crc: number): void {
    this.crcs.set(entry, crc);
    this.crcStore.crc(this.ctx.jobId, this.inputs[entry]!.position, crc);
  }

  /** Opens the body bytes of a data slice, checking the input is what was probed. */
  private async open(input: Input, start: number, end: number): Promise<OpenedBody> {
    const whole = start === 0 && end === input.size;
    const opened = await this.deps.fetcher.openBody(input.url, {
      ...(whole ? {} : { range: { start, end: end - 1 } }),
      expectedSize: input.size,
      ...(input.etag ? { ifMatch: input.etag } : {}),
      signal: this.signal,
    });
    const changed =
      (input.etag !== null && opened.etag !== undefined && opened.etag !== input.etag) ||
      (input.etag === null && input.lastModified !== null && opened.lastModified !== undefined && opened.lastModified !== input.lastModified);
    if (changed || (opened.totalSize !== null && opened.totalSize !== input.size)) {
      opened.stream.destroy();
      throw new FetchError('changed', 'file changed since it was probed', { retryable: false });
    }
    if (!whole && !opened.rangeHonoured) opened.stream = skipTake(opened.stream, start, end - start);
    return opened;
  }

  /** CRC-32 of body bytes [from.length, upTo), continuing from.crc: fetched, not sent. */
  private async crcOfRange(input: Input, from: CrcCheckpoint, upTo: number): Promise<number> {
    if (from.length >= upTo) return from.crc;
    const opened = await this.open(input, from.length, upTo);
    let crc = from.crc;
    let got = 0;
    for await (const chunk of opened.stream as AsyncIterable<Buffer>) {
      crc = crc32(chunk, crc);
      got += chunk.length;
    }
    if (got !== upTo - from.length) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
    return crc;
  }

  private async openSource(slice: SegmentSlice): Promise<DataSource> {
    const entry = slice.segment.kind === 'data' ? slice.segment.entry : -1;
    const input = this.inputs[entry]!;
    const from = slice.from;
    const to = slice.from + slice.length;
    let tracked: CrcCheckpoint | null = null;
    if (!this.crcs.has(entry)) {
      const plan = planCrc(from, to, input.size, input.checkpoint);
      if (plan.kind === 'track') tracked = plan.state;
      else if (plan.kind === 'prefix') tracked = { length: from, crc: await this.crcOfRange(input, plan.state, from) };
    }
    const opened = await this.open(input, from, to);
    return new DataSource(this, entry, input, opened, from, to, tracked);
  }

  /** Called by a data source as its body streams. */
  onProgress(entry: number, state: CrcCheckpoint, done: boolean): void {
    const input = this.inputs[entry]!;
    if (done) return this.learn(entry, state.crc);
    input.checkpoint = state;
    this.crcStore.checkpoint(this.ctx.jobId, input.position, state);
  }

  get options(): StreamOptions {
    return this.opts;
  }
}

/** The body bytes of one data slice, with the entry's running CRC when it is tracked. */
class DataSource {
  private closed = false;

  constructor(
    private readonly session: StreamSession,
    private readonly entry: number,
    private readonly input: Input,
    private readonly opened: OpenedBody,
    private readonly from: number,
    private readonly to: number,
    private readonly tracked: CrcCheckpoint | null,
  ) {}

  async *read(prefetchWhenRemaining: number, prefetch: () => void): AsyncGenerator<Buffer> {
    const { checkpointEvery } = this.session.options;
    let at = this.from;
    // The CRC covers body bytes [0, hashed); it catches up once `at` passes a checkpoint ahead.
    let hashed = this.tracked?.length ?? -1;
    let crc = this.tracked?.crc ?? 0;
    let saved = hashed;
    let complete = false;
    if (this.to - at <= prefetchWhenRemaining) prefetch();
    try {
      for await (const chunk of this.opened.stream as AsyncIterable<Buffer>) {
        if (chunk.length > this.to - at) throw new FetchError('length', 'file is longer than probed', { retryable: false });
        const end = at + chunk.length;
        if (hashed >= at && hashed < end) {
          crc = crc32(hashed === at ? chunk : chunk.subarray(hashed - at), crc);
          hashed = end;
          if (hashed - saved >= checkpointEvery && hashed < this.input.size) {
            saved = hashed;
            this.session.onProgress(this.entry, { length: hashed, crc }, false);
          }
        }
        at = end;
        if (this.to - at <= prefetchWhenRemaining) prefetch();
        yield chunk;
      }
      if (at !== this.to) throw new FetchError('length', 'file is shorter than probed', { retryable: false });
      complete = true;
    } finally {
      // Every byte read was handed to the response, so the client never has more than `hashed`:
      // a resume from anywhere up to it needs no extra origin bytes. A range ending mid-body
      // leaves one exactly where the client will resume.
      if (hashed === this.input.size && complete) this.session.onProgress(this.entry, { length: hashed, crc }, true);
      else if (hashed > saved) this.session.onProgress(this.entry, { length: hashed, crc }, false);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.opened.stream.destroy();
  }
}

/** For an origin that ignored Range: drops `skip` bytes, then passes `take`. */
function skipTake(stream: Readable, skip: number, take: number): Readable {
  return Readable.from(
    (async function* () {
      let pos = 0;
      try {
        for await (const chunk of stream as AsyncIterable<Buffer>) {
          const a = Math.max(0, skip - pos);
          const b = Math.min(chunk.length, skip + take - pos);
          pos += chunk.length;
          if (b > a) yield chunk.subarray(a, b);
          if (pos >= skip + take) break;
        }
      } finally {
        stream.destroy();
      }
    })(),
    { objectMode: false },
  );
}

