// The job_files, zips and zip_parts owners' operations against the run's Postgres: what each
// writes, and the rules they carry (CRCs stored signed and read back unsigned, checkpoints only
// moving forward, a bin's files in archive order without failed URLs, a lease held by one).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import {
  binFiles,
  binLeaseRemainingMs,
  binUploadParts,
  binWithJob,
  createBins,
  createSingleBin,
  failedFiles,
  forgetBinUpload,
  insertJobFiles,
  jobBins,
  jobFileViews,
  markBinCompleted,
  markBinFailed,
  markBinUploadNotResumable,
  recordBinPart,
  recordBinUpload,
  recordCrcCheckpoint,
  recordCrcs,
  recordMacs,
  recordEntries,
  recordFileErrors,
  recordProbedFiles,
  releaseBinLease,
  renewBinLease,
  resetBinFilesForRepack,
  takeBinLease,
} from './index';
import { createDb, type Db } from './client';

let db: Db;
beforeAll(() => {
  db = createDb(process.env.DATABASE_URL!, 2);
});
afterAll(async () => {
  await db.user.deleteMany({ where: { id: { in: users } } });
  await db.$disconnect();
});

const users: string[] = [];

/**
 * A job with one bin holding these files. The job is marked completed so that no reconciler
 * run (other test files share this database) takes its bins for lost work.
 */
async function newJob(urls: string[]): Promise<{ jobId: string; zipId: string }> {
  const user = await db.user.create({ data: { email: `files-${randomUUID()}@example.test` } });
  users.push(user.id);
  const jobId = randomUUID();
  const zipId = `z-${randomUUID()}`;
  await db.job.create({ data: { id: jobId, userId: user.id, status: 'completed', expiresIn: 3600, urlCount: urls.length, expiresAt: new Date(Date.now() + 3600_000) } });
  await createSingleBin(db, { id: zipId, jobId, filename: 'a.zip', fileCount: urls.length });
  await insertJobFiles(
    db,
    jobId,
    urls.map((url, i) => ({ url, filename: i === 0 ? 'given.txt' : null })),
    zipId,
  );
  return { jobId, zipId };
}

describe('job_files operations', () => {
  it('create, probe, errors and the bin view: in order, failed URLs left out of the bin', async () => {
    const { jobId, zipId } = await newJob(['http://o/a', 'http://o/b', 'http://o/c']);
    expect(await jobFileViews(db, jobId)).toEqual([
      { url: 'http://o/a', filename: 'given.txt', error: null, zipId, headerNames: null },
      { url: 'http://o/b', filename: null, error: null, zipId, headerNames: null },
      { url: 'http://o/c', filename: null, error: null, zipId, headerNames: null },
    ]);
    await recordProbedFiles(db, jobId, [
      { position: 0, size: 10, etag: '"e"', lastModified: null, entryName: 'given.txt', error: null, zipId },
      { position: 1, size: null, etag: null, lastModified: null, entryName: null, error: 'gone', zipId: null },
      { position: 2, size: 5, etag: null, lastModified: 'Mon, 01 Jan 2026 00:00:00 GMT', entryName: 'c', error: null, zipId },
    ]);
    await recordFileErrors(db, jobId, [{ position: 2, error: 'broke' }]);
    expect((await jobFileViews(db, jobId)).map((f) => f.error)).toEqual([null, 'gone', 'broke']);
    expect(await failedFiles(db, jobId)).toEqual([
      { url: 'http://o/b', error: 'gone', zipId: null },
      { url: 'http://o/c', error: 'broke', zipId },
    ]);
    expect(await binFiles(db, zipId)).toEqual([
      { position: 0, url: 'http://o/a', filename: 'given.txt', size: 10n, etag: '"e"', lastModified: null, entryName: 'given.txt', crc32: null, crcPrefix: null, crcPrefixLen: null, aesMac: null, aesGeneration: 0, headers: null, sourceId: null },
    ]);
  });

  it('AES MACs are stored as learned, read back as bytes, and dropped by a repack', async () => {
    const { jobId, zipId } = await newJob(['http://o/a', 'http://o/b']);
    const mac = Buffer.from('0123456789abcdef0123', 'hex');
    await recordMacs(db, [{ jobId, position: 1, mac }]);
    let [a, b] = await binFiles(db, zipId);
    expect([a!.aesMac, Buffer.from(b!.aesMac!).equals(mac)]).toEqual([null, true]);
    await resetBinFilesForRepack(db, zipId, false);
    [a, b] = await binFiles(db, zipId);
    expect(b!.aesMac).toBeNull();
  });

  it('CRCs stored signed and read unsigned; checkpoints only forward, and dropped by a CRC or a repack', async () => {
    const { jobId, zipId } = await newJob(['http://o/a', 'http://o/b']);
    await recordCrcCheckpoint(db, jobId, 0, { length: 100, crc: 0xfffffff0 });
    await recordCrcCheckpoint(db, jobId, 0, { length: 50, crc: 1 });
    await recordCrcCheckpoint(db, jobId, 1, { length: 7, crc: 7 });
    let [a, b] = await binFiles(db, zipId);
    expect([a!.crcPrefixLen, a!.crcPrefix! >>> 0]).toEqual([100n, 0xfffffff0]);
    await recordCrcs(db, [{ jobId, position: 0, crc: 0xdeadbeef }]);
    [a, b] = await binFiles(db, zipId);
    expect([a!.crc32! >>> 0, a!.crcPrefix, a!.crcPrefixLen, b!.crcPrefixLen]).toEqual([0xdeadbeef, null, null, 7n]);
    // A checkpoint never lands on a file whose CRC is known.
    await recordCrcCheckpoint(db, jobId, 0, { length: 200, crc: 2 });
    expect((await binFiles(db, zipId))[0]!.crcPrefixLen).toBeNull();

    await recordEntries(db, jobId, [{ position: 1, entryName: 'b.bin', size: 9, etag: '"w"', lastModified: null }]);
    await recordEntries(db, jobId, [{ position: 0, entryName: 'a.bin', size: 4 }]);
    [a, b] = await binFiles(db, zipId);
    expect([a!.entryName, a!.size, a!.etag, b!.entryName, b!.size, b!.etag]).toEqual(['a.bin', 4n, null, 'b.bin', 9n, '"w"']);
    await resetBinFilesForRepack(db, zipId, false);
    [a, b] = await binFiles(db, zipId);
    expect([a!.crc32, b!.crcPrefixLen, a!.entryName, b!.size]).toEqual([null, null, 'a.bin', 9n]);
    await resetBinFilesForRepack(db, zipId, true);
    [a, b] = await binFiles(db, zipId);
    expect([a!.entryName, a!.size, b!.etag]).toEqual([null, null, null]);
  });
});

