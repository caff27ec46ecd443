// A planned ZIP (stream mode, docs/engine.md#stream-mode, docs/product-rules.md#lifecycle): built
// while it is sent, from the layout computed at prepare time. Any byte range is served by
// fetching only the input bytes inside it plus the CRC-32s the headers in it need.
import type { Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ApiError, archiveFormatOf, PLANS } from '@ap/contract';
import type { BinFileRow, Db, DownloadBin } from '@ap/db';
import { findFetchError, type Fetcher, type FileAccess } from '@ap/fetch';
import { binFilesWithAccess, monthStart, streamQuotaExceeded, zipEncryptionOf } from '@ap/jobs';
import type { SecretBox } from '@ap/secrets';
import type { Logger } from '@ap/log';
import { metrics } from '@ap/service-kit';
import { CrcStore, CrcWork, LAYOUT_READER_DEFAULTS, LayoutReader, layoutInputsOf, writeArchive, type CrcWorkOptions, type LayoutReaderOptions } from '@ap/archive';
import { layoutOfFiles, newZipOutput, sliceRange, streamEtag, TarOutput, type BlockChecker, type ZipEncryption, type ZipLayout } from '@ap/zip';
import { BatchedWriter } from './batched-writer';
import { createDurableWriter } from './durable-usage';
import { whenAborted, type ByteSpan } from './http-range';
import type { ServableZip, ZipBody } from './servable';

export interface PlannedZipDeps {
  db: Db;
  fetcher: Fetcher;
  log: Logger;
  /** Opens the files' sealed headers, their sources' secrets and an encrypted job's archive password. */
  secrets: Pick<SecretBox, 'open'>;
}

interface UsageOf {
  zipId: string;
  jobId: string;
  userId: string;
}

/** Tunables of stream downloads; tests and benches shrink them. */
export type PlannedZipOptions = Partial<LayoutReaderOptions> & { crc?: Partial<CrcWorkOptions> };

