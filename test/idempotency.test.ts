// Idempotent requests (docs/fair-share.md#idempotency-key): an Idempotency-Key replays the first answer of a create,
// refuses another request under the same key, and is kept 24 hours per user.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { API_ROUTES, buildOpenApiDocument, openApiPath } from '@ap/contract';
import { ArchiveClient } from '@ap/sdk';
import { call, createUser } from './helpers';
import { startStack, type Stack } from './stack';

let stack: Stack;
let clockOffsetMs = 0;
const DAY_MS = 24 * 3600 * 1000;

beforeAll(async () => {
  // No workers: jobs stay pending, which is all these tests need.
  stack = await startStack({}, { workers: false, app: { clock: () => new Date(Date.now() + clockOffsetMs) } });
});
afterAll(async () => {
  await stack.close();
});

const jobBody = (n = 1) => ({ files: Array.from({ length: n }, (_, i) => ({ url: `http://127.0.0.1:9/f${i}.bin` })) });
const post = (key: string, path: string, body: unknown, idempotencyKey?: string) =>
  call(stack.url, 'POST', path, { key, body, headers: idempotencyKey === undefined ? {} : { 'Idempotency-Key': idempotencyKey } });
const jobsOf = (userId: string) => stack.ctx.db.job.count({ where: { userId } });

describe('Idempotency-Key on POST /jobs', () => {
  it('replays the first answer, marked, and creates nothing twice', async () => {
    const user = await createUser(stack.ctx);
    const first = await post(user.apiKey, '/jobs', jobBody(), 'order-1');
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const again = await post(user.apiKey, '/jobs', jobBody(), 'order-1');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await jobsOf(user.userId)).toBe(1);
  });

  it('refuses the key with another body (422) and answers its first request only', async () => {
    const user = await createUser(stack.ctx);
    expect((await post(user.apiKey, '/jobs', jobBody(1), 'k')).status).toBe(201);
    const other = await post(user.apiKey, '/jobs', jobBody(2), 'k');
    expect(other.status).toBe(422);
    expect(other.body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await jobsOf(user.userId)).toBe(1);
  });

  it('five concurrent requests with one key make one job; the others are told to retry or replayed', async () => {
    const user = await createUser(stack.ctx);
    const answers = await Promise.all(Array.from({ length: 5 }, () => post(user.apiKey, '/jobs', jobBody(), 'burst')));
    const created = answers.filter((a) => a.status === 201 && a.headers.get('idempotent-replayed') === null);
    expect(created).toHaveLength(1);
    for (const a of answers.filter((x) => x !== created[0])) {
      if (a.status === 409) expect([a.body.error.code, a.headers.get('retry-after')]).toEqual(['IDEMPOTENCY_KEY_IN_USE', '1']);
      else expect([a.status, a.headers.get('idempotent-replayed'), a.body]).toEqual([201, 'true', created[0]!.body]);
    }
    expect(await jobsOf(user.userId)).toBe(1);
  });

  it('does not keep a refused request: the corrected one may use the key', async () => {
    const user = await createUser(stack.ctx);
    const refused = await post(user.apiKey, '/jobs', { files: [] }, 'fix-me');
    expect(refused.status).toBe(400);
    const corrected = await post(user.apiKey, '/jobs', jobBody(), 'fix-me');
    expect(corrected.status).toBe(201);
    expect(corrected.headers.get('idempotent-replayed')).toBeNull();
  });

  it('keeps a key 24 hours: after that the same key is a new request', async () => {
    const user = await createUser(stack.ctx);
    expect((await post(user.apiKey, '/jobs', jobBody(), 'daily')).status).toBe(201);
    clockOffsetMs = DAY_MS - 60_000;
    try {
      expect((await post(user.apiKey, '/jobs', jobBody(), 'daily')).headers.get('idempotent-replayed')).toBe('true');
      clockOffsetMs = DAY_MS + 1000;
      const later = await post(user.apiKey, '/jobs', jobBody(2), 'daily');
      expect([later.status, later.headers.get('idempotent-replayed')]).toEqual([201, null]);
    } finally {
      clockOffsetMs = 0;
    }
    expect(await jobsOf(user.userId)).toBe(2);
  });

  it('scopes keys to the user', async () => {
    const [a, b] = [await createUser(stack.ctx), await createUser(stack.ctx)];
    const first = await post(a.apiKey, '/jobs', jobBody(), 'shared-key');
    const other = await post(b.apiKey, '/jobs', jobBody(), 'shared-key');
    expect([other.status, other.headers.get('idempotent-replayed')]).toEqual([201, null]);
    expect(other.body.job_id).not.toBe(first.body.job_id);
  });

  it('stores a fingerprint that is a keyed HMAC, not a bare hash a guessed password can be checked against', async () => {
    const user = await createUser(stack.ctx);
    const body = { files: [{ url: 'http://127.0.0.1:9/p.bin', headers: { Authorization: 'Basic cGFzc3dvcmQ=' } }] };
    expect((await post(user.apiKey, '/jobs', body, 'fingerprinted')).status).toBe(201);
    const rows = await stack.ctx.db.$queryRaw<{ fingerprint: string }[]>`SELECT fingerprint FROM idempotency_keys WHERE user_id = ${user.userId}::uuid`;
    expect(rows).toHaveLength(1);
    const bare = createHash('sha256').update(`POST /jobs\n${JSON.stringify(body)}`).digest('hex');
    expect(rows[0]!.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.fingerprint).not.toBe(bare);
    // Still a fingerprint: the same request replays, another body is refused.
    expect((await post(user.apiKey, '/jobs', body, 'fingerprinted')).headers.get('idempotent-replayed')).toBe('true');
    expect((await post(user.apiKey, '/jobs', { files: [{ url: 'http://127.0.0.1:9/p.bin', headers: { Authorization: 'Basic b3RoZXI=' } }] }, 'fingerprinted')).status).toBe(422);
  });

  it('refuses a malformed key with 400 naming the header', async () => {
    const user = await createUser(stack.ctx);
    const res = await post(user.apiKey, '/jobs', jobBody(), 'x'.repeat(256));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/Idempotency-Key/);
  });
});

