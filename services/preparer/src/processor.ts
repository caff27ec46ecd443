import type { Processor } from 'bullmq';
import { ARCHIVE_EXTENSIONS, ARCHIVE_TOO_LARGE, archiveBytes, archiveFormatOf, dedupeEntryNames, MANIFEST_HEADER_BYTES, manifestRowBound, entryNameOf, filesPerJob, isPlanName, renderZipFilenames } from '@ap/contract';
import { announceDeliveries, endJob, expandPrefixEntries, fileAccessOf, newZipId, queueBinsOf, type PrefixExpansion } from '@ap/jobs';
import { mapLimit } from '@ap/fetch';
import { createBins, filesToProbe, jobById, jobLeavesPreparing, markJobEnqueued, recordProbedFiles, splitStrategyOf, touchPreparingJob, type DbTx, type JobRow, type ProbedFileRecord } from '@ap/db';
import type { PreparePayload, WorkQueues } from '@ap/queue';
import type { ServiceContext } from '@ap/service-kit';
import { deflateBound, packBins, tarArchiveSize, zipSize } from '@ap/zip';

/** How often a long probe run touches the job, so the reconciler sees it is alive. */
const HEARTBEAT_MS = 20_000;
const PREPARE_TIMEOUT_ERROR = 'preparing took too long';

/**
 * What preparing keeps of each file until the layout is written: its probe, not its access, nor
 * its URL unless the job has a manifest (whose rows, URL included, the layout must make room for).
 */
type ProbedFile = ProbedFileRecord & { manifestUrl: string | null };

interface Bin {
  positions: number[];
  size: number | null;
}

type Layout = { ok: true; bins: Bin[] } | { ok: false; error: string; position?: number };

export function createPreparerProcessor(ctx: ServiceContext, queues: WorkQueues): Processor<PreparePayload> {
  return async (message) => {
    await prepareJob(ctx, queues, message.data);
  };
}

/**
 * Preparing (docs/product-rules.md#sizes-probing-and-bins): probe every URL, name the entries,
 * lay out the bins with exact ZIP sizes, persist them and hand stored bins to the packers.
 * Runs again safely: every write is guarded by the job still preparing at this attempt.
 */
export async function prepareJob(ctx: ServiceContext, queues: WorkQueues, payload: PreparePayload): Promise<void> {
  const job = await jobById(ctx.db, payload.jobId);
  if (!job || job.attempt !== payload.attempt || job.status !== 'preparing') return;
  await prepareTakenJob(ctx, queues, job);
}

