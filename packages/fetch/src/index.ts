export { createFetcher, httpError, toFetchError } from './fetcher';
export type { ByteRange, Fetcher, FetcherOptions, OpenBodyOptions, OpenedBody, ProbeFailed, ProbeOk, ProbeResult } from './fetcher';
export { FetchError, findFetchError } from './errors';
export type { FetchErrorKind } from './errors';
export { classifyAddress, isLocalhostName } from './guard';
export type { AddressVerdict, LookupFunction } from './guard';
export { parseContentRange, parseRetryAfter } from './headers';
