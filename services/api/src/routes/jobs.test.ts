// Jobs API rules (docs/api.md#job-create-fields, docs/api.md#limits, docs/product-rules.md#counts-and-names), against the real API and database.
// Workers are not running here: jobs stay where the API put them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { call, createUser, startApi, type TestApi } from '../../../../test/helpers';

let api: TestApi;
let key: string;
let userId: string;
beforeAll(async () => {
  api = await startApi();
  ({ apiKey: key, userId } = await createUser(api.ctx, { plan: 'pro' }));
});
afterAll(async () => {
  await api.close();
});

const file = (i = 0) => ({ url: `https://files.example.com/f/${i}.bin` });
const post = (body: unknown, apiKey = key) => call(api.url, 'POST', '/jobs', { key: apiKey, body });

async function expect400(body: unknown, messagePart?: RegExp) {
  const res = await post(body);
  expect({ status: res.status, code: res.body?.error?.code }).toEqual({ status: 400, code: 'INVALID_REQUEST' });
  expect(res.body.success).toBe(false);
  if (messagePart) expect(res.body.error.message).toMatch(messagePart);
}

describe('POST /jobs validation', () => {
  it('creates a job with defaults: 201 {success, job_id}, pending, one ZIP named archive-{id}.zip', async () => {
    const res = await post({ files: [file(1), { url: 'https://files.example.com/x', filename: 'dir/x.txt' }] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ success: true, job_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const job = (await call(api.url, 'GET', `/jobs/${res.body.job_id}`, { key })).body.job;
    expect(job).toMatchObject({
      id: res.body.job_id,
      status: 'pending',
      files: [{ url: file(1).url, filename: null }, { url: 'https://files.example.com/x', filename: 'dir/x.txt' }],
      url_count: 2,
      file_count: 0,
      zip_filename: `archive-${res.body.job_id}.zip`,
      zip_size: null,
      fail_on_url_error: true,
      download_url: null,
      metadata: null,
      completed_at: null,
      multi_zip: false,
      max_zip_size_bytes: null,
      split_strategy: 'preserve-order',
      fail_on_zip_error: true,
      zip_count: 1,
      total_size: 0,
    });
    expect(job.errors).toBeUndefined();
    expect(job.zips).toEqual([
      { id: expect.stringMatching(/^zip_/), sequence: 1, status: 'pending', filename: `archive-${res.body.job_id}.zip`, file_count: 2, size: null, download_url: null, bytes_done: 0, expected_size: null },
    ]);
    expect(Date.parse(job.expires_at) - Date.parse(job.created_at)).toBe(86_400_000);
  });

  it('starts split and stream jobs in preparing', async () => {
    for (const body of [{ files: [file()], max_zip_size_bytes: 104857600 }, { files: [file()], mode: 'stream' }]) {
      const res = await post(body);
      expect(res.status).toBe(201);
      const job = (await call(api.url, 'GET', `/jobs/${res.body.job_id}`, { key })).body.job;
      expect(job.status).toBe('preparing');
      expect(job.zips).toEqual([]);
    }
  });

  it('enforces every field rule of the create table', async () => {
    await expect400({}, /files/);
    await expect400({ files: [] }, /files/);
    await expect400({ files: [{}] }, /url/);
    await expect400({ files: [{ url: 'ftp://x.example/a' }] }, /url/);
    await expect400({ files: [{ url: 'not a url' }] }, /url/);
    await expect400({ files: [file(), { url: 'https://files.example.com/my file.pdf' }] }, /^files\[1\]\.url: must not contain a space: a URL carries it percent-encoded \(%20\)$/);
    await expect400({ files: 'x' });
    await expect400({ files: [file()], mode: 'zip' }, /mode/);
    await expect400({ files: [file()], zip_filename: 'x'.repeat(256) }, /zip_filename/);
    await expect400({ files: [file()], zip_filename: 5 }, /zip_filename/);
    await expect400({ files: [file()], expires_in: 299 }, /expires_in/);
    await expect400({ files: [file()], expires_in: '3600' }, /expires_in/);
    await expect400({ files: [file()], fail_on_url_error: 'yes' }, /fail_on_url_error/);
    await expect400({ files: [file()], metadata: 'x' }, /metadata/);
    await expect400({ files: [file()], metadata: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v'])) }, /metadata/);
    await expect400({ files: [file()], metadata: { ['k'.repeat(129)]: 'v' } }, /metadata/);
    await expect400({ files: [file()], metadata: { k: 'v'.repeat(1025) } }, /metadata/);
    await expect400({ files: [file()], max_zip_size_bytes: 104857599 }, /max_zip_size_bytes/);
    await expect400({ files: [file()], max_zip_size_bytes: 536870912001 }, /max_zip_size_bytes/);
    await expect400({ files: [file()], max_zip_size_bytes: 'big' }, /max_zip_size_bytes/);
    await expect400({ files: [file()], split_strategy: 'best' }, /split_strategy/);
    await expect400({ files: [file()], allow_oversize_zips: 1 }, /allow_oversize_zips/);
    await expect400({ files: [file()], fail_on_zip_error: null }, /fail_on_zip_error/);
    // Boundaries that are allowed.
    for (const body of [
      { files: [file()], expires_in: 300 },
      { files: [file()], zip_filename: `${'x'.repeat(251)}.zip` },
      { files: [file()], metadata: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`k${i}`.padEnd(128, 'k'), 'v'.repeat(1024)])) },
      { files: [file()], max_zip_size_bytes: 104857600 },
      { files: [file()], max_zip_size_bytes: null },
    ]) {
      expect((await post(body)).status).toBe(201);
    }
  });

  it('rejects bad given filenames (docs/product-rules.md#counts-and-names) with 400', async () => {
    for (const filename of ['/abs.txt', 'a/../b.txt', 'a//b.txt', 'a\\b.txt', 'a\u0000b', 'tab\there', 'é'.repeat(128), '..', '']) {
      await expect400({ files: [{ url: file().url, filename }] }, /filename/);
    }
    expect((await post({ files: [{ url: file().url, filename: 'ok/nested/name (1).txt' }] })).status).toBe(201);
  });

  it('rejects invalid filename templates with 400 naming the problem', async () => {
    await expect400({ files: [file()], zip_filename: 'a-{x}.zip' }, /placeholder|\{x\}/);
    await expect400({ files: [file()], zip_filename: 'a-{n.zip' }, /brace/);
    await expect400({ files: [file()], zip_filename: 'a-}n.zip' }, /brace/);
    await expect400({ files: [file()], zip_filename: 'a/{n}.zip' }, /\//);
    await expect400({ files: [file()], zip_filename: 'a\\b.zip' }, /\\/);
    const ok = await post({ files: [file()], zip_filename: '{date}-{{x}}-{n2}.zip' });
    expect(ok.status).toBe(201);
    const job = (await call(api.url, 'GET', `/jobs/${ok.body.job_id}`, { key })).body.job;
    expect(job.zip_filename).toBe(`${job.created_at.slice(0, 10)}-{x}-01.zip`);
  });

  it('enforces plan limits: files per job and retention -> 403 PLAN_LIMIT_EXCEEDED; archive cap -> 400', async () => {
    const free = await createUser(api.ctx, { plan: 'free' });
    const files101 = Array.from({ length: 101 }, (_, i) => file(i));
    for (const mode of ['stored', 'stream']) {
      const res = await post({ files: files101, mode }, free.apiKey);
      expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'PLAN_LIMIT_EXCEEDED' });
    }
    expect((await post({ files: files101.slice(0, 100) }, free.apiKey)).status).toBe(201);
    const retention = await post({ files: [file()], expires_in: 86_401 }, free.apiKey);
    expect({ status: retention.status, code: retention.body.error?.code }).toEqual({ status: 403, code: 'PLAN_LIMIT_EXCEEDED' });
    expect((await post({ files: [file()], expires_in: 86_400 }, free.apiKey)).status).toBe(201);
    // Free plan archives are at most 2 GB: a cap above that is a field error.
    const cap = await post({ files: [file()], max_zip_size_bytes: 2_000_000_001 }, free.apiKey);
    expect({ status: cap.status, code: cap.body.error?.code }).toEqual({ status: 400, code: 'INVALID_REQUEST' });
    expect((await post({ files: [file()], max_zip_size_bytes: 2_000_000_000 }, free.apiKey)).status).toBe(201);
  });

  it('refuses new stored jobs with 403 QUOTA_EXCEEDED once the stored quota is used, unless overage is on', async () => {
    const user = await createUser(api.ctx, { plan: 'starter' });
    const month = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));
    // 3,000 GB-days is the starter allowance.
    await api.ctx.db.usageRecord.create({ data: { userId: user.userId, kind: 'stored_byte_seconds', month, amount: 3000n * 1_000_000_000n * 86_400n } });
    const res = await post({ files: [file()] }, user.apiKey);
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 403, code: 'QUOTA_EXCEEDED' });
    // Stream jobs are checked at download time, not here.
    expect((await post({ files: [file()], mode: 'stream' }, user.apiKey)).status).toBe(201);
    await api.ctx.db.user.update({ where: { id: user.userId }, data: { overageEnabled: true } });
    expect((await post({ files: [file()] }, user.apiKey)).status).toBe(201);
  });

  it('writes the job and its 20,000 files in one transaction and enqueues it after commit', async () => {
    const scale = await createUser(api.ctx, { plan: 'scale' });
    const files = Array.from({ length: 20_000 }, (_, i) => file(i));
    const res = await post({ files }, scale.apiKey);
    expect(res.status).toBe(201);
    // Enqueued in the background once the transaction has committed.
    let job = await api.ctx.db.job.findUniqueOrThrow({ where: { id: res.body.job_id }, include: { zips: true } });
    for (let waited = 0; job.enqueuedAt === null && waited < 5000; waited += 50) {
      await new Promise((r) => setTimeout(r, 50));
      job = await api.ctx.db.job.findUniqueOrThrow({ where: { id: res.body.job_id }, include: { zips: true } });
    }
    expect(job.enqueuedAt).not.toBeNull();
    expect(await api.ctx.db.jobFile.count({ where: { jobId: job.id, zipId: job.zips[0]!.id } })).toBe(20_000);
    const last = await api.ctx.db.jobFile.findUniqueOrThrow({ where: { jobId_position: { jobId: job.id, position: 19_999 } } });
    expect(last.url).toBe(file(19_999).url);
    const queued = await api.ctx.queues.pack.getJob(`pack:${job.zips[0]!.id}:0`);
    expect(queued?.data).toEqual({ jobId: job.id, zipId: job.zips[0]!.id, attempt: 0 });
  });
});