/** Makes the servable form of a stream bin; one per API process (it holds the CRC store and the shared CRC work). */
export function plannedZips(deps: PlannedZipDeps, options: PlannedZipOptions = {}) {
  const crcStore = new CrcStore(deps.db, deps.log);
  // A ZIP's CRC reads may use as many connections as its origin host allows.
  const crcWork = new CrcWork(deps.fetcher, crcStore, { connections: deps.fetcher.hosts.perHost, ...options.crc });
  const opts: LayoutReaderOptions = { ...LAYOUT_READER_DEFAULTS, ...options, crcWork };
  const durable = createDurableWriter(deps.log);
  /** Bytes sent are recorded even while Postgres is away (retried until it takes them). */
  const recordUsage = async (usage: UsageOf, bytes: number) => {
    if (bytes <= 0) return;
    const data = { ...usage, kind: 'stream_bytes' as const, month: monthStart(), amount: BigInt(bytes) };
    await durable.write(() => deps.db.usageRecord.create({ data }), `stream usage of zip ${usage.zipId}`);
  };

  return async function plannedZip(bin: DownloadBin): Promise<ServableZip> {
    const { job } = bin;
    if (!job.user.overageEnabled && (await streamQuotaExceeded(deps.db, job.user))) {
      throw new ApiError('QUOTA_EXCEEDED', 'the monthly stream quota of your plan is used up and overage is disabled');
    }
    const rows = await binFilesWithAccess(deps.db, deps.secrets, bin.jobId, bin.id);
    const usage = { zipId: bin.id, jobId: bin.jobId, userId: job.user.id };
    const encryption = zipEncryptionOf({ ...job, userId: job.user.id }, bin.sequence, deps.secrets.open, rows.map((r) => r.aesGeneration ?? 0));
    const mtime = job.createdAt;
    // A stream tar (no tar.gz in stream mode) is laid out and served as a ZIP is, without CRCs.
    const tar = archiveFormatOf(job.format) !== 'zip';
    if (bin.size === null || rows.some((r) => r.size === null)) return unknownSizeZip(bin, rows, { mtime, usage, archiveLimit: PLANS[job.user.plan].streamArchiveBytes, encryption, tar });
    // No closure made here holds `rows`: a download of a 20,000-file ZIP keeps its layout and
    // inputs, not the rows besides (docs/operations.md#memory-per-process).
    const layout = layoutOfFiles(rows, mtime, encryption, tar ? 'tar' : 'zip');
    if (layout.totalSize !== Number(bin.size)) throw new Error(`stream zip ${bin.id}: layout ${layout.totalSize} != recorded ${bin.size}`);
    const recorded = layoutInputsOf(rows);
    return {
      head: { filename: bin.filename, size: layout.totalSize, etag: streamEtag(layout, recorded.inputs), lastModified: bin.completedAt ?? mtime },
      open: (span, ended) => openRange(bin.jobId, layout, recorded, span!, ended, usage),
    };
  };

  async function openRange(jobId: string, layout: ZipLayout, recorded: ReturnType<typeof layoutInputsOf>, span: ByteSpan, ended: AbortSignal, usage: UsageOf): Promise<ZipBody> {
    // The client going away aborts every origin request at once.
    const abort = new AbortController();
    whenAborted(ended, () => abort.abort(ended.reason));
    const { inputs, crcs, macs } = recorded;
    const reader = new LayoutReader(deps.fetcher, opts, crcStore, jobId, layout, inputs, crcs, abort.signal, macs);
    const slices = sliceRange(layout, span.start, span.end);
    try {
      // Everything that can fail before the first byte does: CRCs computed alone, and the
      // first body opened (its validators checked).
      await reader.prepare(slices);
    } catch (err) {
      abort.abort();
      await reader.close();
      if (ended.aborted) return { writeTo: async () => undefined };
      // Not a ZIP after all: the error handler drops the download's headers for the envelope.
      throw upstreamError(err, deps.log, usage.zipId);
    }
    return {
      async writeTo(res) {
        let sent = 0;
        // The status goes out now: an AES block held back for its check and found changed
        // ends a response that has begun, a cut, not a reset before any header.
        if (!res.headersSent) res.flushHeaders();
        // Written straight to the response in batches: no stream between the reader and the
        // socket (bench:stream (a), docs/engine.md#fetching-ahead).
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
          // A changed file is forgotten before the cut, so the client's next request learns it again.
          await reader.forgotten();
          // The client sees a truncated transfer.
          res.destroy();
          if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId: usage.zipId }, 'stream download failed');
        } finally {
          await reader.close();
          await recordUsage(usage, sent);
        }
      },
    };
  }

  function unknownSizeZip(bin: DownloadBin, rows: BinFileRow[], ctx: { mtime: Date; usage: UsageOf; archiveLimit: number; encryption: ZipEncryption | null; tar: boolean }): ServableZip {
    return {
      head: { filename: bin.filename, size: null, etag: null, lastModified: null },
      open: async (_span, ended) => ({ writeTo: (res) => writeUnknownSize(res, rows, { ...ctx, ended }) }),
    };
  }

  /** No exact size, so no ranges: a chunked 200 that yazl writes as the bodies arrive. */
  async function writeUnknownSize(
    res: Response,
    rows: (BinFileRow & { access?: FileAccess })[],
    ctx: { mtime: Date; usage: UsageOf; /** The plan's per-archive limit: a body of unknown length ends the download there. */ archiveLimit: number; encryption: ZipEncryption | null; ended: AbortSignal; tar: boolean },
  ): Promise<void> {
    const abort = new AbortController();
    whenAborted(ctx.ended, () => abort.abort(ctx.ended.reason));
    const zipfile = ctx.tar ? new TarOutput(ctx.mtime) : newZipOutput(ctx.encryption, ctx.encryption && blockChecker(crcStore, ctx.usage.jobId, rows, ctx.encryption));
    let sent = 0;
    zipfile.outputStream.on('data', (c: Buffer) => {
      sent += c.length;
      metrics.streamBytesSentTotal.inc(c.length);
    });
    const piping = pipeline(zipfile.outputStream, res);
    try {
      await writeArchive(
        zipfile,
        rows.map((r) => ({ position: r.position, url: r.url, filename: null, size: r.size, entryName: r.entryName, ...(r.access ? { access: r.access } : {}) })),
        {
          fetcher: deps.fetcher,
          mtime: ctx.mtime,
          failOnUrlError: true,
          archiveLimit: ctx.archiveLimit,
          signal: abort.signal,
          onBrokenBody: async () => undefined,
          tar: ctx.tar,
          ...(opts.fetchAhead ? { fetchAhead: opts.fetchAhead } : {}),
        },
      );
      zipfile.end();
      await piping;
    } catch (err) {
      res.destroy();
      await piping.catch(() => undefined);
      if (!clientLeft(err)) deps.log.warn({ err: (err as Error).message, zipId: ctx.usage.zipId }, 'stream download failed');
    } finally {
      await recordUsage(ctx.usage, sent);
    }
  }
}

/**
 * An AES ZIP of unknown size is written whole each time: its blocks are checked against the
 * digests their keystreams hold, as the layout reader checks them, and a changed file is
 * forgotten (a fresh salt) before the response is cut (docs/archive-options.md#changed-origins).
 */
function blockChecker(crcStore: CrcStore, jobId: string, rows: readonly BinFileRow[], encryption: ZipEncryption): BlockChecker {
  return async (index, block, digest) => {
    const position = rows[index]!.position;
    const generation = encryption.generationOf(index);
    if (await crcStore.claimBlock(jobId, position, generation, block, digest)) return true;
    await crcStore.forget(jobId, position, generation);
    return false;
  };
}

function clientLeft(err: unknown): boolean {
  return findFetchError(err)?.kind === 'aborted' || (err as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/**
 * A source URL that failed before the first byte (an expired signed link answering 403, a
 * changed file): 502 naming the URL (its query, which may sign it, dropped) and its answer.
 */
function upstreamError(err: unknown, log: Logger, zipId: string): unknown {
  const fe = findFetchError(err);
  if (!fe) return err;
  const url = fe.url?.split(/[?#]/)[0];
  log.warn({ zipId, url, status: fe.status, kind: fe.kind, err: fe.message }, 'stream download refused: a source URL failed');
  return new ApiError('SOURCE_UNAVAILABLE', `a source file could not be fetched: ${url ? `${url}: ` : ''}${fe.userMessage}`, 502);
}
