// A job's archive options as the jobs table holds them, and the learned MACs of job_files.
import { randomBytes } from 'node:crypto';
import { archiveFormatOf, COMPRESSION_LEVEL_DEFAULT, type ArchiveFormat, type Compression } from '@ap/contract';
import { ZipEncryption } from '@ap/zip';

/** Where a job's sealed archive password lives: the associated data of its seal. */
export const encryptionPasswordPlace = (jobId: string) => `jobs.encryption_password:${jobId}`;

/** Seals a password for a place; the caller's SecretBox, so the password never reaches this package. */
export type SealFor = (place: string) => string;

/** The columns a new job's archive options fill. */
export function archiveOptionColumns(
  jobId: string,
  options: {
    compression: Compression;
    compressionLevel: number | null;
    encryption: { method: 'aes-256'; seal: SealFor } | null;
    format?: ArchiveFormat;
    folders?: readonly string[] | null;
    manifest?: boolean;
  },
) {
  const format = options.format ?? 'zip';
  return {
    compression: options.compression,
    compressionLevel: options.compression === 'deflate' || format === 'tar.gz' ? options.compressionLevel : null,
    format,
    folders: options.folders && options.folders.length > 0 ? [...options.folders] : undefined,
    manifest: options.manifest ?? false,
    encryptionMethod: options.encryption?.method ?? null,
    encryptionPassword: options.encryption ? options.encryption.seal(encryptionPasswordPlace(jobId)) : null,
    // Salts derive from this seed, not from SECRETS_KEY: rotating that key must not change the
    // bytes of a ZIP already served (a resumed download would mix two archives).
    encryptionSeed: options.encryption ? new Uint8Array(randomBytes(32)) : null,
  };
}

export type ArchiveOptionColumns = ReturnType<typeof archiveOptionColumns>;

/** The archive-option columns of a job row. */
export interface JobArchiveOptions {
  id: string;
  compression: string;
  compressionLevel: number | null;
  encryptionMethod: string | null;
  encryptionPassword: string | null;
  encryptionSeed: Uint8Array | null;
}

export const JOB_ARCHIVE_OPTIONS_SELECT = {
  id: true,
  compression: true,
  compressionLevel: true,
  encryptionMethod: true,
  encryptionPassword: true,
  encryptionSeed: true,
} as const;

/** The encryption of one of the job's ZIPs (by its sequence), or null for a plain job. */
export function zipEncryptionOf(job: JobArchiveOptions & { userId?: string }, zipSequence: number, open: (sealed: string, place: string) => string, generations?: readonly number[]): ZipEncryption | null {
  if (job.encryptionMethod === null) return null;
  if (job.encryptionPassword === null || job.encryptionSeed === null) throw new Error(`job ${job.id}: encryption without its password or seed`);
  // Key derivations wait for their user's turn (docs/archive-options.md#key-derivation).
  return new ZipEncryption(open(job.encryptionPassword, encryptionPasswordPlace(job.id)), Buffer.from(job.encryptionSeed), zipSequence, undefined, generations, job.userId ?? job.id);
}

/** The gzip level of a tar.gz job, or null for any other format. */
export function gzipLevelOf(job: { format: string; compressionLevel: number | null }): number | null {
  return archiveFormatOf(job.format) === 'tar.gz' ? (job.compressionLevel ?? COMPRESSION_LEVEL_DEFAULT) : null;
}

/** The folders a job asked for (a JSON array of names ending in "/"). */
export function foldersOf(job: { folders: unknown }): string[] {
  return Array.isArray(job.folders) ? job.folders.filter((f): f is string => typeof f === 'string') : [];
}

/** The deflate level of a job, or null when it stores. */
export function deflateLevelOf(job: Pick<JobArchiveOptions, 'compression' | 'compressionLevel'>): number | null {
  return job.compression === 'deflate' ? (job.compressionLevel ?? 6) : null;
}
