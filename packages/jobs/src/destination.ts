// Destination buckets (docs/private-sources.md#destination-buckets): a stored job's ZIPs are
// written to s3://<bucket>/<prefix><zip filename> with the destination source's credentials,
// and downloads read them from there. The credentials are opened just before use, never logged.
// The endpoint is held to the address rules of every fetched URL (docs/private-sources.md#the-rules):
// a private one is refused unless ALLOW_PRIVATE_URLS=true, up front and again at connect time.
import { createHash } from 'node:crypto';
import { sourcesWithSecrets, type DbTx } from '@ap/db';
import { boundS3Answers, checkUrl, createGuardedAgents, findFetchError, isOwnStore, SOURCE_NOT_ALLOWED, type GuardedAgents, type OwnStore } from '@ap/fetch';
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

/** A destination that may not be written or read here (its endpoint's address is refused); worded for a person. */
export class DestinationRefused extends Error {}

/**
 * DestinationRefused when `err` is the address guard refusing the destination's endpoint (up
 * front, or at connect time for a name), else null: "destination: endpoint 127.0.0.1:9000
 * refused, a loopback address (set ALLOW_PRIVATE_URLS=true for development)".
 */
export function destinationBlocked(err: unknown, rules: { allowPrivate: boolean }): DestinationRefused | null {
  if (err instanceof DestinationRefused) return err;
  const blocked = findFetchError(err);
  if (blocked?.kind !== 'blocked') return null;
  const host = blocked.url ? ` ${new URL(blocked.url).host}` : '';
  return new DestinationRefused(`destination: endpoint${host} refused, ${blocked.userMessage.replace(/^blocked: /, '')} (${rules.allowPrivate ? 'always' : 'set ALLOW_PRIVATE_URLS=true for development'})`);
}

/** How a destination is judged: the address rules of fetched URLs, and never the service's own store. */
export interface DestinationRules {
  allowPrivate: boolean;
  ownStore?: OwnStore | undefined;
}

/** The rules of a service's config. */
export const destinationRules = (config: { ALLOW_PRIVATE_URLS: boolean; S3_ENDPOINT?: string | undefined; S3_BUCKET: string }): DestinationRules => ({
  allowPrivate: config.ALLOW_PRIVATE_URLS,
  ownStore: { endpoint: config.S3_ENDPOINT, bucket: config.S3_BUCKET },
});

/** Destination stores kept, one per source, bucket, key pair and address rule. */
export const MAX_DESTINATION_STORES = 64;
const stores = new Map<string, ObjectStore>();
const agentsByRule = new Map<boolean, GuardedAgents>();

/**
 * The store of the job's destination bucket, or null when the job has none; throws when its
 * source is gone, and DestinationRefused when its endpoint is an address `allowPrivate` refuses.
 */
export async function destinationStore(db: DbTx, secrets: Pick<SecretBox, 'open'>, job: DestinationColumns, rules: DestinationRules): Promise<ObjectStore | null> {
  if (!hasDestination(job)) return null;
  const [source] = await sourcesWithSecrets(db, [job.destinationSourceId!]);
  if (!source) throw new Error('destination: source deleted');
  if (isOwnStore(source.endpoint, job.destinationBucket!, rules.ownStore)) throw new DestinationRefused(`destination: ${SOURCE_NOT_ALLOWED} (the service's own store)`);
  const guard = { allowPrivate: rules.allowPrivate, allowList: [] };
  if (source.endpoint !== null) {
    const refused = checkUrl(new URL(source.endpoint), guard);
    if (refused) {
      refused.url = source.endpoint;
      throw destinationBlocked(refused, rules);
    }
  }
  const secretAccessKey = secrets.open(source.secretAccessKey, sourceSecretPlace(source.id));
  // One client per source, bucket, key pair and address rule: a source whose secret changed gets a new one.
  const id = createHash('sha256').update(JSON.stringify([source.id, source.region, source.endpoint, source.forcePathStyle, source.accessKeyId, secretAccessKey, job.destinationBucket, rules.allowPrivate])).digest('hex');
  let store = stores.get(id);
  if (!store) {
    // The oldest store is dropped, never destroyed: destroying its client destroys its agents,
    // which every destination store of the same rule shares with requests in flight.
    if (stores.size >= MAX_DESTINATION_STORES) stores.delete(stores.keys().next().value!);
    store = createObjectStore({
      region: source.region,
      ...(source.endpoint !== null ? { endpoint: source.endpoint } : {}),
      forcePathStyle: source.forcePathStyle,
      bucket: job.destinationBucket!,
      accessKeyId: source.accessKeyId,
      secretAccessKey,
      // Names are resolved and checked at connect time, as for fetched URLs (DNS may change after the check above).
      agents: agentsFor(rules.allowPrivate),
    });
    // The endpoint is the user's: no answer of it is read past a fixed size.
    boundS3Answers(store.client);
    stores.set(id, store);
  }
  return store;
}

function agentsFor(allowPrivate: boolean): GuardedAgents {
  let agents = agentsByRule.get(allowPrivate);
  if (!agents) {
    agents = createGuardedAgents({ guard: { allowPrivate, allowList: [] } });
    agentsByRule.set(allowPrivate, agents);
  }
  return agents;
}
