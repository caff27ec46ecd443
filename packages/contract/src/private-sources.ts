// docs/private-sources.md#the-rules: per-file request headers, s3:// file entries and the sources
// that hold their credentials. Messages name fields and header names, never a header's value.
import { z } from 'zod';
import { stringRecordSchema } from './string-record';

export const FILE_HEADERS_MAX = 10;
export const HEADER_VALUE_MAX_CHARS = 4096;
export const SOURCE_TYPES = ['s3'] as const;

/** Headers the fetch layer sets itself, or that would change how the connection works. */
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'range', 'if-range', 'accept-encoding', 'te', 'upgrade']);

/** RFC 9110 token. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Why a header name is refused, or null. */
export function headerNameProblem(name: string): string | null {
  if (!HEADER_NAME.test(name)) return 'is not a valid header name (letters, digits and !#$%&\'*+.^_`|~- only)';
  const lower = name.toLowerCase();
  if (FORBIDDEN_HEADERS.has(lower) || lower.startsWith('proxy-')) return `is a header the service sets itself and cannot be given`;
  return null;
}

const shortName = (name: string) => JSON.stringify(name.length > 40 ? `${name.slice(0, 40)}…` : name);

/** `files[].headers`: at most 10 names to string values (validated by hand: no key dropped silently). */
export const fileHeadersSchema = stringRecordSchema('must be an object of header names to string values', (entries, problem) => {
  if (entries.length > FILE_HEADERS_MAX) problem(`must have at most ${FILE_HEADERS_MAX} headers (got ${entries.length})`);
  const seen = new Set<string>();
  for (const [name, v] of entries) {
    const nameProblem = headerNameProblem(name);
    if (nameProblem) problem(`header ${shortName(name)} ${nameProblem}`);
    else if (seen.has(name.toLowerCase())) problem(`header ${shortName(name)} is given twice (names are case-insensitive)`);
    seen.add(name.toLowerCase());
    if (typeof v !== 'string') problem('must be a string', [name]);
    else if (v.length > HEADER_VALUE_MAX_CHARS) problem(`must be at most ${HEADER_VALUE_MAX_CHARS} characters (got ${v.length})`, [name]);
    else if (/[\r\n\0]/.test(v)) problem('must not contain CR, LF or NUL characters', [name]);
    else if (/[^\t\x20-\x7e\x80-\xff]/.test(v)) problem('must contain only visible ASCII or Latin-1 characters, spaces and tabs', [name]);
  }
});

/** An s3:// URL is read with a source's credentials, an http(s) URL never (a file entry's refinement). */
export function checkFileEntryAccess(entry: { url: string; source?: string | undefined; headers?: unknown }, ctx: z.RefinementCtx): void {
  const s3 = isS3Url(entry.url);
  if (s3 && entry.source === undefined) ctx.addIssue({ code: 'custom', message: 'is required for an s3:// URL (the name or id of a source from POST /sources)', path: ['source'] });
  if (!s3 && entry.source !== undefined) ctx.addIssue({ code: 'custom', message: 'is only for s3:// URLs', path: ['source'] });
  if (s3 && entry.headers !== undefined) ctx.addIssue({ code: 'custom', message: "are only for http and https URLs (an s3:// URL is read with its source's credentials)", path: ['headers'] });
}

/** The names read responses show: lower case, sorted. */
export const headerNamesOf = (headers: Record<string, string>): string[] => Object.keys(headers).map((n) => n.toLowerCase()).sort();

export interface S3Location {
  bucket: string;
  key: string;
}

/** `s3://<bucket>/<key>`: the key is everything after `<bucket>/`, taken literally; null when not such a URL. */
export function parseS3Url(url: string): S3Location | null {
  const m = /^s3:\/\/([^/]+)\/(.+)$/s.exec(url);
  return m ? { bucket: m[1]!, key: m[2]! } : null;
}

export const isS3Url = (url: string): boolean => /^s3:/i.test(url);

/**
 * `s3://<bucket>/<prefix>/` (or `s3://<bucket>/` for the whole bucket): a prefix entry, standing
 * for every object under it (docs/private-sources.md#prefix-entries); null when not one.
 */
