// What the store says of an object and of a multipart upload's part (shared by index and numbered-parts).

export interface ObjectInfo {
  size: number;
  etag: string;
}

/** One stored part of a multipart upload. */
export interface UploadedPart {
  partNumber: number;
  /** As S3 returned it (quoted); CompleteMultipartUpload wants it so. */
  etag: string;
  size: number;
}
