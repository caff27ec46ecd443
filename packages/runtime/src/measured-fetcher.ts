// The service's fetcher with its metrics: bytes read from origins and failed fetches, counted in
// one place for every service instead of at each caller.
import { pipeline } from 'node:stream';
import { findFetchError, type Fetcher, type FetchError } from '@ap/fetch';
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
    async probe(url, options) {
      const result = await fetcher.probe(url, options);
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
      // Same contract as the fetcher's own streams: an error is kept for the consumer's
      // pipeline, and destroying the returned stream destroys the response.
      const counted = byteCounter(bytesFetchedTotal, { service });
      counted.on('error', noop);
      pipeline(opened.stream, counted, (err) => {
        // A body cut by the origin (length, timeout, reset) is a FetchError; a consumer that
        // stopped reading is not a fetch error.
        if (err && findFetchError(err)) countFailure(err);
      });
      return { ...opened, stream: counted };
    },
    close: () => fetcher.close(),
  };
}
