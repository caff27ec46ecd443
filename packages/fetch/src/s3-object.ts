/**
 * s3:// file entries read with a source's credentials (docs/private-sources.md#the-rules): the
 * same probe and body contract as an http(s) URL. HeadObject gives size and ETag; bodies,
 * ranges, segments and continuations are GetObject with Range and If-Match on the probed ETag,
 * so a changed object is a "changed" error, never spliced bytes. Requests go through the
 * fetcher's guarded agents: an endpoint on a private address is refused unless
 * ALLOW_PRIVATE_URLS=true, as for any fetched URL.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { GetObjectCommand, HeadBucketCommand, HeadObjectCommand, S3Client, S3ServiceException, type GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { parseS3Prefix, parseS3Url, type S3Location } from '@ap/contract';
import type { S3Credentials } from './access';
import { BodyStream, type BodyStreamOptions } from './body';
import { FetchError, findFetchError } from './errors';
import { checkUrl, type GuardedAgents, type GuardOptions } from './guard';
import { boundS3Answers } from './s3-answer-limit';
import { isOwnStore, SOURCE_NOT_ALLOWED, type OwnStore } from './own-store';
import { listPrefixObjects, type ListingBounds, type PrefixListing } from './s3-listing';
import type { OpenBodyOptions, OpenedBody, ProbeResult } from './types';
import type { HostLimits } from './host-limits';

export interface S3ReaderSettings {
  agents: GuardedAgents;
  guard: GuardOptions;
  connectTimeoutMs: number;
  idleTimeoutMs: number;
  /** The fetcher's body settings (retries, backoff, hold limit, error mapping). */
  bodyOptions(size: number | null, signal: AbortSignal | undefined, lengthName: string): Omit<BodyStreamOptions, 'resume' | 'segment'>;
  /** The fetcher's mapping of a transport error (connection, timeout, blocked) to a FetchError. */
  toError(error: unknown): FetchError;
  /** Connections per host (host-limits.ts): a bucket answering SlowDown (503) or 429 gets fewer, keyed by its name as an s3:// URL's host. */
  hosts?: HostLimits;
  /** The service's own store: never read as a source (own-store.ts). */
  ownStore?: OwnStore | undefined;
}

export interface S3Reader {
  probe(url: string, credentials: S3Credentials, signal?: AbortSignal): Promise<ProbeResult>;
  openBody(url: string, credentials: S3Credentials, options: OpenBodyOptions): Promise<OpenedBody>;
  /** A prefix entry's objects (s3-listing.ts). */
  list(url: string, credentials: S3Credentials, options: ListingBounds): Promise<PrefixListing>;
  close(): void;
}

type Location = S3Location;

/** `s3://<bucket>/<key>`: the key is everything after `<bucket>/`, taken literally. */
function locate(url: string): Location {
  const location = parseS3Url(url);
  if (!location) throw new FetchError('invalid-url', 'invalid s3:// URL (it needs a bucket and a key)', { retryable: false, url });
  return location;
}

/** The URL an entry name is derived from: the key's segments escaped, so its last one comes back literally. */
function nameUrl(location: Location): string {
  return `s3://${location.bucket}/${location.key.split('/').map(encodeURIComponent).join('/')}`;
}

const PERSON_WORDS: Record<string, string> = {
  AccessDenied: 'access denied',
  AllAccessDisabled: 'access denied',
  NoSuchKey: 'no such object',
  NotFound: 'no such object',
  NoSuchBucket: 'no such bucket',
  InvalidAccessKeyId: "access key not recognised by the bucket's service (check the source's access_key_id)",
  SignatureDoesNotMatch: "secret key rejected by the bucket's service (check the source's secret_access_key)",
  InvalidBucketName: 'invalid bucket name',
  PermanentRedirect: "the bucket is in another region than the source's",
  AuthorizationHeaderMalformed: "the bucket is in another region than the source's",
  ExpiredToken: 'the source\'s credentials have expired',
  InvalidToken: "the source's credentials are not valid",
};

