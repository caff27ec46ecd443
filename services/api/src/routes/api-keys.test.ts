import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { call, createUser, startApi, type TestApi } from '../../../../test/helpers';

let api: TestApi;
beforeAll(async () => {
  api = await startApi();
});
afterAll(async () => {
  await api.close();
});

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('API keys', () => {
  it('creates a key (201), shows the secret once, and never lists it', async () => {
    const { apiKey } = await createUser(api.ctx);
    const created = await call(api.url, 'POST', '/api-keys', { key: apiKey, body: { name: 'ci' } });
    expect(created.status).toBe(201);
    expect(created.body.success).toBe(true);
    const k = created.body.api_key;
    expect(Object.keys(k).sort()).toEqual(['created_at', 'expires_at', 'id', 'key', 'last_used_at', 'name']);
    expect(k.key).toMatch(/^azk_[A-Za-z0-9_-]{43}$/);
    expect(k.name).toBe('ci');
    expect(k.created_at).toMatch(ISO_UTC);
    expect(k.expires_at).toBeNull();
    expect(k.last_used_at).toBeNull();

    const list = await call(api.url, 'GET', '/api-keys', { key: apiKey });
    expect(list.status).toBe(200);
    expect(list.body.success).toBe(true);
    const listed = list.body.api_keys.find((x: { id: string }) => x.id === k.id);
    expect(listed).toEqual({ id: k.id, name: 'ci', created_at: k.created_at, expires_at: null, last_used_at: null });
    expect(JSON.stringify(list.body)).not.toContain(k.key);

    // The new key works.
    expect((await call(api.url, 'GET', '/api-keys', { key: k.key })).status).toBe(200);
  });

  it('stores only a hash: no plain key appears anywhere in the database', async () => {
    const { apiKey } = await createUser(api.ctx);
    const created = await call(api.url, 'POST', '/api-keys', { key: apiKey, body: {} });
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    try {
      for (const plain of [apiKey, created.body.api_key.key as string]) {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM api_keys WHERE encode(key_hash, 'escape') LIKE '%' || $1 || '%' OR name LIKE '%' || $1 || '%'`,
          [plain],
        );
        expect(rows[0].n).toBe(0);
        // Whole-database scan: a text dump of every table must not contain the key.
        const tables = await client.query(`SELECT tablename FROM pg_tables WHERE schemaname = 'public'`);
        for (const { tablename } of tables.rows) {
          const hit = await client.query(`SELECT count(*)::int AS n FROM "${tablename}" t WHERE t::text LIKE '%' || $1 || '%'`, [plain.slice(4)]);
          expect({ table: tablename, n: hit.rows[0].n }).toEqual({ table: tablename, n: 0 });
        }
      }
    } finally {
      await client.end();
    }
  });

  it('validates name and expires_at', async () => {
    const { apiKey } = await createUser(api.ctx);
    const cases = [
      { name: 'x'.repeat(256) },
      { name: 5 },
      { expires_at: 'tomorrow' },
      { expires_at: new Date(Date.now() - 1000).toISOString() },
    ];
    for (const body of cases) {
      const res = await call(api.url, 'POST', '/api-keys', { key: apiKey, body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ success: false, error: { code: 'INVALID_REQUEST', message: expect.any(String) } });
    }
    const ok = await call(api.url, 'POST', '/api-keys', { key: apiKey, body: { name: 'x'.repeat(255) } });
    expect(ok.status).toBe(201);
  });

  it('rejects an expired key with 401 once expires_at passes', async () => {
    const { apiKey } = await createUser(api.ctx);
    const expiresAt = new Date(Date.now() + 1500);
    const created = await call(api.url, 'POST', '/api-keys', { key: apiKey, body: { expires_at: expiresAt.toISOString() } });
    expect(created.status).toBe(201);
    expect(created.body.api_key.expires_at).toBe(expiresAt.toISOString());
    expect((await call(api.url, 'GET', '/api-keys', { key: created.body.api_key.key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, expiresAt.getTime() - Date.now() + 50));
    const res = await call(api.url, 'GET', '/api-keys', { key: created.body.api_key.key });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
  });

  it('revokes a key: 200, then it is gone from the list and answers 401; revoking again is 404', async () => {
    const { apiKey } = await createUser(api.ctx);
    const created = await call(api.url, 'POST', '/api-keys', { key: apiKey, body: { name: 'temp' } });
    const id = created.body.api_key.id;
    const del = await call(api.url, 'DELETE', `/api-keys/${id}`, { key: apiKey });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ success: true, message: expect.any(String) });
    const list = await call(api.url, 'GET', '/api-keys', { key: apiKey });
    expect(list.body.api_keys.map((k: { id: string }) => k.id)).not.toContain(id);
    expect((await call(api.url, 'GET', '/api-keys', { key: created.body.api_key.key })).status).toBe(401);
    expect((await call(api.url, 'DELETE', `/api-keys/${id}`, { key: apiKey })).status).toBe(404);
  });

  it('caps active keys at 100 per user: creations racing past the cap get 403 PLAN_LIMIT_EXCEEDED, and a revoked or expired key frees a place', async () => {
    const { apiKey, userId } = await createUser(api.ctx);
    // createUser made one key; 120 more requests at once race for the 99 places left.
    const results = await Promise.all(Array.from({ length: 120 }, () => call(api.url, 'POST', '/api-keys', { key: apiKey, body: {} })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(99);
    expect(statuses.filter((s) => s === 403)).toHaveLength(21);
    const refused = results.find((r) => r.status === 403)!;
    expect(refused.body).toEqual({ success: false, error: { code: 'PLAN_LIMIT_EXCEEDED', message: expect.stringContaining('100') } });
    expect(await api.ctx.db.apiKey.count({ where: { userId, revokedAt: null } })).toBe(100);

    const revoked = results.find((r) => r.status === 201)!.body.api_key.id;
    expect((await call(api.url, 'DELETE', `/api-keys/${revoked}`, { key: apiKey })).status).toBe(200);
    expect((await call(api.url, 'POST', '/api-keys', { key: apiKey, body: {} })).status).toBe(201);
    expect((await call(api.url, 'POST', '/api-keys', { key: apiKey, body: {} })).status).toBe(403);
    // An expired key is not active either.
    const other = results.filter((r) => r.status === 201)[1]!.body.api_key.id;
    await api.ctx.db.apiKey.update({ where: { id: other }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await call(api.url, 'POST', '/api-keys', { key: apiKey, body: {} })).status).toBe(201);
  });

  it("isolates users: another user's key reads as NOT_FOUND and is not listed", async () => {
    const alice = await createUser(api.ctx);
    const bob = await createUser(api.ctx);
    const bobKey = await call(api.url, 'POST', '/api-keys', { key: bob.apiKey, body: { name: 'bob' } });
    const res = await call(api.url, 'DELETE', `/api-keys/${bobKey.body.api_key.id}`, { key: alice.apiKey });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ success: false, error: { code: 'NOT_FOUND', message: expect.any(String) } });
    const aliceList = await call(api.url, 'GET', '/api-keys', { key: alice.apiKey });
    expect(aliceList.body.api_keys.map((k: { id: string }) => k.id)).not.toContain(bobKey.body.api_key.id);
    // Bob's key still works.
    expect((await call(api.url, 'GET', '/api-keys', { key: bobKey.body.api_key.key })).status).toBe(200);
    // Unknown and malformed ids are 404 as well.
    expect((await call(api.url, 'DELETE', '/api-keys/00000000-0000-4000-8000-000000000000', { key: alice.apiKey })).status).toBe(404);
    expect((await call(api.url, 'DELETE', '/api-keys/not-a-uuid', { key: alice.apiKey })).status).toBe(404);
  });
});

describe('authentication', () => {
  it('answers 401 UNAUTHORIZED for a missing, unknown or malformed key', async () => {
    for (const headers of <Record<string, string>[]>[{}, { 'x-api-key': 'azk_nope' }, { 'x-api-key': '' }, { authorization: 'Basic abc' }, { authorization: 'Bearer not.a.jwt' }]) {
      const res = await call(api.url, 'GET', '/api-keys', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ success: false, error: { code: 'UNAUTHORIZED', message: expect.any(String) } });
    }
  });

  it('writes last_used_at on use, at most once a minute', async () => {
    const { apiKey, userId } = await createUser(api.ctx);
    const key = await api.ctx.db.apiKey.findFirstOrThrow({ where: { userId } });
    expect(key.lastUsedAt).toBeNull();
    await call(api.url, 'GET', '/api-keys', { key: apiKey });
    const first = (await api.ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt;
    expect(first).toBeInstanceOf(Date);
    await call(api.url, 'GET', '/api-keys', { key: apiKey });
    const second = (await api.ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt;
    expect(second?.getTime()).toBe(first?.getTime());
    // The listed value is what the database holds.
    const list = await call(api.url, 'GET', '/api-keys', { key: apiKey });
    expect(list.body.api_keys.find((k: { id: string }) => k.id === key.id).last_used_at).toBe(first?.toISOString());

    // A minute later (simulated by ageing the stored value and using another replica) it is written again.
    await api.ctx.db.apiKey.update({ where: { id: key.id }, data: { lastUsedAt: new Date(Date.now() - 61_000) } });
    const replica = await startApi();
    try {
      await call(replica.url, 'GET', '/api-keys', { key: apiKey });
    } finally {
      await replica.close();
    }
    const third = (await api.ctx.db.apiKey.findUniqueOrThrow({ where: { id: key.id } })).lastUsedAt;
    expect(Date.now() - third!.getTime()).toBeLessThan(5000);
  });

  it('logs in with email and password and accepts the session JWT as Bearer', async () => {
    const user = await createUser(api.ctx, { password: 'correct horse battery' });
    const bad = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: 'wrong password' } });
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('UNAUTHORIZED');
    const unknown = await call(api.url, 'POST', '/auth/login', { body: { email: 'nobody@example.test', password: 'whatever1' } });
    expect(unknown.status).toBe(401);
    const invalid = await call(api.url, 'POST', '/auth/login', { body: { email: 'not-an-email' } });
    expect(invalid.status).toBe(400);

    const login = await call(api.url, 'POST', '/auth/login', { body: { email: user.email.toUpperCase(), password: 'correct horse battery' } });
    expect(login.status).toBe(200);
    expect(login.body).toEqual({ success: true, token: expect.any(String) });
    const [header, payload] = (login.body.token as string).split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()));
    expect(header.alg).toBe('HS256');
    expect(payload.sub).toBe(user.userId);
    expect(payload.exp - payload.iat).toBe(12 * 3600);

    const viaSession = await call(api.url, 'POST', '/api-keys', { bearer: login.body.token, body: { name: 'from-dashboard' } });
    expect(viaSession.status).toBe(201);
    const list = await call(api.url, 'GET', '/api-keys', { key: user.apiKey });
    expect(list.body.api_keys.map((k: { name: string }) => k.name)).toContain('from-dashboard');

    // A token signed with another secret is refused.
    const other = await startApi({ SESSION_SECRET: 'x'.repeat(40) });
    try {
      expect((await call(other.url, 'GET', '/api-keys', { bearer: login.body.token })).status).toBe(401);
    } finally {
      await other.close();
    }
  });

  it('a user without a password cannot log in', async () => {
    const user = await createUser(api.ctx);
    const res = await call(api.url, 'POST', '/auth/login', { body: { email: user.email, password: 'anything at all' } });
    expect(res.status).toBe(401);
  });
});
