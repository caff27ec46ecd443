/** The fetch layer's public shapes: options, probe results and opened bodies. */
import type { OwnStore } from './own-store';
import type { FileAccess } from './access';
import type { HostLimits } from './host-limits';
import type { Readable } from 'node:stream';
import type { FetchError } from './errors';
import type { PrefixListing } from './s3-listing';
import type { LookupFunction } from './guard';
import type { MinRate } from './limits';
import type { SpillArea } from './spill-area';

export interface FetcherOptions {
  /** Operator's ALLOW_PRIVATE_URLS=true (development and tests only). */
  allowPrivate: boolean;
  /** DNS lookup + TCP connect + TLS handshake, each. */
  connectTimeoutMs: number;
  /** No response headers, or no body data, for this long. */
  idleTimeoutMs: number;
  /** Redirects followed; one more is an error. Default 5. */
  maxRedirects?: number;
  /** Retries after the first attempt. Default 3. */
  retries?: number;
  /** Backoff base: attempt n waits ~base * 2^(n-1), with jitter. Default 200 ms. */
  retryBaseDelayMs?: number;
  /** Cap on one computed backoff. Default 5 s. */
  retryMaxDelayMs?: number;
  /** Longest Retry-After honoured; a longer one makes the error final. Default 30 s. */
  retryAfterCapMs?: number;
  /** dns.lookup-compatible resolver (tests inject one). Its answers are guarded too. */
  lookup?: LookupFunction;
  userAgent: string;
  /** Addresses / CIDRs exempt from the guard (an operator's internal mirror; tests). */
  allowAddresses?: readonly string[];
  /** Connections per origin host the fetch-ahead scheduler opens at most (host-limits.ts). Default 16. */
  hostConnections?: number;
  /** Per origin, per agent. Default: unlimited (Node's default). */
  maxSockets?: number;
  /** Idle keep-alive sockets are closed after this long. Default 15 s. */
  freeSocketTimeoutMs?: number;
  /** HTTP/2 to https origins that offer it (h2.ts). Default true. */
  http2?: boolean;
  /** Extra CA certificates (PEM) trusted for https, besides Node's bundled roots. */
  extraCa?: ReadonlyArray<string | Buffer>;
  /** A body slower than this is cut, "origin too slow" (limits.ts). Default 16 KiB per 30 s. */
  minRate?: MinRate;
  /** The process's spill area for bodies fetched ahead (spill-area.ts); none: they wait in memory. */
  spill?: SpillArea;
  /** The service's own store (S3_ENDPOINT, S3_BUCKET): refused as a source always (own-store.ts). */
  ownStore?: OwnStore;
}

export interface ProbeOk {
  ok: true;
  /** Total size in bytes, or null when it cannot be known without downloading. */
  size: number | null;
  /** URL after redirects (credentials stripped). */
  finalUrl: string;
  etag?: string;
  lastModified?: string;
  contentDisposition?: string;
  contentType?: string;
  /** The origin serves byte ranges (206 seen, or `Accept-Ranges: bytes` on HEAD). */
  acceptRanges: boolean;
}

export interface ProbeFailed {
  ok: false;
  /** Short public message (FetchError.userMessage). */
  error: string;
  cause: FetchError;
}

export type ProbeResult = ProbeOk | ProbeFailed;

export interface ByteRange {
  /** First byte, inclusive. */
  start: number;
  /** Last byte, inclusive. */
  end: number;
}

export interface OpenBodyOptions {
  range?: ByteRange;
  /** Total size of the resource as probed; a different size is an error ("changed"). */
  expectedSize?: number;
  /** ETag from the probe; sent as If-Match when strong (a 412 is a "changed" error). */
  ifMatch?: string;
  signal?: AbortSignal;
  /** The file's request headers or source credentials (access.ts). */
  access?: FileAccess;
}

export interface OpenedBody {
  /**
   * The body. Errors (FetchError, or got's AbortError after `signal` fired) are emitted on it;
   * consume it with `stream.pipeline` (or attach an 'error' listener). An error that happens
   * before the consumer attaches is kept (`stream.errored`) and reported by pipeline.
   */
  stream: Readable;
  status: number;
  /** Bytes this stream yields, when known (Content-Length, range length or expectedSize). */
  size: number | null;
  /** Size of the whole resource, when known (Content-Range total, or the 200's length). */
  totalSize: number | null;
  /** False when a range was asked and the server sent the whole resource (200). */
  rangeHonoured: boolean;
  finalUrl: string;
  contentDisposition?: string;
  etag?: string;
  lastModified?: string;
  contentType?: string;
  /** Attempts made (1 = no retry). */
  attempts: number;
}

export interface Fetcher {
  probe(url: string, options?: { signal?: AbortSignal; access?: FileAccess }): Promise<ProbeResult>;
  /** Rejects with a FetchError when no acceptable response could be had (after retries). */
  openBody(url: string, options?: OpenBodyOptions): Promise<OpenedBody>;
  /** The objects of a prefix entry (`s3://bucket/prefix/`), read with its source's credentials. */
  listPrefix(url: string, options: { access: FileAccess; limit: number; signal?: AbortSignal; maxPages?: number }): Promise<PrefixListing>;
  /** Connections per origin host, shared by every archive this fetcher serves (host-limits.ts). */
  hosts: HostLimits;
  /** Where bodies fetched ahead spill beyond the memory budget (FetchAheadOptions `spill`). */
  spill?: SpillArea | null;
  /** Closes the keep-alive sockets. */
  close(): void;
}
