// Generators for the API fuzz suite (test/fuzz-api.test.ts): hostile and careless inputs of
// every kind a route takes. Pure: no I/O, so a seed reproduces a run exactly.
import fc from 'fast-check';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** encodeURIComponent that takes any string (it throws on lone surrogates: those become U+FFFD). */
export const encode = (value: string): string => encodeURIComponent(value.replace(LONE_SURROGATE, '\uFFFD'));

/** Any JSON value, a few levels deep, any code points (lone surrogates and NUL included). */
export const anyJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });

/** Strings of the sorts that break things: unicode, control characters, huge, empty. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom('', ' ', '\u0000', '\uD800', '\uDFFF', 'null', 'undefined', '__proto__', 'constructor', '../../etc/passwd', '%00', '%2e%2e%2f', '${jndi:ldap://x}', '<script>', "' OR 1=1 --", '\u202E', '\uFEFF'),
  fc.integer({ min: 256, max: 300_000 }).chain((n) => fc.constantFrom('a', 'é', '😀', '{', '\u0000').map((c) => c.repeat(n))),
);

/** Values of the wrong type for a field, or none at all. */
export const wrongTyped: fc.Arbitrary<unknown> = fc.oneof(
  anyJson,
  fc.constantFrom(null, true, false, 0, -1, 1.5, 1e308, -0, [], {}, [[]], { a: { b: { c: {} } } }),
  nastyString,
);

/** A field that is usually plausible, sometimes anything. */
const sometimes = <T>(plausible: fc.Arbitrary<T>) => fc.oneof({ weight: 3, arbitrary: plausible }, { weight: 1, arbitrary: wrongTyped });

/** Objects with extra fields added (unknown fields, prototype-ish names). */
const withExtras = (base: fc.Arbitrary<Record<string, unknown>>) =>
  fc.tuple(base, fc.option(fc.dictionary(fc.oneof(nastyString, fc.constantFrom('__proto__', 'constructor', 'toString', 'x')), anyJson, { maxKeys: 3 }), { freq: 3 })).map(([b, extra]) => (extra ? { ...extra, ...b } : b));

/** Text assembled from pieces of URL syntax, so the parser's corners are reached often. */
const URL_PIECES = ['http:', 'https:', 'HTTP:', 'ftp:', 'file:', 'javascript:', '//', '///', '\\\\', '/', 'example.com', '127.0.0.1', '[::1]', '0x7f.1', 'localhost', '169.254.169.254', '@', 'user:pw@', ':80', ':0', ':99999', '/path', '/a b', '?q=1', '#frag', '%00', '%2F', 'é', '\u0000', ' ', '.', '..', 'xn--'];
export const url: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...URL_PIECES), { minLength: 1, maxLength: 8 }).map((p) => p.join('')),
  fc.webUrl({ withQueryParameters: true, withFragments: true }),
  nastyString,
);

const TEMPLATE_PIECES = ['{n}', '{n2}', '{n3}', '{total}', '{date}', '{{', '}}', '{', '}', '{x}', '{N}', '{ n }', '/', '\\', '..', '.zip', '.tar.gz', 'archive', 'é', '😀', '\u0000', '\u202E', ' ', '_'];
export const template: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...TEMPLATE_PIECES), { minLength: 0, maxLength: 10 }).map((p) => p.join('')),
  nastyString,
);

const FILENAME_PIECES = ['a', 'b.txt', '/', '//', '\\', '..', '.', 'dir/', 'é', '😀', '\u0000', '\u0007', ' ', 'CON', 'x'.repeat(300), '%2F'];
export const filename: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...FILENAME_PIECES), { minLength: 0, maxLength: 6 }).map((p) => p.join('')),
  nastyString,
);

export const metadata: fc.Arbitrary<unknown> = fc.oneof(
  fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), nastyString), fc.oneof(fc.string({ maxLength: 20 }), nastyString), { maxKeys: 14 }),
  wrongTyped,
);

export const fileEntry: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: withExtras(fc.record({ url: sometimes(url), filename: sometimes(fc.option(filename)) }, { requiredKeys: [] })) },
  { weight: 1, arbitrary: wrongTyped },
);

