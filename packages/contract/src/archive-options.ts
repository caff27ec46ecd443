// The archive options of a job (docs/archive-options.md#the-rules): compression and encryption.
// - `compression_level` is only for `compression: "deflate"` (with "store" it would do nothing,
//   so it is refused as the typo it probably is); deflate is for stored jobs only: a stream
//   ZIP's exact size is known before its bodies are, a deflated one's is not.
// - The password is 8 to 128 characters (code points); no message ever repeats it.
// - Deflate and AES-256 combine (stored jobs): each entry is deflated, then encrypted.
// - `format` (docs/archive-options.md#formats-and-contents): zip, tar or tar.gz. tar has neither
//   per-entry compression nor encryption; tar.gz is gzip over the whole tar, so it has no exact
//   size before its files are read (stored mode only), and takes `compression_level`.
// - `folders`: empty folders to include, each ending in "/"; `manifest`: a manifest.csv as the
//   last entry, stored mode only (its SHA-256s need every body read before the entry is written).
import { z } from 'zod';
import { validateGivenFilename } from './entry-names';
import { codePointLength } from './text';

export const ARCHIVE_FORMATS = ['zip', 'tar', 'tar.gz'] as const;
export type ArchiveFormat = (typeof ARCHIVE_FORMATS)[number];
/** The download's Content-Type per format. */
export const ARCHIVE_CONTENT_TYPES: Record<ArchiveFormat, string> = { zip: 'application/zip', tar: 'application/x-tar', 'tar.gz': 'application/gzip' };
/** The extension of a format's default names (and of split names without one). */
export const ARCHIVE_EXTENSIONS: Record<ArchiveFormat, string> = { zip: '.zip', tar: '.tar', 'tar.gz': '.tar.gz' };
/** The name of the manifest entry (`manifest: true`). */
export const MANIFEST_ENTRY_NAME = 'manifest.csv';

/** A job's format as stored (anything unknown reads as zip, the default). */
export function archiveFormatOf(value: string | null | undefined): ArchiveFormat {
  return (ARCHIVE_FORMATS as readonly string[]).includes(value ?? '') ? (value as ArchiveFormat) : 'zip';
}

export const COMPRESSIONS = ['store', 'deflate'] as const;
export type Compression = (typeof COMPRESSIONS)[number];
export const ENCRYPTION_METHODS = ['aes-256'] as const;
export type EncryptionMethod = (typeof ENCRYPTION_METHODS)[number];
export const COMPRESSION_LEVEL_DEFAULT = 6;
export const PASSWORD_MIN_CHARS = 8;
export const PASSWORD_MAX_CHARS = 128;

const must = (what: string) => ({ error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`) });

const passwordSchema = z.string(must('a string')).superRefine((value, ctx) => {
  const chars = codePointLength(value);
  if (chars < PASSWORD_MIN_CHARS || chars > PASSWORD_MAX_CHARS) {
    ctx.addIssue({ code: 'custom', message: `must be ${PASSWORD_MIN_CHARS} to ${PASSWORD_MAX_CHARS} characters (got ${chars})` });
  }
});

export const encryptionSchema = z
  .strictObject(
    {
      method: z.enum(ENCRYPTION_METHODS, must('"aes-256"')),
      password: passwordSchema.meta({ type: 'string', minLength: PASSWORD_MIN_CHARS, maxLength: PASSWORD_MAX_CHARS, writeOnly: true }),
    },
    must('an object like {"method": "aes-256", "password": "..."}'),
  )
  .meta({ id: 'Encryption', description: 'WinZip AES-256 (AE-2) for every entry; the password is stored encrypted and never returned' });

const folderNameSchema = z.string(must('a string')).superRefine((value, ctx) => {
  if (!value.endsWith('/')) return void ctx.addIssue({ code: 'custom', message: 'must end with "/" (a folder name, like "reports/2025/")' });
  const check = validateGivenFilename(value.slice(0, -1));
  if (!check.ok) ctx.addIssue({ code: 'custom', message: check.message });
});

/** The fields the job create body gains. */
export const archiveOptionFields = {
  compression: z.enum(COMPRESSIONS, must('"store" or "deflate"')).default('store'),
  compression_level: z
    .number(must('a whole number from 1 to 9, or null'))
    .superRefine((value, ctx) => {
      if (!Number.isInteger(value) || value < 1 || value > 9) ctx.addIssue({ code: 'custom', message: 'must be a whole number from 1 to 9, or null' });
    })
    .meta({ type: 'integer', minimum: 1, maximum: 9, description: `deflate level (default ${COMPRESSION_LEVEL_DEFAULT}); only with compression "deflate"` })
    .nullish(),
  encryption: encryptionSchema.nullish(),
  format: z.enum(ARCHIVE_FORMATS, must('"zip", "tar" or "tar.gz"')).default('zip'),
  folders: z
    .array(folderNameSchema, must('an array of folder names, each ending in "/"'))
    .meta({ description: 'empty folders to include, like "reports/2025/"; counted with files against the plan\'s files per job' })
    .optional(),
  manifest: z.boolean(must('true or false')).meta({ description: 'adds manifest.csv (name,size,sha256,url,error) as the last entry; stored mode only' }).default(false),
};

/** Combinations the fields alone cannot refuse: the field to name and why. */
export function archiveOptionsProblem(body: {
  mode: string;
  compression: Compression;
  compression_level?: number | null | undefined;
  encryption?: unknown;
  format?: ArchiveFormat;
  manifest?: boolean;
}): { path: string; message: string } | null {
  const format = body.format ?? 'zip';
  if (format !== 'zip' && body.encryption !== null && body.encryption !== undefined) {
    return { path: 'encryption', message: `is only for format "zip" (${format} has no encryption)` };
  }
  if (format !== 'zip' && body.compression === 'deflate') {
    return { path: 'compression', message: `must be "store" with format "${format}" (${format === 'tar' ? 'tar has no per-file compression: use format "tar.gz"' : 'tar.gz is compressed whole: set its level with compression_level'})` };
  }
  if (format === 'tar.gz' && body.mode === 'stream') {
    return { path: 'format', message: 'must be "zip" or "tar" in stream mode (a tar.gz has no exact size before its files are read)' };
  }
  if (body.manifest === true && body.mode === 'stream') {
    return { path: 'manifest', message: 'is only for stored jobs (its SHA-256s need every file read before the manifest is written)' };
  }
  if (body.compression === 'deflate' && body.mode === 'stream') {
    return { path: 'compression', message: 'must be "store" in stream mode (a deflated ZIP has no exact size before its files are read)' };
  }
  if (body.compression_level !== null && body.compression_level !== undefined && body.compression !== 'deflate' && format !== 'tar.gz') {
    return { path: 'compression_level', message: 'is only for compression "deflate" or format "tar.gz"' };
  }
  return null;
}

/** What read responses show of a job's encryption: the method, never the password. */
export const encryptionViewSchema = z.strictObject({ method: z.enum(ENCRYPTION_METHODS) }).meta({ id: 'EncryptionView' });
