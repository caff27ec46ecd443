// Findings of the fault and fuzz campaign, each pinned by a test against the real API.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import bcryptjs from 'bcryptjs';
import { SignJWT } from 'jose';
import { call, createUser, startApi, type TestApi } from '../../../test/helpers';

let api: TestApi;
let key: string;
let userId: string;
beforeAll(async () => {
  api = await startApi();
  ({ apiKey: key, userId } = await createUser(api.ctx));
});
afterAll(async () => {
  // Its jobs are never run (no workers here): closed, so no other suite's reconciler picks them up.
  await api.ctx.db.job.updateMany({ where: { userId, status: { in: ['preparing', 'pending', 'processing'] } }, data: { status: 'failed', completedAt: new Date() } });
  await api.close();
});

const envelope = (code: string) => ({ success: false, error: { code, message: expect.any(String) } });

/** A client address of its own per test, so one test's login failures never throttle another's. */
let addressCounter = 0;
const clientAddress = () => `198.51.100.${++addressCounter}`;

describe('list cursor', () => {
  const cursorOf = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  it('answers 400 for a well-formed cursor whose date Postgres cannot hold or that the API never hands out', async () => {
    const id = randomUUID();
    const dates = [
      '-004714-01-01T00:00:00.000Z',
      '0000-01-01T00:00:00.000Z',
      '-000001-12-31T23:59:59.999Z',
      '+275760-09-13T00:00:00.000Z',
      '+010000-01-01T00:00:00.000Z',
      '2024-01-01', // Date.parse accepts it; the API only hands out full ISO timestamps
      'Tue, 01 Jan 2030 00:00:00 GMT',
    ];
    for (const t of dates) {
      const res = await call(api.url, 'GET', `/jobs?cursor=${cursorOf([t, id])}`, { key });
      expect({ t, status: res.status, body: res.body }).toEqual({ t, status: 400, body: envelope('INVALID_REQUEST') });
    }
  });

  it('still accepts a cursor in the form the API hands out', async () => {
    const res = await call(api.url, 'GET', `/jobs?cursor=${cursorOf(['2030-01-01T00:00:00.000Z', randomUUID()])}`, { key });
    expect(res.status).toBe(200);
    expect(res.body.meta).toMatchObject({ has_more: false });
  });
});

