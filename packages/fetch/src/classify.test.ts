// Errors as a user reads them (classify.ts).
import { describe, it, expect, afterAll, beforeAll } from '@jest/globals';
import type { Fetcher } from './types';
import { type LookupFunction } from './guard';
import { expectOpenError, fetchHarness } from './testing-fetcher';

const { fetcher, origin, close } = fetchHarness();
afterAll(close);

describe('invalid input', () => {
  let f: Fetcher;
  beforeAll(() => {
    f = fetcher();
  });
  it('rejects unparsable URLs and other protocols', async () => {
    expect(await f.probe('not a url')).toMatchObject({ ok: false, error: 'invalid URL' });
    expect(await f.probe('ftp://example.com/x')).toMatchObject({ ok: false, error: 'unsupported protocol ftp:' });
    expect((await expectOpenError(f.openBody('file:///etc/passwd'))).userMessage).toBe('unsupported protocol file:');
  });
});

describe('error messages a user reads', () => {
  it('say what happened in words, never a bare error code, for failures got wraps as ERR_GOT_REQUEST_ERROR', async () => {
    const o = await origin((_req, res) => void res.end('never reached'));
    // Resolvers failing with errors that carry no code (got then wraps them with its generic code).
    const failing = (make: () => Error) =>
      ((_hostname: string, _options: unknown, callback: (err: Error) => void) => process.nextTick(callback, make())) as unknown as LookupFunction;
    const cases: [string, () => Error, RegExp][] = [
      ['a plain Error', () => new Error('resolver exploded'), /^request failed \(an unexpected error in the HTTP client\)$/],
      ['an error wrapping a refused connection', () => new Error('wrapped', { cause: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }) }), /^connection refused$/],
      ['an error wrapping an unknown host', () => new Error('wrapped', { cause: Object.assign(new Error('getaddrinfo ENOTFOUND x'), { code: 'ENOTFOUND' }) }), /^host not found$/],
    ];
    for (const [what, make, expected] of cases) {
      const f = fetcher({ lookup: failing(make), retries: 0 });
      const probed = await f.probe(`http://name.test:${o.port}/x`);
      expect({ what, ok: probed.ok }).toEqual({ what, ok: false });
      if (!probed.ok) {
        expect({ what, error: probed.error }).toEqual({ what, error: expect.stringMatching(expected) });
        expect(probed.error).not.toMatch(/ERR_|\bE[A-Z]{4,}\b/);
      }
      const error = await expectOpenError(f.openBody(`http://name.test:${o.port}/x`));
      expect(error.userMessage).toMatch(expected);
    }
  });
});