/** A refused or failed S3 call, worded for a person; transport failures keep the fetcher's words. */
function s3Error(error: unknown, settings: S3ReaderSettings): FetchError {
  if (error instanceof S3ServiceException) {
    const status = error.$metadata.httpStatusCode;
    const code = error.name;
    if (code === 'PreconditionFailed' || status === 412) {
      return new FetchError('changed', 'file changed since it was probed (ETag no longer matches)', { retryable: false, status, detail: `S3 ${code}` });
    }
    const words = PERSON_WORDS[code] ?? (status === 403 ? 'access denied' : status === 404 ? 'no such object' : undefined);
    const retryable = status !== undefined && (status >= 500 || status === 429 || code === 'SlowDown');
    return new FetchError('http', words ?? `the bucket's service answered ${code}${status ? ` (HTTP ${status})` : ''}`, { retryable, status, detail: `S3 ${code} (HTTP ${status ?? '?'})` });
  }
  return findFetchError(error) ?? settings.toError(error);
}

/** S3 clients kept, one per source and key pair. */
export const MAX_CLIENTS = 256;

export function createS3Reader(settings: S3ReaderSettings): S3Reader {
  const clients = new Map<string, S3Client>();

  function clientFor(credentials: S3Credentials, bucket: string): S3Client {
    if (isOwnStore(credentials.endpoint, bucket, settings.ownStore)) throw new FetchError('blocked', SOURCE_NOT_ALLOWED, { retryable: false, detail: `${SOURCE_NOT_ALLOWED}: the service's own store` });
    if (credentials.endpoint !== null) {
      const refused = checkUrl(new URL(credentials.endpoint), settings.guard);
      if (refused) throw refused;
    }
    // One client per source and key pair: a source whose secret changed gets a new one.
    const id = createHash('sha256')
      .update(JSON.stringify([credentials.sourceId, credentials.region, credentials.endpoint, credentials.forcePathStyle, credentials.accessKeyId, credentials.secretAccessKey]))
      .digest('hex');
    let client = clients.get(id);
    if (!client) {
      // The oldest client is dropped, never destroyed: destroying an S3Client destroys its
      // agents, which are the fetcher's, shared by every request in flight (other users' too).
      if (clients.size >= MAX_CLIENTS) clients.delete(clients.keys().next().value!);
      client = new S3Client({
        region: credentials.region,
        ...(credentials.endpoint !== null ? { endpoint: credentials.endpoint } : {}),
        forcePathStyle: credentials.forcePathStyle,
        credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
        // Checksums only where S3 requires them: a ranged body has no whole-object checksum to check.
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        requestHandler: { httpAgent: settings.agents.http, httpsAgent: settings.agents.https, connectionTimeout: settings.connectTimeoutMs, requestTimeout: settings.idleTimeoutMs },
      });
      boundS3Answers(client);
      clients.set(id, client);
    }
    return client;
  }

  /** A HEAD answer carries no error body: the same key read for one byte says what was wrong. */
  async function explainHeadFailure(client: S3Client, location: Location, headError: unknown, signal: AbortSignal | undefined): Promise<FetchError> {
    if (!(headError instanceof S3ServiceException) || (PERSON_WORDS[headError.name] !== undefined && headError.name !== 'NotFound')) {
      return s3Error(headError, settings);
    }
    try {
      const got = await client.send(new GetObjectCommand({ Bucket: location.bucket, Key: location.key, Range: 'bytes=0-0' }), { abortSignal: signal });
      (got.Body as Readable | undefined)?.destroy();
      return s3Error(headError, settings);
    } catch (getError) {
      const error = s3Error(getError, settings);
      if (error.userMessage !== 'no such object' || !(getError instanceof S3ServiceException) || getError.name === 'NoSuchKey') return error;
      // A bare 404: the bucket or the key.
      try {
        await client.send(new HeadBucketCommand({ Bucket: location.bucket }), { abortSignal: signal });
        return error;
      } catch (bucketError) {
        const missing = bucketError instanceof S3ServiceException && bucketError.$metadata.httpStatusCode === 404;
        return missing ? new FetchError('http', PERSON_WORDS.NoSuchBucket!, { retryable: false, status: 404, detail: 'S3 HeadBucket 404' }) : error;
      }
    }
  }

  async function probe(url: string, credentials: S3Credentials, signal?: AbortSignal): Promise<ProbeResult> {
    try {
      const location = locate(url);
      const client = clientFor(credentials, location.bucket);
      try {
        const head = await client.send(new HeadObjectCommand({ Bucket: location.bucket, Key: location.key }), { abortSignal: signal });
        return {
          ok: true,
          size: head.ContentLength ?? null,
          finalUrl: nameUrl(location),
          acceptRanges: true,
          ...(head.ETag ? { etag: head.ETag } : {}),
          ...(head.LastModified ? { lastModified: head.LastModified.toUTCString() } : {}),
          ...(head.ContentType ? { contentType: head.ContentType } : {}),
        };
      } catch (headError) {
        throw await explainHeadFailure(client, location, headError, signal);
      }
    } catch (thrown) {
      const error = thrown instanceof FetchError ? thrown : s3Error(thrown, settings);
      error.url ??= url;
      return { ok: false, error: error.userMessage, cause: error };
    }
  }

  /** GetObject of bytes [from, last] (or the whole object), checked against the validator. */
  async function get(client: S3Client, location: Location, range: { from: number; last: number } | undefined, etag: string | undefined, signal: AbortSignal | undefined): Promise<GetObjectCommandOutput> {
    try {
      return await client.send(
        new GetObjectCommand({
          Bucket: location.bucket,
          Key: location.key,
          ...(range ? { Range: `bytes=${range.from}-${range.last}` } : {}),
          ...(etag !== undefined && !etag.startsWith('W/') ? { IfMatch: etag } : {}),
        }),
        { abortSignal: signal },
      );
    } catch (error) {
      const refused = s3Error(error, settings);
      if (refused.status === 503 || refused.status === 429) settings.hosts?.pushedBack(location.bucket);
      throw refused;
    }
  }

  async function openBody(url: string, credentials: S3Credentials, options: OpenBodyOptions): Promise<OpenedBody> {
    const { range, expectedSize, ifMatch, signal } = options;
    const location = locate(url);
    const client = clientFor(credentials, location.bucket);
    const first = await get(client, location, range ? { from: range.start, last: range.end } : undefined, ifMatch, signal);
    const total = first.ContentRange ? Number(/\/(\d+)$/.exec(first.ContentRange)?.[1] ?? NaN) : (first.ContentLength ?? null);
    const size = range ? range.end - range.start + 1 : (first.ContentLength ?? null);
    const stream = first.Body as Readable;
    if (expectedSize !== undefined && total !== null && Number.isFinite(total) && total !== expectedSize) {
      stream.destroy();
      throw new FetchError('changed', `file changed since it was probed (size ${total} bytes, expected ${expectedSize})`, { retryable: false });
    }
    const start = range?.start ?? 0;
    const etag = first.ETag ?? ifMatch;
    const part = (from: number, to: number, partSignal: AbortSignal | undefined) =>
      get(client, location, { from: start + from, last: start + to - 1 }, etag, partSignal).then((out) => out.Body as Readable);
    const body = new BodyStream(stream, {
      ...settings.bodyOptions(size, signal, range ? 'the requested range' : 'declared length'),
      ...(size !== null && size > 0
        ? {
            resume: part,
            segment: async (from: number, to: number, segmentSignal: AbortSignal | undefined) => {
              const segment = new BodyStream(await part(from, to, segmentSignal), { ...settings.bodyOptions(to - from, segmentSignal, 'the requested range'), resume: (o, e, s) => part(from + o, from + e, s) });
              segment.on('error', () => {});
              return segment;
            },
          }
        : {}),
    });
    body.on('error', () => {}); // kept for pipeline(), as the fetcher's bodies
    return {
      stream: body,
      status: range ? 206 : 200,
      size,
      totalSize: total !== null && Number.isFinite(total) ? total : null,
      rangeHonoured: true,
      finalUrl: nameUrl(location),
      attempts: 1,
      ...(etag ? { etag } : {}),
      ...(first.LastModified ? { lastModified: first.LastModified.toUTCString() } : {}),
      ...(first.ContentType ? { contentType: first.ContentType } : {}),
    };
  }

  return {
    probe,
    openBody,
    async list(url, credentials, options) {
      let client: S3Client;
      try {
        client = clientFor(credentials, parseS3Prefix(url)?.bucket ?? '');
      } catch (refused) {
        const cause = s3Error(refused, settings);
        return { ok: false, error: cause.userMessage, cause };
      }
      return listPrefixObjects(client, url, options, (error) => s3Error(error, settings));
    },
    close() {
      // Their agents are the fetcher's, destroyed by its close.
      clients.clear();
    },
  };
}
