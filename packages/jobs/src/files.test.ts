// The job_files owner's operations against the run's Postgres: what each writes, and the rules
// they carry (CRCs stored signed and read back unsigned, checkpoints only moving forward, a
// bin's files in archive order without failed URLs).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createDb, type Db } from '@ap/db';
import { planZip } from '@ap/zip';
import {
  binFiles,
  entryNameOf,
  insertJobFiles,
  jobFileViews,
  layoutOfFiles,
  recordCrcCheckpoint,
  recordCrcs,
  recordEntries,
  recordFileErrors,
  recordProbedFiles,
  resetBinFilesForRepack,
} from './files';

let db: Db;
beforeAll(() => {
  db = createDb(process.env.DATABASE_URL!, 2);
});
afterAll(async () => {
  await db.$disconnect();
});

async function newJob(urls: string[]): Promise<{ jobId: string; zipId: string }> {
  const user = await db.user.create({ data: { email: `files-${randomUUID()}@example.test` } });
  const jobId = randomUUID();
  const zipId = `z-${randomUUID()}`;
  await db.job.create({ data: { id: jobId, userId: user.id, status: 'pending', expiresIn: 3600, urlCount: urls.length, expiresAt: new Date(Date.now() + 3600_000) } });
  await db.zip.create({ data: { id: zipId, jobId, sequence: 1, filename: 'a.zip' } });
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
      { url: 'http://o/a', filename: 'given.txt', error: null, zipId },
      { url: 'http://o/b', filename: null, error: null, zipId },
      { url: 'http://o/c', filename: null, error: null, zipId },
    ]);
    await recordProbedFiles(db, jobId, [
      { position: 0, size: 10, etag: '"e"', lastModified: null, entryName: 'given.txt', error: null, zipId },
      { position: 1, size: null, etag: null, lastModified: null, entryName: null, error: 'gone', zipId: null },
      { position: 2, size: 5, etag: null, lastModified: 'Mon, 01 Jan 2026 00:00:00 GMT', entryName: 'c', error: null, zipId },
    ]);
    await recordFileErrors(db, jobId, [{ position: 2, error: 'broke' }]);
    expect((await jobFileViews(db, jobId)).map((f) => f.error)).toEqual([null, 'gone', 'broke']);
    const files = await binFiles(db, zipId);
    expect(files).toEqual([
      { position: 0, url: 'http://o/a', filename: 'given.txt', size: 10n, etag: '"e"', lastModified: null, entryName: 'given.txt', crc32: null, crcPrefix: null, crcPrefixLen: null },
    ]);
    expect(layoutOfFiles(files, new Date(0))).toEqual(planZip([{ name: 'given.txt', size: 10 }], { mtime: new Date(0) }));
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

  it('names an entry from the given name, else the response', () => {
    expect(entryNameOf({ position: 0, filename: 'x/y.txt' }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('x/y.txt');
    expect(entryNameOf({ position: 0, filename: null }, { contentDisposition: 'attachment; filename="h.bin"', finalUrl: 'http://o/u.dat' })).toBe('h.bin');
    expect(entryNameOf({ position: 0, filename: null }, { finalUrl: 'http://o/u.dat' })).toBe('u.dat');
  });
});
