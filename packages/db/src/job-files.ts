// The owner of a job's file rows (job_files): the row type and the named operations the
// services use on them, instead of each selecting its own shape and writing raw SQL.
import type { DbTx } from './client';

/** A job's file as job_files holds it. */
export interface JobFileRow {
  /** 0-based input position. */
  position: number;
  url: string;
  /** The name the client gave, if any. */
  filename: string | null;
  /** Probed (or, for a single-ZIP bin, written) size; null when not known. */
  size: bigint | null;
  /** Validators seen when it was probed or written. */
  etag: string | null;
  lastModified: string | null;
  /** Name of its entry in its ZIP (derived, sanitised, de-duplicated); null until known. */
  entryName: string | null;
  /** CRC-32 of the body once learned (stored signed: read `>>> 0`). */
  crc32: number | null;
  /** Resume checkpoint while the CRC is not known: CRC-32 of the first crcPrefixLen bytes. */
  crcPrefix: number | null;
  crcPrefixLen: bigint | null;
  /** Request headers, sealed (file-access.ts opens them); null when none. */
  headers: string | null;
  /** The source an s3:// URL is read with. */
  sourceId: string | null;
  zipId: string | null;
  /** Why its URL failed; null when fine. */
  error: string | null;
  /** WinZip AES authentication code of its entry once learned (encrypted jobs). */
  aesMac: Uint8Array | null;
  /** Its salt generation (encrypted jobs; raised when its origin was found changed). Absent: 0. */
  aesGeneration?: number;
}

/** A file of a bin, as the packer and stream downloads read it: its bin is known, its URL did not fail. */
export type BinFileRow = Omit<JobFileRow, 'zipId' | 'error'>;

/** A file as the job's views show it. */
export type JobFileView = Pick<JobFileRow, 'url' | 'filename' | 'error' | 'zipId'> & { headerNames: string | null };

const BIN_FILE_SELECT = {
  position: true,
  url: true,
  filename: true,
  size: true,
  etag: true,
  lastModified: true,
  entryName: true,
  crc32: true,
  crcPrefix: true,
  crcPrefixLen: true,
  aesMac: true,
  aesGeneration: true,
  headers: true,
  sourceId: true,
} as const;

/**
 * Rows per read and per update statement when a job's files are walked
 * (docs/operations.md#memory-per-process): a read's rows and a statement's parameters are built
 * whole by Prisma and the driver, several times the rows' own size at the peak. Updates take
 * more rows a statement: they run inside transactions that must end within 5 s on a busy host.
 */
export const FILE_PAGE_ROWS = 1_000;
const FILE_UPDATE_ROWS = 5_000;

async function inPages<T>(items: readonly T[], write: (page: readonly T[]) => Promise<void>): Promise<void> {
  for (let at = 0; at < items.length; at += FILE_UPDATE_ROWS) await write(items.slice(at, at + FILE_UPDATE_ROWS));
}

/** Reads pages of rows ordered by position until one comes back short. */
async function* pagesByPosition<T extends { position: number }>(read: (after: number, take: number) => Promise<T[]>): AsyncGenerator<T[]> {
  for (let after = -1; ; ) {
    const page = await read(after, FILE_PAGE_ROWS);
    if (page.length > 0) yield page;
    if (page.length < FILE_PAGE_ROWS) return;
    after = page[page.length - 1]!.position;
  }
}

/** A file as inserted: its sealed headers (and their names) or its source, when it has them. */
export interface NewJobFileRow {
  url: string;
  filename?: string | null;
  sealedHeaders?: string | null;
  headerNames?: readonly string[];
  sourceId?: string | null;
}

/** A job's files as created: in input order, all in `zipId` when the bin is known up front. */
export async function insertJobFiles(tx: DbTx, jobId: string, files: readonly NewJobFileRow[], zipId: string | null): Promise<void> {
  // One statement for any number of files (20,000 rows in a few tens of ms): the request's body
  // holds them all already. Header names are HTTP tokens (no commas): stored joined.
  await tx.$executeRaw`
    INSERT INTO job_files (job_id, position, url, filename, zip_id, headers, header_names, source_id)
    SELECT ${jobId}::uuid, f.position - 1, f.url, f.filename, ${zipId}, f.headers, f.header_names, f.source_id
      FROM unnest(${files.map((f) => f.url)}::text[], ${files.map((f) => f.filename ?? null)}::text[], ${files.map((f) => f.sealedHeaders ?? null)}::text[],
                  ${files.map((f) => (f.headerNames?.length ? f.headerNames.join(',') : null))}::text[], ${files.map((f) => f.sourceId ?? null)}::uuid[])
           WITH ORDINALITY AS f(url, filename, headers, header_names, source_id, position)`;
}

