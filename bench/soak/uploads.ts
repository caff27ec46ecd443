// Multipart uploads an s3rver stand-in still holds: s3rver keeps each as a folder
// `<bucket>/._S3rver_uploads/<upload id>` holding the upload's `key` (scripts/s3-upload-ids.ts).
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

export function openUploads(dataDir: string, bucket: string): string[] {
  const dir = path.join(dataDir, bucket, '._S3rver_uploads');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((id) => existsSync(path.join(dir, id, 'key')));
}
