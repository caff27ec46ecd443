// Admission of a new job: everything between a valid request and the rows createJob writes.
// The plan's limits (archive size, files, retention), the stored quota, the user's sources for
// s3:// files, the single ZIP's name, and the sealing of request headers and the archive
// password (under the job's id, so the id is chosen here).
import { randomUUID } from 'node:crypto';
import { ApiError, ARCHIVE_EXTENSIONS, checkArchiveLimit, checkPlanLimits, headerNamesOf, isPrefixEntry, renderZipFilenames, type JobCreateRequest } from '@ap/contract';
import type { Db, Plan } from '@ap/db';
import { archiveOptionColumns, fileHeadersPlace, needsPreparing, STORED_QUOTA_USED_UP, storedQuotaExceeded, type NewJob } from '@ap/jobs';
import type { SecretBox } from '@ap/secrets';
import { destinationWithSource, filesWithSources } from '../routes/sources';

export interface AdmissionDeps {
  db: Db;
  /** Seals the files' request headers and an encrypted job's archive password. */
  secrets: Pick<SecretBox, 'seal'>;
}

/** A job create request admitted for this user, as the plain new job createJob writes; else the ApiError saying why not. */
export async function admitJob(deps: AdmissionDeps, user: { id: string; plan: Plan; overageEnabled: boolean }, body: JobCreateRequest): Promise<NewJob> {
  // Folder entries are not written yet (docs/archive-options.md#formats-and-contents): refused, never ignored.
  if (body.folders && body.folders.length > 0) throw new ApiError('INVALID_REQUEST', 'folders: empty folder entries are not supported yet by this server');
  const archiveProblem = checkArchiveLimit(user.plan, body.mode, body.max_zip_size_bytes ?? null);
  if (archiveProblem) throw new ApiError('INVALID_REQUEST', archiveProblem);
  const files = await filesWithSources(deps.db, user.id, body.files);
  const destination = await destinationWithSource(deps.db, user.id, body.destination);
  const planProblem = checkPlanLimits(user.plan, body);
  if (planProblem) throw new ApiError('PLAN_LIMIT_EXCEEDED', planProblem.message);
  if (body.mode === 'stored' && !user.overageEnabled && (await storedQuotaExceeded(deps.db, user))) {
    throw new ApiError('QUOTA_EXCEEDED', STORED_QUOTA_USED_UP);
  }

  const id = randomUUID();
  const createdAt = new Date();
  const maxZipSizeBytes = body.max_zip_size_bytes ?? null;
  let singleZipFilename: string | null = null;
  if (!needsPreparing({ mode: body.mode, maxZipSizeBytes, prefixEntries: files.filter(isPrefixEntry).length })) {
    // Templates know the job's id and date; a split or stream job's names are rendered once its bins are known.
    const rendered = renderZipFilenames({ template: body.zip_filename ?? null, jobId: id, createdAt, total: 1, extension: ARCHIVE_EXTENSIONS[body.format] });
    if (!rendered.ok) throw new ApiError('INVALID_REQUEST', rendered.message);
    singleZipFilename = rendered.names[0]!;
  }
  const encryption = body.encryption;
  return {
    id,
    createdAt,
    userId: user.id,
    mode: body.mode,
    files: files.map(({ url, filename, headers, sourceId }, position) => {
      const base = { url, filename: filename ?? null, sourceId };
      if (!headers || Object.keys(headers).length === 0) return base;
      return { ...base, sealedHeaders: deps.secrets.seal(JSON.stringify(headers), fileHeadersPlace(id, position)), headerNames: headerNamesOf(headers) };
    }),
    zipFilename: body.zip_filename ?? null,
    singleZipFilename,
    expiresIn: body.expires_in,
    failOnUrlError: body.fail_on_url_error,
    metadata: body.metadata ?? null,
    maxZipSizeBytes,
    splitStrategy: body.split_strategy,
    allowOversizeZips: body.allow_oversize_zips,
    failOnZipError: body.fail_on_zip_error,
    destination,
    archiveOptions: archiveOptionColumns(id, {
      compression: body.compression,
      compressionLevel: body.compression_level ?? null,
      encryption: encryption ? { method: encryption.method, seal: (place) => deps.secrets.seal(encryption.password, place) } : null,
      format: body.format,
      folders: body.folders ?? null,
      manifest: body.manifest,
    }),
  };
}