export function parseS3Prefix(url: string): { bucket: string; prefix: string } | null {
  const m = /^s3:\/\/([^/]+)\/((?:.*\/)?)$/s.exec(url);
  return m ? { bucket: m[1]!, prefix: m[2]! } : null;
}

const isBucketName = (name: string) => /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name);

export const DESTINATION_PREFIX_MAX_CHARS = 512;

/** `destination` of a stored job (docs/private-sources.md#destination-buckets): where its ZIPs are written. */
export const destinationSchema = z.strictObject(
  {
    source: z.string({ error: 'must be a source name or id' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
    bucket: z.string({ error: 'must be a bucket name' }).refine(isBucketName, 'must be a valid bucket name (3 to 63 of a-z, 0-9, "." and "-")'),
    prefix: z
      .string({ error: 'must be a string' })
      .max(DESTINATION_PREFIX_MAX_CHARS, `must be at most ${DESTINATION_PREFIX_MAX_CHARS} characters`)
      .refine((p) => !p.startsWith('/'), 'must not start with "/"')
      .refine((p) => !/[\0-\x1f\x7f]/.test(p), 'must not contain control characters')
      .optional(),
  },
  { error: 'must be an object with "source", "bucket" and an optional "prefix"' },
);

/** Why a value is not an s3:// URL with a bucket and a key (or a prefix ending in "/"), or null. */
export function s3UrlProblem(value: string): string | null {
  if (!value.startsWith('s3://')) return 'must start with "s3://" followed by a bucket and a key, like s3://my-bucket/path/file.pdf';
  const wholeBucket = parseS3Prefix(value);
  const location = parseS3Url(value) ?? (wholeBucket && { bucket: wholeBucket.bucket, key: wholeBucket.prefix });
  if (!location) return 'must name a bucket and a key, like s3://my-bucket/path/file.pdf, or a prefix ending in "/", like s3://my-bucket/photos/';
  if (location.bucket.includes('@')) return 'must not contain a user name or password: name a source, which holds the credentials';
  if (!isBucketName(location.bucket)) return `bucket ${shortName(location.bucket)} is not a valid bucket name (3 to 63 of a-z, 0-9, "." and "-")`;
  if (new TextEncoder().encode(location.key).length > 1024) return 'key must be at most 1024 bytes';
  if (/[\0-\x1f\x7f]/.test(location.key)) return 'key must not contain control characters';
  return null;
}

// ---------------------------------------------------------------------------------------------
// Sources

const typed = (what: string) => ({
  error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : `must be ${what}`),
});

const noControl = (what: string, max: number) =>
  z
    .string(typed(what))
    .min(1, 'must not be empty')
    .max(max, `must be at most ${max} characters`)
    .refine((v) => !/[\0-\x1f\x7f]/.test(v), 'must not contain control characters');

export const sourceCreateSchema = z.strictObject(
  {
    name: z.string(typed('a string')).regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1 to 64 of A-Z, a-z, 0-9, "_" and "-"'),
    type: z.enum(SOURCE_TYPES, { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : 'must be "s3"') }),
    region: z.string(typed('a string')).regex(/^[a-z0-9-]{1,64}$/, 'must be a region name like us-east-1 or auto'),
    access_key_id: noControl('a string', 256),
    secret_access_key: noControl('a string', 1024),
    endpoint: z
      .string(typed('a string'))
      .max(2048, 'must be at most 2048 characters')
      .superRefine((v, ctx) => {
        const authority = /^https?:\/\/([^/?#\s]+)\/?$/i.exec(v)?.[1];
        if (authority === undefined) ctx.addIssue({ code: 'custom', message: 'must be an http or https URL of a host, like https://<account>.r2.cloudflarestorage.com' });
        else if (authority.includes('@')) ctx.addIssue({ code: 'custom', message: "must not contain a user name or password: the source's keys are access_key_id and secret_access_key" });
      })
      .nullish(),
    force_path_style: z.boolean(typed('true or false')).default(false),
  },
  { error: () => 'the request body must be a JSON object' },
);
export type SourceCreateRequest = z.output<typeof sourceCreateSchema>;

/** A source as responses show it: never its secret. */
export interface SourceView {
  id: string;
  name: string;
  type: 's3';
  region: string;
  endpoint: string | null;
  force_path_style: boolean;
  access_key_id: string;
  created_at: string;
}