describe('every create route', () => {
  // A request body per create route; a documented idempotent route without one fails here.
  const bodies: Record<string, (ctx: { jobId: string }) => unknown> = {
    '/jobs': () => jobBody(),
    '/jobs/{id}/retry': () => ({ from_checkpoint: true }),
    '/api-keys': () => ({ name: 'ci' }),
    '/webhooks': () => ({ url: 'http://127.0.0.1:9/hook' }),
    '/sources': () => ({ name: 'store', type: 's3', region: 'us-east-1', access_key_id: 'AKIAEXAMPLE', secret_access_key: 'not-a-real-secret' }),
  };
  const routes = API_ROUTES.filter((r) => r.headers?.['Idempotency-Key']);

  it('documents the header and both codes on the create routes', () => {
    expect(routes.map((r) => openApiPath(r.path))).toEqual(expect.arrayContaining(['/jobs', '/jobs/{id}/retry', '/api-keys', '/webhooks']));
    for (const r of routes) expect(Object.keys(bodies)).toContain(openApiPath(r.path));
    const doc = buildOpenApiDocument() as any;
    for (const r of routes) {
      const op = doc.paths[openApiPath(r.path)].post;
      expect(op.parameters.map((p: { in: string; name: string }) => `${p.in} ${p.name}`)).toContain('header Idempotency-Key');
      expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['409', '422']));
      const success = Object.entries(op.responses).find(([status]) => status.startsWith('2'))![1] as { headers: Record<string, unknown> };
      expect(success.headers['Idempotent-Replayed']).toBeDefined();
    }
  });

  it('replays each one', async () => {
    const user = await createUser(stack.ctx);
    const jobId = (await post(user.apiKey, '/jobs', jobBody())).body.job_id as string;
    // Only failed jobs can be retried.
    await stack.ctx.db.job.update({ where: { id: jobId }, data: { status: 'failed' } });
    for (const route of routes) {
      const path = route.path.replace(':id', jobId);
      const body = bodies[openApiPath(route.path)]!({ jobId });
      const first = await post(user.apiKey, path, body, `route ${route.path}`);
      expect([path, first.status >= 200 && first.status < 300]).toEqual([path, true]);
      const again = await post(user.apiKey, path, body, `route ${route.path}`);
      expect({ path, status: again.status, replayed: again.headers.get('idempotent-replayed'), body: again.body }).toEqual({ path, status: first.status, replayed: 'true', body: first.body });
    }
    // One retry happened (a second would answer 400: the job is no longer failed).
    expect((await stack.ctx.db.job.findUniqueOrThrow({ where: { id: jobId } })).attempt).toBe(1);
  });
});

describe('the SDK (and the CLI and dashboard through it)', () => {
  it('sends a generated key on a create and retries a lost answer without creating twice', async () => {
    const user = await createUser(stack.ctx);
    const sent: (string | null)[] = [];
    let lose = true;
    // The first answer is lost on the way back (the job was created): the SDK sends it again.
    const losingFetch: typeof fetch = async (input, init) => {
      sent.push(new Headers(init?.headers).get('idempotency-key'));
      const res = await fetch(input, init);
      if (lose) {
        lose = false;
        await res.text();
        throw new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } });
      }
      return res;
    };
    const client = new ArchiveClient({ baseUrl: stack.url, apiKey: user.apiKey, fetch: losingFetch });
    const { job_id } = await client.createJob(jobBody());
    expect(sent).toHaveLength(2);
    expect(sent[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent[1]).toBe(sent[0]);
    expect(await stack.ctx.db.job.findMany({ where: { userId: user.userId }, select: { id: true } })).toEqual([{ id: job_id }]);
  });
});
