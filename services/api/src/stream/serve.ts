// Stream-mode downloads (decisions.md "Download", "Lifecycle: stream job"): the ZIP is built
// while it is sent, from the layout computed at prepare time. Any byte range is served by
// fetching only the input bytes inside it plus the CRC-32s the headers in it need.
import type { Request, Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, errorEnvelope, PLANS } from '@ap/contract';
import { binForStream, type BinFileRow, type Db } from '@ap/db';
import { findFetchError, type Fetcher } from '@ap/fetch';
import { binFilesWithAccess, zipEncryptionOf } from '@ap/jobs';
import type { SecretBox } from '@ap/secrets';
import type { Logger } from '@ap/log';
import { metrics } from '@ap/service-kit';
import { CrcStore, LAYOUT_READER_DEFAULTS, LayoutReader, layoutInputsOf, writeArchive, type LayoutReaderOptions } from '@ap/archive';
import { layoutOfFiles, newZipOutput, sliceRange, streamEtag, type ZipEncryption } from '@ap/zip';
import { monthStart, streamQuotaExceeded } from '../domain/quota';
import { answerRange, contentDisposition, whenAborted } from '../routes/download';
import { BatchedWriter } from './batched-writer';
import { createDurableWriter } from './durable-usage';

export interface StreamDeps {
  db: Db;
  fetcher: Fetcher;
  log: Logger;
  /** Opens the files' sealed headers, their sources' secrets and an encrypted job's archive password. */
  secrets: Pick<SecretBox, 'open'>;
}

export function createStreamServer(deps: StreamDeps, options: Partial<LayoutReaderOptions> = {}) {
  const opts = { ...LAYOUT_READER_DEFAULTS, ...options };
  const crcStore = new CrcStore(deps.db, deps.log);
  const durable = createDurableWriter(deps.log);
  /** Bytes sent are recorded even while Postgres is away (retried until it takes them). */
  const recordUsage = async (ctx: { zipId: string; jobId: string; userId: string }, bytes: number) => {
    if (bytes <= 0) return;
    const data = usageRow(ctx, bytes);
    await durable.write(() => deps.db.usageRecord.create({ data }), `stream usage of zip ${ctx.zipId}`);
  };

  /** `ended`: aborted when the response ends, however; it stops the origin fetches. */
  return async function serveStream(req: Request, res: Response, zipId: string, ended: AbortSignal): Promise<void> {
    const zip = await binForStream(deps.db, zipId);
    const user = zip.job.user;
    if (!user.overageEnabled && (await streamQuotaExceeded(deps.db, user))) {
      throw new ApiError('QUOTA_EXCEEDED', 'the monthly stream quota of your plan is used up and overage is disabled');
    }
    const rows = await binFilesWithAccess(deps.db, deps.secrets, zip.jobId, zipId);
    const ctx = { zipId, jobId: zip.jobId, userId: user.id };
    const encryption = zipEncryptionOf(zip.job, zip.sequence, deps.secrets.open);
    if (zip.size === null || rows.some((r) => r.size === null)) {
      // No length, so no ranges: a chunked 200.
      res.set({ 'Content-Type': 'application/zip', 'Content-Disposition': contentDisposition(zip.filename), 'Cache-Control': 'private, no-transform' });
      await serveUnknownSize(req, res, rows, zip.job.createdAt, ctx, PLANS[user.plan].streamArchiveBytes, encryption, ended);
      return;
    }

    const mtime = zip.job.createdAt;
    const layout = layoutOfFiles(rows, mtime, encryption);
    if (layout.totalSize !== Number(zip.size)) throw new Error(`stream zip ${zipId}: layout ${layout.totalSize} != recorded ${zip.size}`);
    const { inputs, crcs, macs } = layoutInputsOf(rows);

    const span = answerRange(req, res, { filename: zip.filename, size: layout.totalSize, etag: streamEtag(layout, inputs), lastModified: zip.completedAt ?? mtime });
    if (!span) return;
    const { start, end } = span;
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    if (ended.aborted) return;

    // The client going away aborts every origin request at once.
    const abort = new AbortController();
    whenAborted(ended, () => abort.abort(ended.reason));
    const reader = new LayoutReader(deps.fetcher, opts, crcStore, zip.jobId, layout, inputs, crcs, abort.signal, macs);
    const slices = sliceRange(layout, start, end);
    try {
      // Everything that can fail before the first byte does: CRCs computed alone, and the
      // first body opened (its validators checked).
      await reader.prepare(slices);
    } catch (err) {
      abort.abort();
      // Not a ZIP after all: the error handler drops the download's headers for the envelope.
      throw upstreamError(err);
    }
    let sent = 0;
    // Written straight to the response in batches: no stream between the reader and the
    // socket (bench:stream (a), docs/decisions.md "Fetching ahead").
    const out = new BatchedWriter(res, (bytes) => metrics.streamBytesSentTotal.inc(bytes));
    try {
      for await (const chunk of reader.bytes(slices)) {
        if (ended.aborted || res.destroyed) break;
        sent += chunk.length;
        await out.write(chunk);
      }
      out.flush();
      if (!ended.aborted) res.end();
    } catch (err) {
      out.flush();
      // The client sees a truncated transfer.
      res.destroy();
      if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId }, 'stream download failed');
    } finally {
      await reader.close();
      await recordUsage(ctx, sent);
    }
  };

  async function serveUnknownSize(
    req: Request,
    res: Response,
    rows: BinFileRow[],
    mtime: Date,
    ctx: { zipId: string; jobId: string; userId: string },
    /** The plan's per-archive limit: a body of unknown length ends the download there. */
    archiveLimit: number,
    encryption: ZipEncryption | null,
    ended: AbortSignal,
  ): Promise<void> {
    // No exact size, so no ranges: a chunked 200 that yazl writes as the bodies arrive.
    res.status(200);
    if (req.method === 'HEAD') return void res.end();
    const abort = new AbortController();
    whenAborted(ended, () => abort.abort(ended.reason));
    const zipfile = newZipOutput(encryption);
    let sent = 0;
    zipfile.outputStream.on('data', (c: Buffer) => {
      sent += c.length;
      metrics.streamBytesSentTotal.inc(c.length);
    });
    const piping = pipeline(zipfile.outputStream, res);
    try {
      await writeArchive(
        zipfile,
        rows.map((r) => ({ position: r.position, url: r.url, filename: null, size: r.size, entryName: r.entryName })),
        {
          fetcher: deps.fetcher,
          mtime,
          failOnUrlError: true,
          archiveLimit,
          signal: abort.signal,
          onBrokenBody: async () => undefined,
          ...(opts.fetchAhead ? { fetchAhead: opts.fetchAhead } : {}),
        },
      );
      zipfile.end();
      await piping;
    } catch (err) {
      res.destroy();
      await piping.catch(() => undefined);
      if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId: ctx.zipId }, 'stream download failed');
    } finally {
      await recordUsage(ctx, sent);
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

/** The row of bytes sent, its month fixed now (a retry in the next month still counts them in this one). */
function usageRow(ctx: { zipId: string; jobId: string; userId: string }, bytes: number) {
  return { userId: ctx.userId, kind: 'stream_bytes' as const, month: monthStart(), amount: BigInt(bytes), jobId: ctx.jobId, zipId: ctx.zipId };
}