export const jobCreateBody: fc.Arbitrary<unknown> = fc.oneof(
  // Plausible jobs, so the valid side (creation, templates, metadata storage) is reached too.
  {
    weight: 3,
    arbitrary: fc.record(
      {
        files: fc.array(fc.record({ url: fc.webUrl(), filename: fc.option(filename) }, { requiredKeys: ['url'] }), { minLength: 1, maxLength: 3 }),
        mode: fc.constantFrom('stored', 'stream'),
        zip_filename: fc.option(template),
        metadata: fc.dictionary(fc.string({ maxLength: 10 }), fc.string({ unit: 'grapheme', maxLength: 30 }), { maxKeys: 5 }),
      },
      { requiredKeys: ['files'] },
    ),
  },
  {
    weight: 5,
    arbitrary: withExtras(
      fc.record(
        {
          files: sometimes(fc.array(fileEntry, { minLength: 0, maxLength: 4 })),
          mode: sometimes(fc.constantFrom('stored', 'stream', 'STORED', '')),
          zip_filename: sometimes(fc.option(template)),
          expires_in: sometimes(fc.oneof(fc.integer({ min: -1, max: 10_000_000 }), fc.double())),
          fail_on_url_error: sometimes(fc.boolean()),
          metadata: sometimes(metadata),
          max_zip_size_bytes: sometimes(fc.option(fc.oneof(fc.constantFrom(104857600, 536870912000, 536870912001), fc.integer(), fc.double()))),
          split_strategy: sometimes(fc.constantFrom('preserve-order', 'ffd', 'FFD')),
          allow_oversize_zips: sometimes(fc.boolean()),
          fail_on_zip_error: sometimes(fc.boolean()),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { weight: 1, arbitrary: wrongTyped },
);

export const apiKeyCreateBody: fc.Arbitrary<unknown> = fc.oneof(
  withExtras(
    fc.record(
      {
        name: sometimes(fc.option(nastyString)),
        expires_at: sometimes(fc.option(fc.oneof(fc.date({ noInvalidDate: true }).map((d) => d.toISOString()), nastyString, fc.constantFrom('2999-01-01T00:00:00Z', '2999-02-30T00:00:00Z', '+275760-09-13T00:00:00.000Z', '0000-01-01T00:00:00Z')))),
      },
      { requiredKeys: [] },
    ),
  ),
  wrongTyped,
);

export const retryBody: fc.Arbitrary<unknown> = fc.oneof(withExtras(fc.record({ from_checkpoint: sometimes(fc.boolean()) }, { requiredKeys: [] })), wrongTyped);

export const webhookCreateBody: fc.Arbitrary<unknown> = fc.oneof(
  withExtras(
    fc.record(
      {
        url: sometimes(fc.oneof(nastyString, fc.constantFrom('https://127.0.0.1:1/hook', 'http://127.0.0.1:1/hook', 'https://hooks.invalid/x', 'ftp://127.0.0.1/x', 'https://user:pw@127.0.0.1/x', 'http:///x', 'https://169.254.169.254/latest'))),
        events: sometimes(fc.oneof(fc.array(fc.oneof(fc.constantFrom('job.completed', 'job.failed', 'download.completed'), nastyString), { maxLength: 5 }), nastyString)),
        description: sometimes(fc.option(nastyString)),
      },
      { requiredKeys: [] },
    ),
  ),
  wrongTyped,
);

export const loginBody: fc.Arbitrary<unknown> = fc.oneof(
  withExtras(fc.record({ email: sometimes(fc.oneof(fc.emailAddress(), nastyString)), password: sometimes(fc.oneof(fc.string({ minLength: 1, maxLength: 30 }), nastyString)) }, { requiredKeys: [] })),
  wrongTyped,
);

/** Ids in paths: UUIDs (valid, unknown), and anything else a path segment can carry. */
export const id: fc.Arbitrary<string> = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.constantFrom('stats', '..', '.', '%2e%2e', 'zip_1', 'null', '0', '-1', '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
  nastyString,
);

const isoish: fc.Arbitrary<string> = fc.oneof(
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
  fc.integer({ min: -271_821, max: 275_760 }).map((year) => {
    const y = year < 0 || year > 9999 ? `${year < 0 ? '-' : '+'}${String(Math.abs(year)).padStart(6, '0')}` : String(year).padStart(4, '0');
    return `${y}-01-01T00:00:00.000Z`;
  }),
  nastyString,
);

/** `cursor` values: well-formed ones with odd dates, near-misses, and garbage. */
export const cursor: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(isoish, fc.oneof(fc.uuid(), nastyString)).map((pair) => Buffer.from(JSON.stringify(pair)).toString('base64url')),
  anyJson.map((value) => Buffer.from(JSON.stringify(value) ?? '').toString('base64url')),
  nastyString,
);

/** Query strings of GET /jobs. */
export const listQuery: fc.Arbitrary<string> = fc
  .record(
    {
      limit: fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), nastyString),
      cursor,
      status: fc.oneof(fc.constantFrom('pending', 'processing', 'completed', 'failed', 'preparing', 'PENDING'), nastyString),
      extra: nastyString,
      repeated: fc.constant('status=completed&status=failed'),
    },
    { requiredKeys: [] },
  )
  .map((q) =>
    Object.entries(q)
      .map(([k, v]) => (k === 'repeated' ? v : `${k === 'extra' ? 'x' : k}=${encode(v)}`))
      .join('&'),
  );

/** Header values fetch can send (no CR, LF or NUL; Latin-1). */
export const headerValue: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).filter((c) => c !== 0x7f).map((c) => String.fromCharCode(c)), maxLength: 60 }),
  fc.constantFrom('', 'null', 'Bearer', 'Bearer ', 'bearer a.b.c', 'Basic YTpi', 'azk_', 'azk_' + 'A'.repeat(43), 'a'.repeat(8000)),
);

