import type { DbTx } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import type { ObjectStore } from '@ap/storage';
import { destinationKey, destinationStore, type DestinationColumns } from './destination';
import { objectKeyFor } from './ids';

/** What opening a job's destination needs: its source's sealed secret, and the address rules. */
export interface DestinationAccess {
  secrets: Pick<SecretBox, 'open'>;
  allowPrivate: boolean;
}

/** Deletes a job's stored ZIPs and aborts the multipart uploads its bins left recorded. */
export async function deleteJobObjects(store: ObjectStore, jobId: string, zips: readonly { id: string; objectKey: string | null; uploadId: string | null }[]): Promise<void> {
  const keys = zips.map((z) => z.objectKey).filter((k): k is string => k !== null);
  if (keys.length) await store.deleteMany(keys);
  for (const z of zips) if (z.uploadId) await store.abortUpload(objectKeyFor(jobId, z.id), z.uploadId);
}

/**
 * Aborts the multipart uploads a job's bins left recorded in its destination bucket (the job was
 * deleted or expired): the customer's bucket keeps no parts of ours. Its completed ZIPs stay.
 */
export async function abortDestinationUploads(db: DbTx, access: DestinationAccess, job: DestinationColumns, zips: readonly { filename: string; uploadId: string | null }[]): Promise<void> {
  const open = zips.filter((z) => z.uploadId !== null);
  if (open.length === 0) return;
  const store = await destinationStore(db, access.secrets, job, { allowPrivate: access.allowPrivate });
  if (!store) return; // its source was deleted: nothing reaches the bucket any more
  for (const z of open) await store.abortUpload(destinationKey(job, z.filename), z.uploadId!);
}