/** A job's files as given (what replaceJobFiles writes back), in input order. */
export function filesAsGiven(db: DbTx, jobId: string): Promise<Array<Pick<JobFileRow, 'position' | 'url' | 'filename' | 'headers' | 'sourceId'> & { headerNames: string | null }>> {
  return db.jobFile.findMany({ where: { jobId }, orderBy: { position: 'asc' }, select: { position: true, url: true, filename: true, headers: true, headerNames: true, sourceId: true } });
}

/** A job's files replaced (its prefix entries listed): the new rows numbered from 0 in order. */
export async function replaceJobFiles(tx: DbTx, jobId: string, files: readonly NewJobFileRow[]): Promise<void> {
  await tx.jobFile.deleteMany({ where: { jobId } });
  await insertJobFiles(tx, jobId, files, null);
}

/** A file to probe. */
export type FileToProbe = Pick<JobFileRow, 'position' | 'url' | 'filename' | 'headers' | 'sourceId'>;

/** Every file of a job, to probe: in input order, a page at a time. */
export function filesToProbe(db: DbTx, jobId: string): AsyncGenerator<FileToProbe[]> {
  return pagesByPosition((after, take) =>
    db.jobFile.findMany({ where: { jobId, position: { gt: after } }, orderBy: { position: 'asc' }, take, select: { position: true, url: true, filename: true, headers: true, sourceId: true } }),
  );
}

/** What preparing learned of a file: its probe, entry name, failure and bin. */
export type ProbedFileRecord = Pick<JobFileRow, 'position' | 'etag' | 'lastModified' | 'entryName' | 'error' | 'zipId'> & { size: number | null };

/** Records every file's probe result and bin, up to 5,000 files a statement. */
export async function recordProbedFiles(tx: DbTx, jobId: string, all: readonly ProbedFileRecord[]): Promise<void> {
  await inPages(all, (files) => recordProbedPage(tx, jobId, files));
}

async function recordProbedPage(tx: DbTx, jobId: string, files: readonly ProbedFileRecord[]): Promise<void> {
  await tx.$executeRaw`
    UPDATE job_files AS f
       SET size = u.size, etag = u.etag, last_modified = u.last_modified, entry_name = u.entry_name, error = u.error, zip_id = u.zip_id
      FROM unnest(
             ${files.map((f) => f.position)}::int[],
             ${files.map((f) => (f.size === null ? null : String(f.size)))}::bigint[],
             ${files.map((f) => f.etag)}::text[],
             ${files.map((f) => f.lastModified)}::text[],
             ${files.map((f) => f.entryName)}::text[],
             ${files.map((f) => f.error)}::text[],
             ${files.map((f) => f.zipId)}::text[]
           ) AS u(position, size, etag, last_modified, entry_name, error, zip_id)
     WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
}

/** The files of a bin whose URL has not failed, in archive order (read a page at a time). */
export async function binFiles(db: DbTx, zipId: string): Promise<BinFileRow[]> {
  const rows: BinFileRow[] = [];
  const pages = pagesByPosition((after, take) => db.jobFile.findMany({ where: { zipId, error: null, position: { gt: after } }, orderBy: { position: 'asc' }, take, select: BIN_FILE_SELECT }));
  for await (const page of pages) for (const row of page) rows.push(row);
  return rows;
}

/** A job's files as its views show them, in input order, a page at a time. */
export function jobFileViewPages(db: DbTx, jobId: string): AsyncGenerator<(JobFileView & { position: number })[]> {
  return pagesByPosition((after, take) =>
    db.jobFile.findMany({ where: { jobId, position: { gt: after } }, orderBy: { position: 'asc' }, take, select: { position: true, url: true, filename: true, error: true, zipId: true, headerNames: true } }),
  );
}

/** A job's files as its views show them, in input order. */
export async function jobFileViews(db: DbTx, jobId: string): Promise<JobFileView[]> {
  const views: JobFileView[] = [];
  for await (const page of jobFileViewPages(db, jobId)) for (const { position: _, ...view } of page) views.push(view);
  return views;
}

/** A job's failed files (URL, why, bin), in input order: what its events list under `errors`. */
export function failedFiles(db: DbTx, jobId: string): Promise<Pick<JobFileRow, 'url' | 'error' | 'zipId'>[]> {
  return db.jobFile.findMany({ where: { jobId, error: { not: null } }, orderBy: { position: 'asc' }, select: { url: true, error: true, zipId: true } });
}

/** URLs that failed, with why: listed under their URLs in the job's view. */
export async function recordFileErrors(tx: DbTx, jobId: string, failures: readonly { position: number; error: string }[]): Promise<void> {
  for (const f of failures) {
    await tx.jobFile.update({ where: { jobId_position: { jobId, position: f.position } }, data: { error: f.error } });
  }
}

/**
 * Entries as they went into a ZIP: name and size, and the validators of the responses they came
 * from when given (given by none, the probed ones stay). One statement for 10,000 small files.
 */
export async function recordEntries(
  tx: DbTx,
  jobId: string,
  entries: readonly { position: number; entryName: string; size: number; etag?: string | null; lastModified?: string | null }[],
): Promise<void> {
  await inPages(entries, (page) => recordEntryPage(tx, jobId, page));
}

async function recordEntryPage(
  tx: DbTx,
  jobId: string,
  entries: readonly { position: number; entryName: string; size: number; etag?: string | null; lastModified?: string | null }[],
): Promise<void> {
  const positions = entries.map((e) => e.position);
  const names = entries.map((e) => e.entryName);
  const sizes = entries.map((e) => String(e.size));
  if (entries.every((e) => e.etag === undefined && e.lastModified === undefined)) {
    await tx.$executeRaw`
      UPDATE job_files AS f SET entry_name = u.entry_name, size = u.size
        FROM unnest(${positions}::int[], ${names}::text[], ${sizes}::bigint[]) AS u(position, entry_name, size)
       WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
    return;
  }
  await tx.$executeRaw`
    UPDATE job_files AS f SET entry_name = u.name, size = u.size, etag = u.etag, last_modified = u.last_modified
      FROM unnest(${positions}::int[], ${names}::text[], ${sizes}::bigint[],
                  ${entries.map((e) => e.etag ?? null)}::text[], ${entries.map((e) => e.lastModified ?? null)}::text[]) AS u(position, name, size, etag, last_modified)
     WHERE f.job_id = ${jobId}::uuid AND f.position = u.position`;
}

