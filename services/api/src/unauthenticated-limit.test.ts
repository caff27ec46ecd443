// Unauthenticated floods and names that break extraction, against the real API.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '@ap/db';
import { call, createUser, startApi, type TestApi } from '../../../test/helpers';
import { createApp } from './app';

const LIMIT = 20;
let api: TestApi;
let key: string;
const servers: http.Server[] = [];

/** The real database, with its API key lookups counted. */
function countingLookups(db: Db): { db: Db; lookups: () => number } {
  let lookups = 0;
  const apiKey = new Proxy(db.apiKey, {
    get: (target, name, receiver) =>
      name === 'findUnique'
        ? (...args: Parameters<Db['apiKey']['findUnique']>) => {
            lookups++;
            return target.findUnique(...args);
          }
        : Reflect.get(target, name, receiver),
  });
  return { db: new Proxy(db, { get: (target, name, receiver) => (name === 'apiKey' ? apiKey : Reflect.get(target, name, receiver)) }), lookups: () => lookups };
}

/** The API app on `api`'s connections, with `overrides` on its config and its key lookups counted. */
async function countedApi(overrides: Partial<TestApi['ctx']['config']>) {
  const counted = countingLookups(api.ctx.db);
  const server = http.createServer(createApp({ ...api.ctx, db: counted.db, config: { ...api.ctx.config, ...overrides } }));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lookups: counted.lookups };
}

beforeAll(async () => {
  api = await startApi();
  key = (await createUser(api.ctx)).apiKey;
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
  await api.close();
});

let prefixCounter = 0;
/** A Redis namespace per API, so each test counts from zero. */
const freshPrefix = () => `${api.ctx.config.REDIS_PREFIX}-unauth-${++prefixCounter}`;

describe('requests without a valid API key', () => {
  it('300 requests with unknown keys from one address: at most the limit are looked up, the rest are 429 with Retry-After', async () => {
    const counted = await countedApi({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: LIMIT, REDIS_PREFIX: freshPrefix(), TRUSTED_PROXIES: [] });
    // Known before the flood: its owner keeps working through it.
    expect((await call(counted.url, 'GET', '/usage', { key })).status).toBe(200);
    const lookupsBefore = counted.lookups();
    const statuses: number[] = [];
    const retryAfters = new Set<string | null>();
    for (let batch = 0; batch < 30; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, i) => call(counted.url, 'GET', '/jobs', { key: `azk_unknown_${batch}_${i}_${'x'.repeat(30)}`, headers: { 'x-forwarded-for': `203.0.113.${batch}` } })),
      );
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status === 429) {
          expect(answer.body).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.stringContaining('from this address') } });
          retryAfters.add(answer.headers.get('retry-after'));
        }
      }
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(300 - LIMIT);
    expect(counted.lookups() - lookupsBefore).toBe(LIMIT);
    for (const value of retryAfters) expect(Number(value)).toBeGreaterThanOrEqual(1);
    // X-Forwarded-For was not believed (no trusted proxies): one address, whatever it said.
    expect((await call(counted.url, 'GET', '/usage', { key })).status).toBe(200);
    expect(counted.lookups() - lookupsBefore).toBe(LIMIT + 1);
    expect((await call(counted.url, 'GET', '/usage')).status).toBe(429);
  });

  it('counts per forwarded address behind a trusted proxy, and a missing key counts too', async () => {
    const counted = await countedApi({ UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE: 3, REDIS_PREFIX: freshPrefix(), TRUSTED_PROXIES: ['127.0.0.1'] });
    const from = (address: string, withKey?: string) => call(counted.url, 'GET', '/usage', { ...(withKey ? { key: withKey } : {}), headers: { 'x-forwarded-for': address } });
    const first: number[] = [];
    for (let i = 0; i < 4; i++) first.push((await from('198.51.100.7', i % 2 ? 'azk_made_up' : undefined)).status);
    expect(first).toEqual([401, 401, 401, 429]);
    expect(counted.lookups()).toBe(1);
    expect((await from('198.51.100.8')).status).toBe(401);
    // Successes give their count back: a client with a valid key is never limited by this.
    for (let i = 0; i < 5; i++) expect((await from('198.51.100.9', key)).status).toBe(200);
  });
});

describe('names that break extraction', () => {
  it.each(['CON', 'docs/nul.txt', 'report.', 'report ', '\u202egpj.exe'])('refuses the given filename %j with 400 naming the field', async (filename) => {
    const res = await call(api.url, 'POST', '/jobs', { key, body: { files: [{ url: 'https://example.com/a.txt', filename }] } });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(res.body.error.message).toContain('files[0].filename');
  });
});
