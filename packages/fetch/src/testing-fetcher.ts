/** Fetchers, origins and resolvers for this package's tests, closed together after a test file. */
import { createFetcher } from './fetcher';
import { FetchError } from './errors';
import type { LookupFunction } from './guard';
import { readAll, startOrigin, type TestOrigin } from './testing';
import type { Fetcher, FetcherOptions } from './types';

export interface FetchHarness {
  /** A fetcher with the tests' short timeouts and backoff. */
  fetcher(overrides?: Partial<FetcherOptions>): Fetcher;
  origin(handler: Parameters<typeof startOrigin>[0], host?: string): Promise<TestOrigin>;
  /** Closes every fetcher and origin made (the file's afterAll). */
  close(): Promise<void>;
}

export function fetchHarness(): FetchHarness {
  const opened: Fetcher[] = [];
  const origins: TestOrigin[] = [];
  return {
    fetcher(overrides = {}) {
      const f = createFetcher({
        allowPrivate: true,
        connectTimeoutMs: 2000,
        idleTimeoutMs: 2000,
        retryBaseDelayMs: 5,
        userAgent: 'ap-fetch-test',
        ...overrides,
      });
      opened.push(f);
      return f;
    },
    async origin(handler, host) {
      const o = await startOrigin(handler, host);
      origins.push(o);
      return o;
    },
    async close() {
      for (const f of opened) f.close();
      await Promise.all(origins.map((o) => o.close()));
    },
  };
}

/** A resolver that answers from a table and records the names asked (no real DNS). */
export function tableLookup(table: Record<string, string | string[]>): LookupFunction & { asked: string[] } {
  const asked: string[] = [];
  const fn = ((hostname: string, options: { all?: boolean }, callback: (err: NodeJS.ErrnoException | null, address: unknown, family?: number) => void) => {
    asked.push(hostname);
    const entry = table[hostname];
    if (entry === undefined) {
      const error = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      process.nextTick(callback, error, '', 0);
      return;
    }
    const list = (Array.isArray(entry) ? entry : [entry]).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    const first = list[0]!;
    if (options.all) process.nextTick(callback, null, list);
    else process.nextTick(callback, null, first.address, first.family);
  }) as unknown as LookupFunction & { asked: string[] };
  fn.asked = asked;
  return fn;
}

/** The FetchError a body ends with (a body that ends well, or another error, fails the test). */
export async function expectStreamError(stream: NodeJS.ReadableStream): Promise<FetchError> {
  try {
    await readAll(stream);
  } catch (error) {
    if (!(error instanceof FetchError)) throw error;
    return error;
  }
  throw new Error('stream ended without error');
}

/** The FetchError `openBody` rejects with. */
export async function expectOpenError(promise: Promise<unknown>): Promise<FetchError> {
  try {
    await promise;
  } catch (error) {
    if (!(error instanceof FetchError)) throw error;
    return error;
  }
  throw new Error('openBody resolved');
}