/**
 * A bin packed again from its start: what an earlier attempt recorded for a resume (CRCs,
 * checkpoints) no longer applies; an as-written bin's names, sizes and validators come from the
 * new responses.
 */
export async function resetBinFilesForRepack(db: DbTx, zipId: string, asWritten: boolean): Promise<void> {
  await db.jobFile.updateMany({
    where: { zipId, error: null },
    data: { crc32: null, crcPrefix: null, crcPrefixLen: null, aesMac: null, ...(asWritten ? { entryName: null, size: null, etag: null, lastModified: null } : {}) },
  });
}

/** Learned MACs of encrypted entries (WinZip AES), in one statement. */
export async function recordMacs(db: DbTx, macs: readonly { jobId: string; position: number; mac: Buffer }[]): Promise<void> {
  if (macs.length === 0) return;
  await db.$executeRaw`
    UPDATE job_files AS f SET aes_mac = v.mac
    FROM unnest(${macs.map((m) => m.jobId)}::uuid[], ${macs.map((m) => m.position)}::int[], ${macs.map((m) => m.mac)}::bytea[]) AS v(job_id, position, mac)
    WHERE f.job_id = v.job_id AND f.position = v.position`;
}

/** Learned CRC-32s, up to 5,000 a statement; a file's checkpoint goes with it. Stored `crc | 0`. */
export async function recordCrcs(db: DbTx, all: readonly { jobId: string; position: number; crc: number }[]): Promise<void> {
  await inPages(all, (crcs) => db.$executeRaw`
    UPDATE job_files AS f SET crc32 = v.crc, crc_prefix = NULL, crc_prefix_length = NULL
    FROM unnest(${crcs.map((c) => c.jobId)}::uuid[], ${crcs.map((c) => c.position)}::int[], ${crcs.map((c) => c.crc | 0)}::int[]) AS v(job_id, position, crc)
    WHERE f.job_id = v.job_id AND f.position = v.position`.then(() => undefined));
}

/** A file whose origin served other bytes than those learned: its CRC, MAC and checkpoint are learned again. */
export async function forgetLearnedSums(db: DbTx, jobId: string, position: number, aesGeneration?: number): Promise<void> {
  // An encrypted entry found serving other bytes gets a fresh salt, once per generation seen;
  // one statement, so no request reads the sums gone under the old salt.
  const next = aesGeneration === undefined ? null : aesGeneration + 1;
  await db.$executeRaw`
    UPDATE job_files SET crc32 = NULL, aes_mac = NULL, crc_prefix = NULL, crc_prefix_length = NULL,
      aes_generation = CASE WHEN ${next}::int IS NOT NULL AND aes_generation = ${next}::int - 1 THEN ${next}::int ELSE aes_generation END
    WHERE job_id = ${jobId}::uuid AND position = ${position}`;
}

