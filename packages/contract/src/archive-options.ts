// The archive options of a job (docs/archive-options.md#the-rules): compression and encryption.
// - `compression_level` is only for `compression: "deflate"` (with "store" it would do nothing,
//   so it is refused as the typo it probably is); deflate is for stored jobs only: a stream
//   ZIP's exact size is known before its bodies are, a deflated one's is not.
// - The password is 8 to 128 characters (code points); no message ever repeats it.
// - Deflate and AES-256 combine (stored jobs): each entry is deflated, then encrypted.
import { z } from 'zod';
import { codePointLength } from './text';

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
};

/** Combinations the fields alone cannot refuse: the field to name and why. */
export function archiveOptionsProblem(body: {
  mode: string;
  compression: Compression;
  compression_level?: number | null | undefined;
  encryption?: unknown;
}): { path: string; message: string } | null {
  if (body.compression === 'deflate' && body.mode === 'stream') {
    return { path: 'compression', message: 'must be "store" in stream mode (a deflated ZIP has no exact size before its files are read)' };
  }
  if (body.compression_level !== null && body.compression_level !== undefined && body.compression !== 'deflate') {
    return { path: 'compression_level', message: 'is only for compression "deflate"' };
  }
  return null;
}

/** What read responses show of a job's encryption: the method, never the password. */
export const encryptionViewSchema = z.strictObject({ method: z.enum(ENCRYPTION_METHODS) }).meta({ id: 'EncryptionView' });