describe('zips operations', () => {
  it('a bin leased, renewed, released, completed once by its holder, its upload records cleared', async () => {
    const { zipId } = await newJob(['http://o/a']);
    const bin = { zipId, attempt: 0 };
    // A bin over its user's cap is not admitted (fair share): no packer may take it yet.
    expect(await takeBinLease(db, bin, 'one', 60_000)).toBe(false);
    await db.zip.update({ where: { id: zipId }, data: { admittedAt: new Date() } });
    expect(await takeBinLease(db, bin, 'one', 60_000)).toBe(true);
    expect(await takeBinLease(db, bin, 'two', 60_000)).toBe(false);
    const remaining = await binLeaseRemainingMs(db, bin);
    expect(remaining).toBeGreaterThan(50_000);
    expect(remaining).toBeLessThanOrEqual(60_000);
    expect(await renewBinLease(db, bin, 'two', 60_000)).toBe(false);
    expect(await renewBinLease(db, bin, 'one', 60_000)).toBe(true);
    await releaseBinLease(db, zipId, 'two');
    expect((await binWithJob(db, zipId))!.leaseOwner).toBe('one');
    await releaseBinLease(db, zipId, 'one');
    expect(await takeBinLease(db, bin, 'two', 60_000)).toBe(true);

    await recordBinUpload(db, zipId, 'up-1', '5242880/as-written');
    await recordBinPart(db, zipId, 'up-1', { partNumber: 2, etag: '"p2"', size: 10 }, 5242880);
    await recordBinPart(db, zipId, 'up-1', { partNumber: 1, etag: '"p1"', size: 5242880 }, 5242880);
    await recordBinPart(db, zipId, 'up-1', { partNumber: 1, etag: '"p1b"', size: 5242880 }, 5242880);
    expect((await binUploadParts(db, zipId, 'up-1')).map((p) => [p.partNumber, p.etag, p.offset])).toEqual([
      [1, '"p1b"', 0n],
      [2, '"p2"', 5242880n],
    ]);
    await markBinUploadNotResumable(db, zipId);
    expect((await binWithJob(db, zipId))!).toMatchObject({ uploadId: 'up-1', uploadLayout: null });

    const done = { size: 123, etag: 'e', objectKey: 'k', fileCount: 1, completedAt: new Date() };
    expect(await markBinCompleted(db, { zipId, attempt: 0, leaseOwner: 'one' }, done)).toBe(false);
    expect(await markBinCompleted(db, { zipId, attempt: 0, leaseOwner: 'two' }, done)).toBe(true);
    const row = (await binWithJob(db, zipId))!;
    expect(row).toMatchObject({ status: 'completed', size: 123n, uploadId: null, uploadLayout: null, leaseOwner: null });
    expect(row.job.id).toBe(row.jobId);
    expect(await binUploadParts(db, zipId, 'up-1')).toEqual([]);
    expect(await markBinFailed(db, bin, 'late')).toBe(false);
  });

  it('bins created by preparing (stream ones complete at once), failed under their attempt only; an upload forgotten', async () => {
    const { jobId, zipId } = await newJob([]);
    const now = new Date();
    await createBins(db, jobId, 0, [{ id: `s-${randomUUID()}`, sequence: 2, filename: 'b.zip', fileCount: 2, plannedSize: 99 }], now);
    await createBins(db, jobId, 0, [{ id: `p-${randomUUID()}`, sequence: 3, filename: 'c.zip', fileCount: 1, plannedSize: null }], null);
    const bins = await jobBins(db, jobId);
    expect(bins.map((b) => [b.sequence, b.status, b.plannedSize, b.size])).toEqual([
      [1, 'pending', null, null],
      [2, 'completed', 99n, 99n],
      [3, 'pending', null, null],
    ]);
    expect(await markBinFailed(db, { zipId, attempt: 1 }, 'x')).toBe(false);
    expect(await markBinFailed(db, { zipId, attempt: 0 }, 'boom')).toBe(true);
    expect((await binWithJob(db, zipId))!).toMatchObject({ status: 'failed', error: 'boom' });
    await recordBinUpload(db, zipId, 'up-2', null);
    await recordBinPart(db, zipId, 'up-2', { partNumber: 1, etag: '"p"', size: 1 }, 5242880);
    await forgetBinUpload(db, zipId);
    expect((await binWithJob(db, zipId))!).toMatchObject({ uploadId: null, uploadLayout: null });
    expect(await binUploadParts(db, zipId, 'up-2')).toEqual([]);
  });
});
