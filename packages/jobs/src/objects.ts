import type { ObjectStore } from '@ap/storage';
import { objectKeyFor } from './ids';

/** Deletes a job's stored ZIPs and aborts the multipart uploads its bins left recorded. */
export async function deleteJobObjects(store: ObjectStore, jobId: string, zips: readonly { id: string; objectKey: string | null; uploadId: string | null }[]): Promise<void> {
  const keys = zips.map((z) => z.objectKey).filter((k): k is string => k !== null);
  if (keys.length) await store.deleteMany(keys);
  for (const z of zips) if (z.uploadId) await store.abortUpload(objectKeyFor(jobId, z.id), z.uploadId);
}