async function prepareTakenJob(ctx: ServiceContext, queues: WorkQueues, job: JobRow): Promise<void> {
  const { db, fetcher, log } = ctx;
  // The clock starts when a preparer takes the job.
  const deadline = AbortSignal.timeout(ctx.config.PREPARE_TIMEOUT_MS);
  const split = job.maxZipSizeBytes !== null;

  const heartbeat = setInterval(() => {
    void touchPreparingJob(db, job.id).catch(() => undefined);
  }, HEARTBEAT_MS);
  const probed: ProbedFile[] = [];
  try {
    // Prefix entries first: listed into one file row per object, their probes known from the listing.
    let expansion: PrefixExpansion = { ok: true, listed: new Map(), failedPrefixes: new Map() };
    if (job.prefixEntries > 0) {
      expansion = await expandPrefixEntries(ctx, job, filesPerJob(await planOf(ctx, job), job.mode), { signal: deadline, maxPages: ctx.config.PREFIX_LIST_PAGES });
      if (deadline.aborted) expansion = { ok: false, error: PREPARE_TIMEOUT_ERROR };
      if (!expansion.ok) {
        if (expansion.error !== null) await failWhilePreparing(ctx, queues, job, expansion.error);
        return;
      }
    }
    const { listed, failedPrefixes } = expansion;
    // A page of files at a time: only the page's rows and access are held while it is probed.
    for await (const rows of filesToProbe(db, job.id)) {
      const access = await fileAccessOf(db, ctx.secrets, job.id, rows);
      const page = await mapLimit(rows, ctx.config.PROBE_CONCURRENCY, async (row): Promise<ProbedFile> => {
        const fromListing = listed.get(row.position);
        if (fromListing) return { ...blank(row, job.manifest), ...fromListing, entryName: entryNameOf(row, { finalUrl: row.url }) };
        const prefixError = failedPrefixes.get(row.position);
        if (prefixError !== undefined) return { ...blank(row, job.manifest), error: prefixError };
        const fileAccess = access.get(row.position);
        const result = await fetcher.probe(row.url, fileAccess ? { access: fileAccess, signal: deadline } : { signal: deadline });
        if (!result.ok) return { ...blank(row, job.manifest), error: deadline.aborted ? PREPARE_TIMEOUT_ERROR : result.error };
        const sizeUnknown = result.size === null && split;
        return {
          ...blank(row, job.manifest),
          size: result.size,
          etag: result.etag ?? null,
          lastModified: result.lastModified ?? null,
          entryName: entryNameOf(row, result),
          error: sizeUnknown ? 'size unknown (no Content-Length or Content-Range)' : null,
        };
      });
      for (const f of page) probed.push(f);
    }
  } finally {
    clearInterval(heartbeat);
  }

  const usable = probed.filter((f) => f.error === null);
  // Names are unique across the whole job, so parts extracted into one folder never collide
  // and a file's name does not depend on the bin it lands in.
  const unique = dedupeEntryNames(usable.map((f) => f.entryName!));
  usable.forEach((f, i) => (f.entryName = unique[i]!));

  const failed = probed.length - usable.length;
  let layout: Layout;
  if (deadline.aborted) layout = { ok: false, error: PREPARE_TIMEOUT_ERROR };
  else if (usable.length === 0) layout = { ok: false, error: 'none of the URLs could be fetched' };
  else if (failed > 0 && job.failOnUrlError) layout = { ok: false, error: `${failed} of ${probed.length} URLs could not be fetched` };
  else layout = withinArchiveLimit(computeLayout(usable, job, probed.filter((f) => f.error !== null)), job, await planOf(ctx, job));

  if (!layout.ok) {
    const failure = layout;
    const deliveries = await db.$transaction((tx) =>
      endJob(tx, {
        jobId: job.id,
        where: { status: 'preparing', attempt: job.attempt },
        status: 'failed',
        data: { error: failure.position === undefined ? failure.error : null },
        alongside: async () => {
          if (failure.position !== undefined) {
            const f = probed.find((p) => p.position === failure.position)!;
            f.error = failure.error;
          }
          await recordProbedFiles(tx, job.id, probed);
        },
      }),
    );
    await announceDeliveries(queues, deliveries, log);
    log.info({ jobId: job.id, error: failure.error }, 'job failed while preparing');
    return;
  }

  const names = renderZipFilenames({ template: job.zipFilename, jobId: job.id, createdAt: job.createdAt, total: layout.bins.length, extension: ARCHIVE_EXTENSIONS[archiveFormatOf(job.format)] });
  if (!names.ok) throw new Error(`zip_filename no longer renders: ${names.message}`); // validated at create time
  const stream = job.mode === 'stream';
  const byPosition = new Map(probed.map((f) => [f.position, f]));
  const bins = layout.bins.map((bin, i) => {
    const id = newZipId();
    for (const p of bin.positions) byPosition.get(p)!.zipId = id;
    return { id, sequence: i + 1, filename: names.names[i]!, fileCount: bin.positions.length, plannedSize: bin.size };
  });
  const knownSizes = bins.every((b) => b.plannedSize !== null);
  const now = new Date();

  // The bins and the files' probe results, written with the job's move out of preparing.
  const writeLayout = async (tx: DbTx): Promise<void> => {
    await createBins(tx, job.id, job.attempt, bins, stream ? now : null);
    await recordProbedFiles(tx, job.id, probed);
  };

  let deliveries: string[] | null = null;
  const won = await db.$transaction(async (tx) => {
    const guard = { status: 'preparing' as const, attempt: job.attempt };
    if (stream) {
      // Stream ZIPs are built at download time: the job is complete once its layout is known.
      deliveries = await endJob(tx, {
        jobId: job.id,
        where: guard,
        status: 'completed',
        now,
        data: { zipCount: bins.length, fileCount: usable.length, totalSize: knownSizes ? bins.reduce((s, b) => s + b.plannedSize!, 0) : 0 },
        alongside: () => writeLayout(tx),
      });
      return deliveries !== null;
    }
    if (!(await jobLeavesPreparing(tx, { jobId: job.id, attempt: job.attempt, zipCount: bins.length }))) return false;
    await writeLayout(tx);
    return true;
  });
  await announceDeliveries(queues, deliveries, log);
  if (!won || stream) return;
  await queueBinsOf(db, queues, job.userId);
  await markJobEnqueued(db, job.id);

}

