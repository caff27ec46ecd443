// Destination buckets (docs/private-sources.md#destination-buckets): a stored job's ZIPs are
// written to s3://<bucket>/<prefix><zip filename> with the destination source's credentials,
// and downloads read them from there. The credentials are opened just before use, never logged.
import { createHash } from 'node:crypto';
import { sourcesWithSecrets, type DbTx } from '@ap/db';
import type { SecretBox } from '@ap/secrets';
import { createObjectStore, type ObjectStore } from '@ap/storage';
import { sourceSecretPlace } from './sources';

/** What a job row holds of its destination. */
export interface DestinationColumns {
  destinationSourceId: string | null;
  destinationBucket: string | null;
  destinationPrefix: string | null;
}

export const hasDestination = (job: DestinationColumns): boolean => job.destinationSourceId !== null && job.destinationBucket !== null;

/** The key a ZIP of the job is written under in the destination bucket. */
export const destinationKey = (job: DestinationColumns, zipFilename: string): string => `${job.destinationPrefix ?? ''}${zipFilename}`;

/** `zips[].location`: where a completed ZIP of a job with a destination is (null otherwise). */
export const zipLocation = (job: DestinationColumns, objectKey: string | null): string | null =>
  hasDestination(job) && objectKey !== null ? `s3://${job.destinationBucket}/${objectKey}` : null;

/** A bin whose destination cannot be written fails with this (worded for a person). */
export const DESTINATION_ACCESS_DENIED = 'destination: access denied';

/** Whether an S3 failure is a refusal of the destination's credentials. */
export function isAccessRefusal(err: unknown): boolean {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  const code = e?.name ?? '';
  return e?.$metadata?.httpStatusCode === 403 || ['AccessDenied', 'AllAccessDisabled', 'InvalidAccessKeyId', 'SignatureDoesNotMatch'].includes(code);
}

const stores = new Map<string, ObjectStore>();

/** The store of the job's destination bucket, or null when the job has none; throws when its source is gone. */
export async function destinationStore(db: DbTx, secrets: Pick<SecretBox, 'open'>, job: DestinationColumns): Promise<ObjectStore | null> {
  if (!hasDestination(job)) return null;
  const [source] = await sourcesWithSecrets(db, [job.destinationSourceId!]);
  if (!source) throw new Error('destination: source deleted');
  const secretAccessKey = secrets.open(source.secretAccessKey, sourceSecretPlace(source.id));
  // One client per source, bucket and key pair: a source whose secret changed gets a new one.
  const id = createHash('sha256').update(JSON.stringify([source.id, source.region, source.endpoint, source.forcePathStyle, source.accessKeyId, secretAccessKey, job.destinationBucket])).digest('hex');
  let store = stores.get(id);
  if (!store) {
    if (stores.size >= 64) {
      for (const old of stores.values()) old.client.destroy();
      stores.clear();
    }
    store = createObjectStore({
      region: source.region,
      ...(source.endpoint !== null ? { endpoint: source.endpoint } : {}),
      forcePathStyle: source.forcePathStyle,
      bucket: job.destinationBucket!,
      accessKeyId: source.accessKeyId,
      secretAccessKey,
    });
    stores.set(id, store);
  }
  return store;
}