/** The plaintext block digests some encrypted entries' salt generations have claimed, by position, then block: one query. */
export async function blockDigestsOf(db: DbTx, jobId: string, files: readonly { position: number; generation: number }[]): Promise<Map<number, Map<number, Buffer>>> {
  const out = new Map(files.map((f) => [f.position, new Map<number, Buffer>()]));
  if (files.length === 0) return out;
  const generation = new Map(files.map((f) => [f.position, f.generation]));
  const rows = await db.jobFileBlock.findMany({ where: { jobId, position: { in: files.map((f) => f.position) } }, select: { position: true, generation: true, block: true, digest: true } });
  for (const r of rows) if (generation.get(r.position) === r.generation) out.get(r.position)!.set(r.block, Buffer.from(r.digest));
  return out;
}

/**
 * What a stored bin's upload encrypted, block by block (a later upload of the bin writes over
 * an earlier one's): a resume checks the origin still serves those bytes.
 */
export async function recordBlockDigests(db: DbTx, jobId: string, position: number, generation: number, digests: readonly { block: number; digest: Buffer }[]): Promise<void> {
  if (digests.length === 0) return;
  await db.$executeRaw`
    INSERT INTO job_file_blocks (job_id, position, generation, block, digest)
    SELECT ${jobId}::uuid, ${position}, ${generation}, b.block, b.digest
    FROM unnest(${digests.map((d) => d.block)}::int[], ${digests.map((d) => d.digest)}::bytea[]) AS b(block, digest)
    ON CONFLICT (job_id, position, generation, block) DO UPDATE SET digest = EXCLUDED.digest`;
}

/** One block of an encrypted entry's keystream, with the digest of the plaintext to encrypt there. */
export interface BlockClaim {
  jobId: string;
  position: number;
  generation: number;
  block: number;
  digest: Buffer;
}

/**
 * Claims blocks of encrypted entries' keystreams for the plaintexts with these digests, where
 * no digest is there already; returns the digest that holds for each, in order (the first
 * claim wins, atomically: of two replicas racing for a block, one).
 */
export async function claimBlockDigests(db: DbTx, claims: readonly BlockClaim[]): Promise<Buffer[]> {
  if (claims.length === 0) return [];
  const column = <T>(pick: (c: BlockClaim) => T) => claims.map(pick);
  await db.$executeRaw`
    INSERT INTO job_file_blocks (job_id, position, generation, block, digest)
    SELECT * FROM unnest(${column((c) => c.jobId)}::uuid[], ${column((c) => c.position)}::int[], ${column((c) => c.generation)}::int[], ${column((c) => c.block)}::int[], ${column((c) => c.digest)}::bytea[])
    ON CONFLICT DO NOTHING`;
  const held = await db.$queryRaw<{ i: number; digest: Uint8Array }[]>`
    SELECT w.i, b.digest FROM unnest(${column((c) => c.jobId)}::uuid[], ${column((c) => c.position)}::int[], ${column((c) => c.generation)}::int[], ${column((c) => c.block)}::int[]) WITH ORDINALITY AS w(job_id, position, generation, block, i)
    JOIN job_file_blocks b USING (job_id, position, generation, block)`;
  const out = claims.map((c) => c.digest);
  for (const h of held) out[Number(h.i) - 1] = Buffer.from(h.digest);
  return out;
}

/** A resume checkpoint of a body whose CRC is not known, only ever moved forward. */
export async function recordCrcCheckpoint(db: DbTx, jobId: string, position: number, state: { crc: number; length: number }): Promise<void> {
  // Only forward: a later, shorter disconnect must not undo a longer checkpoint.
  await db.$executeRaw`
    UPDATE job_files SET crc_prefix = ${state.crc | 0}, crc_prefix_length = ${BigInt(state.length)}
    WHERE job_id = ${jobId}::uuid AND position = ${position} AND crc32 IS NULL
      AND (crc_prefix_length IS NULL OR crc_prefix_length < ${BigInt(state.length)})`;
}

/** A retry from the last checkpoint: the files of the bins run again are no longer failed. */
export async function clearFileErrors(tx: DbTx, jobId: string, zipIds: readonly string[]): Promise<void> {
  await tx.jobFile.updateMany({ where: { jobId, zipId: { in: [...zipIds] } }, data: { error: null } });
}

/** A retry from scratch: the files are as created, in no bin. */
export async function resetJobFiles(tx: DbTx, jobId: string): Promise<void> {
  await tx.jobFile.updateMany({
    where: { jobId },
    // A re-probe may find changed files: no CRC or checkpoint of the old bytes may survive.
    data: { zipId: null, size: null, etag: null, lastModified: null, entryName: null, crc32: null, crcPrefix: null, crcPrefixLen: null, error: null },
  });
}

/** Every file of the job goes into the one bin `zipId` (a plain stored job's single ZIP). */
export async function assignJobFilesToBin(tx: DbTx, jobId: string, zipId: string): Promise<void> {
  await tx.jobFile.updateMany({ where: { jobId }, data: { zipId } });
}