/** A job-level failure before any file was probed (a prefix past the plan's limit). */
async function failWhilePreparing(ctx: ServiceContext, queues: WorkQueues, job: { id: string; attempt: number }, error: string): Promise<void> {
  const deliveries = await ctx.db.$transaction((tx) => endJob(tx, { jobId: job.id, where: { status: 'preparing', attempt: job.attempt }, status: 'failed', data: { error } }));
  await announceDeliveries(queues, deliveries, ctx.log);
  ctx.log.info({ jobId: job.id, error }, 'job failed while preparing');
}

const planOf = async (ctx: ServiceContext, job: Pick<JobRow, 'userId'>) => {
  const { plan } = await ctx.db.user.findUniqueOrThrow({ where: { id: job.userId }, select: { plan: true } });
  return isPlanName(plan) ? plan : 'free';
};

/**
 * The plan's per-archive limit, where a bin's size is known now (docs/guarantees.md#hardening-third-round-items-1-6):
 * a stream ZIP, or an oversize split bin of one file. A deflate bin's planned size is a bound,
 * not its size: it is held to the limit while it is packed.
 */
function withinArchiveLimit(layout: Layout, job: Pick<JobRow, 'mode' | 'compression'>, plan: Parameters<typeof archiveBytes>[0]): Layout {
  if (!layout.ok || job.compression === 'deflate') return layout;
  const limit = archiveBytes(plan, job.mode);
  return layout.bins.some((b) => b.size !== null && b.size > limit) ? { ok: false, error: ARCHIVE_TOO_LARGE } : layout;
}

function blank(row: { position: number; url: string }, manifest: boolean): ProbedFile {
  return { position: row.position, size: null, etag: null, lastModified: null, entryName: null, error: null, zipId: null, manifestUrl: manifest ? row.url : null };
}

/** Headers, descriptor, central record and deflate or gzip framing of manifest.csv's own entry, at most. */
const MANIFEST_ENTRY_RESERVE = 4096;

function computeLayout(
  usable: ProbedFile[],
  job: Pick<JobRow, 'maxZipSizeBytes' | 'splitStrategy' | 'allowOversizeZips' | 'compression' | 'encryptionMethod' | 'format' | 'manifest'>,
  leftOut: readonly ProbedFile[] = [],
): Layout {
  const aes = job.encryptionMethod !== null;
  const format = archiveFormatOf(job.format);
  if (job.maxZipSizeBytes === null) {
    const entries = usable.map((f) => ({ name: f.entryName!, size: f.size }));
    // A tar.gz's size is learned when packed; its prediction is the most gzip can write.
    const size = format === 'zip' ? zipSize(entries, { aes }) : entries.some((e) => e.size === null) ? null : tarArchiveSize(entries as { name: string; size: number }[], format === 'tar.gz');
    return { ok: true, bins: [{ positions: usable.map((f) => f.position), size }] };
  }
  // A deflate bin is laid out by the most its entries can deflate to, so its cap holds
  // whatever the data; its planned size is that bound, its final size is learned when packed.
  const deflate = job.compression === 'deflate';
  // A manifest's room: each file carries its row's most bytes, and every bin the manifest's
  // entry, header line and the rows of URLs left out while preparing (listed by the first).
  const rowBound = (f: ProbedFile) => (job.manifest ? manifestRowBound(f.entryName!, f.manifestUrl!) : 0);
  const reserve = job.manifest ? MANIFEST_ENTRY_RESERVE + MANIFEST_HEADER_BYTES + leftOut.reduce((n, f) => n + manifestRowBound('', f.manifestUrl!), 0) : 0;
  const packed = packBins(
    usable.map((f) => ({ index: f.position, name: f.entryName!, size: (deflate ? deflateBound(f.size!) : f.size!) + rowBound(f) })),
    {
      maxZipSize: Number(job.maxZipSizeBytes) - reserve,
      strategy: splitStrategyOf(job),
      allowOversize: job.allowOversizeZips,
      aes,
      format,
    },
  );
  if (!packed.ok) return { ok: false, error: packed.error, position: packed.index };
  return { ok: true, bins: packed.bins.map((b) => ({ positions: b.indexes, size: b.size })) };
}
