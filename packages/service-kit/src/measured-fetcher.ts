// The service's fetcher with its metrics: bytes read from origins and failed fetches, counted in
// one place for every service instead of at each caller.
import { pipeline, type Readable } from 'node:stream';
import { BodyStream, findFetchError, type Fetcher, type FetchError } from '@ap/fetch';
import { byteCounter, bytesFetchedTotal, fetchErrorsTotal } from './metrics';

const noop = (): void => {};

function countFailure(err: unknown): void {
  const fetchError: FetchError | undefined = findFetchError(err);
  // Our own cancellation (a client gone, a bin handed back) is not an origin's failure.
  if (fetchError?.kind === 'aborted') return;
  fetchErrorsTotal.inc({ reason: fetchError?.kind ?? 'other' });
}

export function measuredFetcher(fetcher: Fetcher, service: string): Fetcher {
  return {
    hosts: fetcher.hosts,
    spill: fetcher.spill ?? null,
    async probe(url, options) {
      const result = await fetcher.probe(url, options);
      if (!result.ok) countFailure(result.cause);
      return result;
    },
    async listPrefix(url, options) {
      const result = await fetcher.listPrefix(url, options);
      if (!result.ok) countFailure(result.cause);
      return result;
    },
    async openBody(url, options) {
      let opened;
      try {
        opened = await fetcher.openBody(url, options);
      } catch (err) {
        countFailure(err);
        throw err;
      }
      const body = opened.stream as Readable & { downloadProgress?: { transferred: number } };
      // Only FetchErrors count (a body cut by the origin: length, timeout, reset); a consumer
      // that stopped reading is not a fetch error. The stream keeps its error for the consumer's
      // pipeline either way.
      body.on('error', (err) => {
        if (findFetchError(err)) countFailure(err);
      });
      if (body instanceof BodyStream) {
        // Counted as the bytes arrive, the body handed on as it is: the fetch-ahead scheduler
        // works with a BodyStream's own buffer (its read-ahead, its ranges).
        const counter = bytesFetchedTotal.labels({ service });
        body.onOriginBytes = (bytes) => counter.inc(bytes);
        return opened;
      }
      if (body.downloadProgress) {
        // got's own progress events: no extra stream hop per body (a Transform per body cost
        // ~10 s of CPU over a 70,000-entry stream download).
        let counted = 0;
        body.on('downloadProgress', (progress: { transferred: number }) => {
          bytesFetchedTotal.inc({ service }, progress.transferred - counted);
          counted = progress.transferred;
        });
        return opened;
      }
      // A body the fetcher wrapped (a length check): counted as it passes, same error contract.
      const counted = byteCounter(bytesFetchedTotal, { service });
      counted.on('error', noop);
      pipeline(body, counted, noop);
      return { ...opened, stream: counted };
    },
    close: () => fetcher.close(),
  };
}
