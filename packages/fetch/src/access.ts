// How one file is read when it is not a plain public URL (docs/private-sources.md#the-rules): the
// request headers its entry carries, or the credentials of the source an s3:// URL names.
// Opened from their sealed columns by the service just before use; never logged or queued.

/** An S3-compatible service and the key pair a source stores. */
export interface S3Credentials {
  /** The source's id: clients are kept per source and credentials. */
  sourceId: string;
  region: string;
  /** null: AWS S3 of `region`. */
  endpoint: string | null;
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
}

export type FileAccess =
  /** Sent on every request for the file to its URL's origin; dropped after a cross-origin redirect. */
  | { headers: Readonly<Record<string, string>> }
  /** An s3:// URL, read with these credentials. */
  | { s3: S3Credentials }
  /** The file cannot be read any more (its source was deleted): every read fails with this. */
  | { unavailable: string };