describe('GET /jobs', () => {
  let lister: { apiKey: string; userId: string };
  const ids: string[] = [];
  beforeAll(async () => {
    lister = await createUser(api.ctx, { plan: 'pro' });
    for (let i = 0; i < 7; i++) ids.push((await post({ files: [file(i)], metadata: { i: String(i) } }, lister.apiKey)).body.job_id);
    // Same created_at for two jobs: the id breaks the tie.
    const t = new Date('2026-01-01T00:00:00.000Z');
    await api.ctx.db.job.updateMany({ where: { id: { in: ids.slice(0, 2) } }, data: { createdAt: t } });
    await api.ctx.db.job.update({ where: { id: ids[6]! }, data: { status: 'failed' } });
  });

  it('pages newest first with an opaque cursor until has_more is false, each job once', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const res: { status: number; body: any } = await call(api.url, 'GET', `/jobs?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { key: lister.apiKey });
      expect(res.status).toBe(200);
      expect(res.body.meta).toEqual({ limit: 3, total: 7, next_cursor: res.body.meta.has_more ? expect.any(String) : null, has_more: expect.any(Boolean) });
      seen.push(...res.body.jobs.map((j: { id: string }) => j.id));
      pages++;
      if (!res.body.meta.has_more) break;
      cursor = res.body.meta.next_cursor;
    }
    expect(pages).toBe(3);
    expect(new Set(seen).size).toBe(7);
    expect(seen.sort()).toEqual([...ids].sort());
    const rows = await api.ctx.db.job.findMany({ where: { userId: lister.userId }, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }] });
    const all = await call(api.url, 'GET', '/jobs?limit=100', { key: lister.apiKey });
    expect(all.body.jobs.map((j: { id: string }) => j.id)).toEqual(rows.map((r) => r.id));
  });

  it('returns list items with exactly the contract fields', async () => {
    const res = await call(api.url, 'GET', '/jobs?limit=1', { key: lister.apiKey });
    expect(Object.keys(res.body.jobs[0]).sort()).toEqual(
      ['completed_at', 'created_at', 'expires_at', 'fail_on_url_error', 'file_count', 'format', 'id', 'max_zip_size_bytes', 'multi_zip', 'progress', 'status', 'total_size', 'url_count', 'zip_count', 'zip_filename', 'zip_size'].sort(),
    );
  });

  it('filters by status and defaults limit to 20', async () => {
    const failed = await call(api.url, 'GET', '/jobs?status=failed', { key: lister.apiKey });
    expect(failed.body.jobs.map((j: { id: string }) => j.id)).toEqual([ids[6]]);
    expect(failed.body.meta).toMatchObject({ limit: 20, total: 1, has_more: false });
  });

  it('rejects bad query values with 400', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'status=preparing', 'status=done', 'cursor=garbage', `cursor=${Buffer.from('["x","y"]').toString('base64url')}`]) {
      const res = await call(api.url, 'GET', `/jobs?${q}`, { key: lister.apiKey });
      expect({ q, status: res.status, code: res.body.error?.code }).toEqual({ q, status: 400, code: 'INVALID_REQUEST' });
    }
  });

  it("never shows another user's jobs", async () => {
    const res = await call(api.url, 'GET', '/jobs?limit=100', { key });
    for (const id of ids) expect(res.body.jobs.map((j: { id: string }) => j.id)).not.toContain(id);
    const one = await call(api.url, 'GET', `/jobs/${ids[0]}`, { key });
    expect(one.status).toBe(404);
    expect(one.body.error.code).toBe('NOT_FOUND');
    expect((await call(api.url, 'GET', '/jobs/not-a-uuid', { key })).status).toBe(404);
  });
});

describe('reconciler', () => {
  it('enqueues a job that was committed but never enqueued', async () => {
    const { reconcile } = await import('@ap/jobs');
    // A user of its own: earlier tests' pending jobs hold the free plan's one running bin.
    const res = await post({ files: [file()] }, (await createUser(api.ctx)).apiKey);
    const job = await api.ctx.db.job.findUniqueOrThrow({ where: { id: res.body.job_id }, include: { zips: true } });
    const messageId = `pack:${job.zips[0]!.id}:0`;
    // Enqueued in the background after the commit.
    for (let waited = 0; !(await api.ctx.queues.pack.getJob(messageId)) && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
    await (await api.ctx.queues.pack.getJob(messageId))!.remove();
    await api.ctx.db.job.update({ where: { id: job.id }, data: { enqueuedAt: null, createdAt: new Date(Date.now() - 60_000) } });
    await reconcile(api.ctx.db, api.ctx.queues, new Date(), { jobIds: [job.id] });
    expect((await api.ctx.queues.pack.getJob(messageId))?.data.zipId).toBe(job.zips[0]!.id);
    expect((await api.ctx.db.job.findUniqueOrThrow({ where: { id: job.id } })).enqueuedAt).not.toBeNull();
  });
});

describe('rate limit', () => {
  it('answers 429 RATE_LIMITED with Retry-After past the per-key limit, shared across replicas', async () => {
    const limited = await startApi({ RATE_LIMIT_PER_MINUTE: '5' });
    const replica = await startApi({ RATE_LIMIT_PER_MINUTE: '5' });
    try {
      const user = await createUser(limited.ctx);
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) statuses.push((await call(i % 2 ? replica.url : limited.url, 'GET', '/jobs', { key: user.apiKey })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
      const res = await call(limited.url, 'GET', '/jobs', { key: user.apiKey });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ success: false, error: { code: 'RATE_LIMITED', message: expect.any(String) } });
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      // Another key of another user is not affected.
      const other = await createUser(limited.ctx);
      expect((await call(limited.url, 'GET', '/jobs', { key: other.apiKey })).status).toBe(200);
    } finally {
      await limited.close();
      await replica.close();
    }
  });
});

describe('fuzz', () => {
  it('answers hundreds of malformed bodies with a 4xx in the envelope, never 500', async () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)]!;
    const values: unknown[] = [null, true, 0, -1, 1e308, 'x', '', [], {}, [null], { url: 1 }, 'é'.repeat(300), { __proto__: { a: 1 } }, NaN, '💥', [[]]];
    const fields = ['files', 'mode', 'zip_filename', 'expires_in', 'fail_on_url_error', 'metadata', 'max_zip_size_bytes', 'split_strategy', 'allow_oversize_zips', 'fail_on_zip_error', 'extra'];
    const bodies: string[] = ['', 'null', '[]', '"x"', '{', '{"files":', '\u0000', '{"files":[{"url":"http://a.example/","filename":"\\ud800"}]}'];
    for (let i = 0; i < 300; i++) {
      const body: Record<string, unknown> = {};
      const n = 1 + Math.floor(rand() * 4);
      for (let j = 0; j < n; j++) body[pick(fields)] = pick(values);
      if (rand() < 0.5) body.files = [{ url: pick([...values, 'http://a.example/x', 'javascript:alert(1)']), filename: pick(values) }];
      bodies.push(JSON.stringify(body));
    }
    const statuses = new Map<number, number>();
    for (const raw of bodies) {
      const res = await call(api.url, 'POST', '/jobs', { key, rawBody: raw });
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (res.status !== 201) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect(res.status).toBeLessThan(500);
        expect(res.body).toEqual({ success: false, error: { code: expect.any(String), message: expect.any(String) } });
      }
    }
    expect(statuses.get(500)).toBeUndefined();
    expect(statuses.get(400)).toBeGreaterThan(250);
  });
});