describe('session tokens', () => {
  const secret = () => new TextEncoder().encode(process.env.SESSION_SECRET!);

  /** A token signed with the real secret, with exactly the given claims. */
  async function forge(claims: Record<string, unknown>, header: Record<string, unknown> = { alg: 'HS256', typ: 'JWT' }): Promise<string> {
    return new SignJWT(claims).setProtectedHeader(header as { alg: string }).sign(secret());
  }

  it('answers 401 for a token signed with the real secret whose claims are not what the API issues', async () => {
    const user = await createUser(api.ctx);
    const now = Math.floor(Date.now() / 1000);
    const good = { sub: user.userId, iss: 'archive-packager', iat: now, exp: now + 3600 };
    // The well-formed token works, so each refusal below is about its claims.
    expect((await call(api.url, 'GET', '/api-keys', { bearer: await forge(good) })).status).toBe(200);

    const forged: [string, Record<string, unknown>][] = [
      ['non-UUID sub', { ...good, sub: 'not-a-uuid' }],
      ['SQL in sub', { ...good, sub: "' OR 1=1 --" }],
      ['numeric sub', { ...good, sub: 12345 }],
      ['object sub', { ...good, sub: { id: user.userId } }],
      ['unknown user', { ...good, sub: randomUUID() }],
      ['missing exp', { sub: good.sub, iss: good.iss, iat: good.iat }],
      ['string exp', { ...good, exp: String(good.exp) }],
      ['missing iat', { sub: good.sub, iss: good.iss, exp: good.exp }],
      ['iat in the future', { ...good, iat: now + 3600, exp: now + 7200 }],
      ['lifetime longer than issued', { ...good, exp: now + 365 * 86400 }],
      ['missing sub', { iss: good.iss, iat: good.iat, exp: good.exp }],
      ['wrong issuer', { ...good, iss: 'someone-else' }],
      ['array issuer', { ...good, iss: ['archive-packager'] }],
      ['expired', { ...good, iat: now - 7200, exp: now - 3600 }],
      ['extra claims', { ...good, plan: 'scale', admin: true }],
    ];
    for (const [what, claims] of forged) {
      const res = await call(api.url, 'GET', '/api-keys', { bearer: await forge(claims) });
      expect({ what, status: res.status, body: res.body }).toEqual({ what, status: 401, body: envelope('UNAUTHORIZED') });
    }
    // Header games with the right secret.
    for (const header of [{ alg: 'HS512', typ: 'JWT' }, { alg: 'HS256', typ: 'JWT', crit: ['exp'] }]) {
      const res = await call(api.url, 'GET', '/api-keys', { bearer: await forge(good, header).catch(() => 'x.y.z') });
      expect(res.status).toBe(401);
    }
    const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify(good)).toString('base64url')}.`;
    expect((await call(api.url, 'GET', '/api-keys', { bearer: unsigned })).status).toBe(401);
  });
});

describe('login throttling and hashing', () => {
  it('answers the 11th wrong login for one email within a minute with 429 RATE_LIMITED and Retry-After, even with the right password', async () => {
    const user = await createUser(api.ctx, { password: 'the right password' });
    for (let i = 1; i <= 10; i++) {
      // A fresh client address each time: the per-email limit alone applies.
      const res = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: `wrong ${i}` }, headers: { 'x-forwarded-for': clientAddress() } });
      expect({ i, status: res.status }).toEqual({ i, status: 401 });
    }
    const eleventh = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: 'wrong 11' }, headers: { 'x-forwarded-for': clientAddress() } });
    expect(eleventh.status).toBe(429);
    expect(eleventh.body).toEqual(envelope('RATE_LIMITED'));
    const retryAfter = Number(eleventh.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Spelling the email differently is the same account.
    const shouted = await call(api.url, 'POST', '/auth/login', { body: { email: user.email.toUpperCase(), password: 'the right password' }, headers: { 'x-forwarded-for': clientAddress() } });
    expect(shouted.status).toBe(429);
    // Another account is not affected.
    const other = await createUser(api.ctx, { password: 'another password' });
    expect((await call(api.url, 'POST', '/auth/login', { body: { email: other.email, password: 'another password' }, headers: { 'x-forwarded-for': clientAddress() } })).status).toBe(200);
  });

  it('throttles one client address across emails, shared by every API replica through Redis', async () => {
    // Two replicas with a small per-address limit (the default of 30 is the same code path).
    const limits = { perAddress: 5 };
    const [one, two] = [await startApi({}, { loginThrottle: limits }), await startApi({}, { loginThrottle: limits })];
    try {
      const address = clientAddress();
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        // Alternating replicas: the count is in Redis, not in either process.
        const res = await call(i % 2 ? two.url : one.url, 'POST', '/auth/login', { body: { email: `nobody${i}@example.test`, password: 'guess' }, headers: { 'x-forwarded-for': address } });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 401, 401, 401, 429]);
      // A different address still gets an answer on the merits.
      const user = await createUser(api.ctx, { password: 'correct horse' });
      expect((await call(two.url, 'POST', '/auth/login', { body: { email: user.email, password: 'correct horse' }, headers: { 'x-forwarded-for': clientAddress() } })).status).toBe(200);
    } finally {
      await one.close();
      await two.close();
    }
  });

  it('a successful login clears the failures counted against its email', async () => {
    const user = await createUser(api.ctx, { password: 'the right password' });
    const login = (password: string) => call(api.url, 'POST', '/auth/login', { body: { email: user.email, password }, headers: { 'x-forwarded-for': clientAddress() } });
    for (let i = 0; i < 9; i++) expect((await login('wrong')).status).toBe(401);
    expect((await login('the right password')).status).toBe(200);
    // The 11th attempt of the minute, answered on its merits since the success cleared the count.
    expect((await login('wrong again')).status).toBe(401);
  });

  it('accepts password hashes written by the former pure-JS bcrypt (existing users keep logging in)', async () => {
    const user = await createUser(api.ctx);
    // bcryptjs 3 wrote $2b$, bcryptjs 2 wrote $2a$ (the same algorithm under another name).
    const written = await bcryptjs.hash('old js hash', 10);
    for (const [prefix, hash] of [
      ['$2b$', written],
      ['$2a$', written.replace(/^\$2b\$/, '$2a$')],
    ] as const) {
      expect(hash.startsWith(prefix)).toBe(true);
      await api.ctx.db.user.update({ where: { id: user.userId }, data: { passwordHash: hash } });
      const ok = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: 'old js hash' }, headers: { 'x-forwarded-for': clientAddress() } });
      expect(ok.status).toBe(200);
    }
    const wrong = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: 'not it' }, headers: { 'x-forwarded-for': clientAddress() } });
    expect(wrong.status).toBe(401);
  });
});

describe('job URLs', () => {
  it('refuses URLs without a proper host at creation, saying why', async () => {
    const urls = [
      'http:///path',
      'http:127.0.0.1',
      'http:127.0.0.1/file',
      'http:/127.0.0.1/file',
      'https:example.com/a.pdf',
      'http:\\\\127.0.0.1\\file',
      'http:/\\example.com/file',
      'http://@/file',
      'http://user:pass@/file',
      'http://:80/file',
      'http://./file',
      'http://../file',
    ];
    for (const url of urls) {
      const res = await call(api.url, 'POST', '/jobs', { key, body: { files: [{ url }] } });
      expect({ url, status: res.status, body: res.body }).toEqual({ url, status: 400, body: envelope('INVALID_REQUEST') });
      expect(res.body.error.message).toMatch(/files\[0\]\.url/);
      expect(res.body.error.message).toMatch(/host/);
    }
  });

  it('refuses URLs with credentials in them: 400, nothing stored, the credentials never echoed', async () => {
    const before = await api.ctx.db.job.count({ where: { userId } });
    for (const url of ['https://user:s3cretpw@example.com/a.pdf', 'http://s3cretpw@example.com/a.pdf']) {
      for (const mode of ['stored', 'stream']) {
        const res = await call(api.url, 'POST', '/jobs', { key, body: { files: [{ url: 'https://example.com/ok.pdf' }, { url }], mode } });
        expect({ url, status: res.status, body: res.body }).toEqual({ url, status: 400, body: envelope('INVALID_REQUEST') });
        expect(res.body.error.message).toMatch(/^files\[1\]\.url: must not contain a user name or password/);
        expect(JSON.stringify(res.body)).not.toContain('s3cretpw');
      }
    }
    expect(await api.ctx.db.job.count({ where: { userId } })).toBe(before);
    const source = await call(api.url, 'POST', '/sources', {
      key,
      body: { name: 'creds-in-endpoint', type: 's3', region: 'auto', access_key_id: 'a', secret_access_key: 'b', endpoint: 'https://AKIAX:s3cretpw@minio.example:9000' },
    });
    expect(source.status).toBe(400);
    expect(JSON.stringify(source.body)).not.toContain('s3cretpw');
    const webhook = await call(api.url, 'POST', '/webhooks', { key, body: { url: 'https://u:s3cretpw@hooks.example/x' } });
    expect(webhook.status).toBe(400);
    expect(JSON.stringify(webhook.body)).not.toContain('s3cretpw');
  });

  it('refuses a given filename with ":" in any segment (an NTFS stream or a drive)', async () => {
    for (const filename of ['a.txt:Zone.Identifier', 'C:evil.exe', 'docs/x:y.pdf']) {
      const res = await call(api.url, 'POST', '/jobs', { key, body: { files: [{ url: 'https://example.com/a.txt', filename }] } });
      expect({ filename, status: res.status, body: res.body }).toEqual({ filename, status: 400, body: envelope('INVALID_REQUEST') });
      expect(res.body.error.message).toMatch(/^files\[0\]\.filename: /);
    }
  });

  it('still accepts ordinary URLs', async () => {
    for (const url of ['http://example.com/a.pdf', 'https://example.com:8443/x?y=1#z@a', 'http://[2001:db8::1]/f', 'http://xn--bcher-kva.example/b']) {
      const res = await call(api.url, 'POST', '/jobs', { key, body: { files: [{ url }], mode: 'stream' } });
      expect({ url, status: res.status }).toEqual({ url, status: 201 });
    }
  });
});

describe('methods and OPTIONS', () => {
  it('answers OPTIONS on a known path with 204 and Allow, without authentication', async () => {
    const expected: [string, string][] = [
      ['/jobs', 'GET, HEAD, POST, OPTIONS'],
      [`/jobs/${randomUUID()}`, 'GET, HEAD, DELETE, OPTIONS'],
      [`/jobs/${randomUUID()}/retry`, 'POST, OPTIONS'],
      ['/api-keys', 'GET, HEAD, POST, OPTIONS'],
      [`/api-keys/${randomUUID()}`, 'DELETE, OPTIONS'],
      ['/auth/login', 'POST, OPTIONS'],
      ['/download/some-token', 'GET, HEAD, OPTIONS'],
      ['/healthz', 'GET, HEAD, OPTIONS'],
    ];
    for (const [path, allow] of expected) {
      const res = await fetch(api.url + path, { method: 'OPTIONS' });
      expect({ path, status: res.status, allow: res.headers.get('allow'), body: await res.text() }).toEqual({ path, status: 204, allow, body: '' });
    }
  });

  it('answers a method a known path does not take with 405, Allow and the envelope', async () => {
    const cases: [string, string, string][] = [
      ['DELETE', '/jobs', 'GET, HEAD, POST, OPTIONS'],
      ['PUT', `/jobs/${randomUUID()}`, 'GET, HEAD, DELETE, OPTIONS'],
      ['GET', `/jobs/${randomUUID()}/retry`, 'POST, OPTIONS'],
      ['PATCH', '/api-keys', 'GET, HEAD, POST, OPTIONS'],
      ['GET', '/auth/login', 'POST, OPTIONS'],
      ['POST', '/download/some-token', 'GET, HEAD, OPTIONS'],
      ['POST', '/healthz', 'GET, HEAD, OPTIONS'],
    ];
    for (const [method, path, allow] of cases) {
      const res = await call(api.url, method, path, { key });
      expect({ method, path, status: res.status, allow: res.headers.get('allow'), body: res.body }).toEqual({ method, path, status: 405, allow, body: envelope('METHOD_NOT_ALLOWED') });
    }
  });

  it('keeps 404 NOT_FOUND for unknown paths, whatever the method', async () => {
    for (const method of ['GET', 'OPTIONS', 'DELETE']) {
      const res = await call(api.url, method, '/no/such/route', { key });
      expect({ method, status: res.status, body: res.body }).toEqual({ method, status: 404, body: envelope('NOT_FOUND') });
    }
  });

  it("answers what Node's HTTP parser refuses in the envelope too (a URL over 16 KB, a malformed request)", async () => {
    const long = await call(api.url, 'GET', `/jobs?x=${'a'.repeat(20_000)}`, { key });
    expect({ status: long.status, body: long.body }).toEqual({ status: 431, body: envelope('INVALID_REQUEST') });
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(api.url).port), '127.0.0.1', () => socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toEqual(envelope('INVALID_REQUEST'));
  });
});