/** Claims for a token signed with the real session secret: what we issue, bent. */
export const sessionClaims: fc.Arbitrary<Record<string, unknown>> = fc
  .record(
    {
      sub: fc.oneof(fc.uuid(), wrongTyped),
      iss: fc.oneof(fc.constant('archive-packager'), wrongTyped),
      iat: fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), wrongTyped),
      exp: fc.oneof(fc.integer({ min: 0, max: 2 ** 40 }), wrongTyped),
      nbf: fc.integer(),
      aud: wrongTyped,
      jti: nastyString,
    },
    { requiredKeys: [] },
  )
  .map((claims) => JSON.parse(JSON.stringify(claims)) as Record<string, unknown>);

/** How a request authenticates. */
export type Auth =
  | { kind: 'key' }
  | { kind: 'none' }
  | { kind: 'api-key-header'; value: string }
  | { kind: 'authorization'; value: string }
  | { kind: 'forged-session'; claims: Record<string, unknown>; alg: 'HS256' | 'HS384' };

export const auth: fc.Arbitrary<Auth> = fc.oneof(
  { weight: 12, arbitrary: fc.constant<Auth>({ kind: 'key' }) },
  { weight: 1, arbitrary: fc.constant<Auth>({ kind: 'none' }) },
  { weight: 1, arbitrary: headerValue.map((value): Auth => ({ kind: 'api-key-header', value })) },
  { weight: 1, arbitrary: headerValue.map((value): Auth => ({ kind: 'authorization', value })) },
  { weight: 2, arbitrary: fc.record({ claims: sessionClaims, alg: fc.constantFrom('HS256' as const, 'HS384' as const) }).map(({ claims, alg }): Auth => ({ kind: 'forged-session', claims, alg })) },
);

/** A header now and then (one request in `every`), so most requests reach the routes' logic. */
const rarely = <T>(value: fc.Arbitrary<T>, every: number) => fc.oneof({ weight: every - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: value });

/** Other request headers, some of which the API reads. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record({
    'x-forwarded-for': rarely(fc.oneof(fc.ipV4(), fc.ipV6(), headerValue), 2),
    'content-type': rarely(fc.oneof(fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', 'application/json; charset=nope', 'multipart/form-data; boundary=x'), headerValue), 6),
    'content-encoding': rarely(fc.constantFrom('gzip', 'br', 'identity', 'nope'), 10),
    range: rarely(fc.oneof(fc.constantFrom('bytes=0-0', 'bytes=-1', 'bytes=5-1', 'bytes=0-', 'bytes=0-1,2-3', 'bytes=99999999999999999999-'), headerValue), 3),
    'if-range': rarely(headerValue, 6),
    accept: rarely(headerValue, 6),
  })
  .map((headers) => Object.fromEntries(Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined)));

/** A body: JSON of a generated value, raw text that is not JSON, or deep nesting. */
export type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; text: string };

export const bodyOf = (value: fc.Arbitrary<unknown>): fc.Arbitrary<Body> =>
  fc.oneof(
    { weight: 8, arbitrary: value.map((v): Body => ({ kind: 'json', value: v })) },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
    { weight: 1, arbitrary: fc.oneof(nastyString, fc.constantFrom('{', '{"files": [', 'nul', '1e999999', '"\\ud800"', '{"a":1,"a":2}')).map((text): Body => ({ kind: 'raw', text })) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 100, max: 20_000 }).chain((depth) =>
        fc.constantFrom(
          { kind: 'raw', text: `${'['.repeat(depth)}${']'.repeat(depth)}` } as Body,
          { kind: 'raw', text: `{"files":${'['.repeat(depth)}${']'.repeat(depth)}}` } as Body,
          { kind: 'raw', text: `{"metadata":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}` } as Body,
        ),
      ),
    },
  );
