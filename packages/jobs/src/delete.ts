import { userJob, type Db } from '@ap/db';
import type { ObjectStore } from '@ap/storage';
import { objectKeyFor } from './ids';
import { abortDestinationUploads, deleteJobObjects, type DestinationAccess } from './objects';

/**
 * Deletes a user's job (docs/api-hardening.md#deleting-a-job): its rows first, in one statement
 * (bins and files go with it), so every download link and read of it fails at once and a packer
 * holding one of its bins loses its lease at the next renewal; then the objects in `store`.
 * False when the user has no such job. Usage records and webhook deliveries are not the job's
 * rows and stay.
 */
export async function deleteJob(deps: { db: Db; store: ObjectStore; destinations: DestinationAccess; onCleanupError?: (err: unknown) => void }, jobId: string, userId: string): Promise<boolean> {
  const { db, store } = deps;
  const job = await userJob(db, jobId, userId);
  if (!job) return false;
  const bins = await db.zip.findMany({ where: { jobId, job: { userId } }, select: { id: true, filename: true, objectKey: true, uploadId: true } });
  const { count } = await db.job.deleteMany({ where: { id: jobId, userId } });
  if (count === 0) return false;
  // A bin still packing has no object_key yet but may complete its upload before its packer
  // notices: its key is known, so it is deleted as well.
  // A destination's ZIPs are the customer's (docs/private-sources.md#destination-buckets); the
  // uploads its bins started there are ours, and go. A bin completing after this removes its
  // ZIP itself (the packer finds its row gone).
  if (job.destinationSourceId !== null) {
    await abortDestinationUploads(db, deps.destinations, job, bins).catch(deps.onCleanupError ?? (() => undefined));
    return true;
  }
  const objects = bins.map((bin) => ({ ...bin, objectKey: bin.objectKey ?? objectKeyFor(jobId, bin.id) }));
  await deleteJobObjects(store, jobId, objects).catch(deps.onCleanupError ?? (() => undefined));
  return true;
}
