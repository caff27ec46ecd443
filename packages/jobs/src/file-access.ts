// How each file of a job is read (docs/private-sources.md#the-rules): its sealed request headers
// opened, or its source's credentials. Opened where the bytes are fetched, just before use, and
// handed to the fetcher only: never logged, queued or returned.
import { binFiles, sourcesWithSecrets, type BinFileRow, type DbTx } from '@ap/db';
import type { FileAccess, S3Credentials } from '@ap/fetch';
import type { SecretBox } from '@ap/secrets';
import { sourceSecretPlace } from './sources';

export const fileHeadersPlace = (jobId: string, position: number) => `job_files.headers:${jobId}/${position}`;

/** What a file row holds about its access. */
export interface FileAccessColumns {
  position: number;
  headers: string | null;
  sourceId: string | null;
}

/** The access of each file that needs one, by position; files read as plain URLs are absent. */
export async function fileAccessOf(db: DbTx, secrets: Pick<SecretBox, 'open'>, jobId: string, files: readonly FileAccessColumns[]): Promise<Map<number, FileAccess>> {
  const out = new Map<number, FileAccess>();
  const sources = await sourcesWithSecrets(db, files.flatMap((f) => (f.sourceId ? [f.sourceId] : [])));
  const credentials = new Map<string, S3Credentials>(
    sources.map((s) => [
      s.id,
      { sourceId: s.id, region: s.region, endpoint: s.endpoint, forcePathStyle: s.forcePathStyle, accessKeyId: s.accessKeyId, secretAccessKey: secrets.open(s.secretAccessKey, sourceSecretPlace(s.id)) },
    ]),
  );
  for (const f of files) {
    if (f.sourceId) {
      const s3 = credentials.get(f.sourceId);
      out.set(f.position, s3 ? { s3 } : { unavailable: 'source deleted' });
    } else if (f.headers) {
      out.set(f.position, { headers: JSON.parse(secrets.open(f.headers, fileHeadersPlace(jobId, f.position))) as Record<string, string> });
    }
  }
  return out;
}

/** A bin's files (binFiles) with how each is read. */
export async function binFilesWithAccess(db: DbTx, secrets: Pick<SecretBox, 'open'>, jobId: string, zipId: string): Promise<(BinFileRow & { access?: FileAccess })[]> {
  const rows = await binFiles(db, zipId);
  const access = await fileAccessOf(db, secrets, jobId, rows);
  return rows.map((row) => {
    const a = access.get(row.position);
    return a ? { ...row, access: a } : row;
  });
}
