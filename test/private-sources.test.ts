// docs/private-sources.md#the-rules end to end: s3:// files read from a customer's own S3 server
// with its own key pair, per-file request headers sent to their origin only, worded URL errors,
// and no secret in any response, log line or Redis command; the columns hold ciphertext.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import net from 'node:net';
import { Writable } from 'node:stream';
import { runCli } from '../packages/cli/src/cli';
import { createFetcher } from '@ap/fetch';
import { dropDatabase, ensureDatabase, migrate } from '@ap/db';
import { rotateSealedColumns } from '@ap/jobs';
import { generateSecretsKey, keyringFrom, sealedKeyId, secretBox } from '@ap/secrets';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startCustomerBucket, type CustomerBucket } from './customer-bucket';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

const CUSTOMER = { accessKeyId: 'CUSTOMERKEY1', secretAccessKey: 'customer-secret-9f3a1c7e55d2' };
const TOKEN = 'tok-4b1d9e0c27aa';
const BEARER = 'Bearer bearer-81c3f0e96d';
/** An archive password (issue "archive options"): sealed like the others, never shown or logged. */
const ARCHIVE_PASSWORD = 'zip-password-5e1f9a';
const SECRETS = [CUSTOMER.secretAccessKey, TOKEN, 'bearer-81c3f0e96d', 'wrong-secret-0d77ab', ARCHIVE_PASSWORD];

let stack: Stack;
let customer: CustomerBucket;
let origin: Origin;
let other: Origin;
let key: string;
let monitor: net.Socket;
const logLines: string[] = [];
const redisCommands: string[] = [];
const bodies: string[] = [];

const objects = {
  'reports/2026/q3 summary.pdf': bytesOf(31, 3_000_017),
  'reports/2026/data.bin': bytesOf(32, 250_001),
  'empty.txt': Buffer.alloc(0),
};

/** The API, every answer body kept for the final search. */
async function api(method: string, path: string, body?: unknown) {
  const res = await call(stack.url, method, path, { key, ...(body === undefined ? {} : { body }) });
  bodies.push(JSON.stringify(res.body));
  return res;
}

async function job(body: Record<string, unknown>, statuses = ['completed', 'failed']) {
  const res = await api('POST', '/jobs', body);
  expect({ status: res.status, body: res.body }).toEqual({ status: 201, body: { success: true, job_id: expect.any(String) } });
  const done = await waitForJob(stack.url, key, res.body.job_id, statuses);
  bodies.push(JSON.stringify(done));
  return done;
}

const s3Files = () => Object.keys(objects).map((k) => ({ url: `s3://${customer.bucket}/${k}`, source: 'customer' }));
const expectedEntries = () =>
  Object.entries(objects).map(([k, body]) => ({ name: k.split('/').pop()!, size: body.length, sha256: sha256(body) }));

beforeAll(async () => {
  customer = await startCustomerBucket(CUSTOMER);
  for (const [k, body] of Object.entries(objects)) await customer.put(k, body);
  origin = await startOrigin();
  other = await startOrigin();
  stack = await startStack({ LOG_LEVEL: 'debug' });
  // Every log line of the services in this process (pino's destination, inherited by children).
  const log = stack.ctx.log as unknown as Record<symbol, unknown>;
  const streamSym = Object.getOwnPropertySymbols(log).find((s) => s.description === 'pino.stream')!;
  log[streamSym] = { write: (line: string) => logLines.push(line) };
  // Redis MONITOR over a plain socket: every command any client sends, payloads included.
  const redisUrl = new URL(process.env.REDIS_URL!);
  monitor = net.connect(Number(redisUrl.port || 6379), redisUrl.hostname);
  let pending = '';
  monitor.on('data', (chunk: Buffer) => {
    const lines = (pending + chunk.toString('latin1')).split('\r\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.includes(stack.ctx.config.REDIS_PREFIX)) redisCommands.push(line);
  });
  monitor.write('MONITOR\r\n');
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
  const created = await api('POST', '/sources', {
    name: 'customer', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true,
    access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey,
  });
  expect(created.status).toBe(201);
  expect(created.body.source).toEqual({
    id: expect.any(String), name: 'customer', type: 's3', region: 'us-east-1', endpoint: customer.endpoint,
    force_path_style: true, access_key_id: CUSTOMER.accessKeyId, created_at: expect.any(String),
  });
});

afterAll(async () => {
  monitor.destroy();
  await stack.close();
  await Promise.all([customer.close(), origin.close(), other.close()]);
});

describe('s3:// files from the customer\'s bucket', () => {
  it('packs a stored job byte for byte, each entry named by the key\'s last segment', async () => {
    const done = await job({ files: s3Files() });
    expect(done.status).toBe('completed');
    expect((await readZip((await download(done.download_url)).body))).toEqual(expectedEntries());
  });

  it('serves a stream job: whole, Range at several offsets, and resumed at 90 %', async () => {
    const done = await job({ files: s3Files(), mode: 'stream' });
    expect(done.status).toBe('completed');
    const whole = await download(done.zips[0].download_url);
    expect(await readZip(whole.body)).toEqual(expectedEntries());
    const size = whole.body.length;
    for (const from of [1, 4_096, Math.floor(size / 3), Math.floor(size * 0.9), size - 10]) {
      const part = await download(done.zips[0].download_url, { range: `bytes=${from}-`, 'if-range': whole.headers.get('etag')! });
      expect({ from, status: part.status, same: part.body.equals(whole.body.subarray(from)) }).toEqual({ from, status: 206, same: true });
    }
    const mid = await download(done.zips[0].download_url, { range: `bytes=1000-${size - 1000}` });
    expect(mid.body.equals(whole.body.subarray(1000, size - 999))).toBe(true);
  });

  it('packs a split job (sizes probed with HeadObject) byte for byte', async () => {
    const done = await job({ files: s3Files(), max_zip_size_bytes: 104_857_600 });
    expect(done.status).toBe('completed');
    expect(await readZip((await download(done.zips[0].download_url)).body)).toEqual(expectedEntries());
  });

  it('retries from the checkpoint once a missing object exists', async () => {
    const late = bytesOf(33, 70_000);
    const failed = await job({ files: [...s3Files(), { url: `s3://${customer.bucket}/late/arrival.bin`, source: 'customer' }] });
    expect(failed.status).toBe('failed');
    expect(failed.errors).toEqual([{ url: `s3://${customer.bucket}/late/arrival.bin`, error: 'no such object' }]);
    await customer.put('late/arrival.bin', late);
    expect((await api('POST', `/jobs/${failed.id}/retry`, { from_checkpoint: true })).status).toBe(200);
    const done = await waitForJob(stack.url, key, failed.id);
    expect(done.status).toBe('completed');
    expect(await readZip((await download(done.download_url)).body)).toEqual([...expectedEntries(), { name: 'arrival.bin', size: late.length, sha256: sha256(late) }]);
  });

  it('words a wrong secret, a wrong key id, a missing object and a missing bucket as URL errors', async () => {
    const base = { type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true };
    expect((await api('POST', '/sources', { ...base, name: 'wrong-secret', access_key_id: CUSTOMER.accessKeyId, secret_access_key: 'wrong-secret-0d77ab' })).status).toBe(201);
    expect((await api('POST', '/sources', { ...base, name: 'wrong-key', access_key_id: 'NOBODYKEY', secret_access_key: CUSTOMER.secretAccessKey })).status).toBe(201);
    const good = `s3://${customer.bucket}/reports/2026/data.bin`;
    const files = [
      { url: good, source: 'customer' },
      { url: `s3://${customer.bucket}/reports/2026/q3 summary.pdf`, source: 'wrong-secret' },
      { url: `s3://${customer.bucket}/empty.txt`, source: 'wrong-key' },
      { url: `s3://${customer.bucket}/no/such.bin`, source: 'customer' },
      { url: 's3://no-such-bucket/a.bin', source: 'customer' },
    ];
    const lenient = await job({ files, fail_on_url_error: false });
    expect(lenient.status).toBe('completed');
    expect(lenient.errors).toEqual([
      { url: `s3://${customer.bucket}/reports/2026/q3 summary.pdf`, error: "secret key rejected by the bucket's service (check the source's secret_access_key)" },
      { url: `s3://${customer.bucket}/empty.txt`, error: "access key not recognised by the bucket's service (check the source's access_key_id)" },
      { url: `s3://${customer.bucket}/no/such.bin`, error: 'no such object' },
      { url: 's3://no-such-bucket/a.bin', error: 'no such bucket' },
    ]);
    expect((await readZip((await download(lenient.download_url)).body)).map((e) => e.name)).toEqual(['data.bin']);
    const strict = await job({ files, fail_on_url_error: true, mode: 'stream' });
    expect(strict.status).toBe('failed');
  });

  it('refuses an endpoint on a private address unless ALLOW_PRIVATE_URLS=true, when created and when read', async () => {
    const strict = await startStack({ ALLOW_PRIVATE_URLS: 'false' }, { workers: false });
    try {
      const user = await createUser(strict.ctx);
      const res = await call(strict.url, 'POST', '/sources', {
        key: user.apiKey,
        body: { name: 'local', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, access_key_id: 'A', secret_access_key: 'B' },
      });
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(/^endpoint: 127\.0\.0\.1 is a loopback address, which is refused/);
    } finally {
      await strict.close();
    }
    const fetcher = createFetcher({ allowPrivate: false, connectTimeoutMs: 2_000, idleTimeoutMs: 5_000, userAgent: 'test' });
    const s3 = { sourceId: 'x', region: 'us-east-1', endpoint: customer.endpoint, forcePathStyle: true, ...CUSTOMER };
    const probe = await fetcher.probe(`s3://${customer.bucket}/empty.txt`, { access: { s3 } });
    fetcher.close();
    expect(probe).toMatchObject({ ok: false, error: 'blocked: a loopback address' });
  });
});

describe('sources', () => {
  it('are unique by name, at most 20 per user, and another user\'s cannot be read, named or deleted', async () => {
    const other = await createUser(stack.ctx, { plan: 'pro' });
    const body = (name: string) => ({ name, type: 's3', region: 'us-east-1', access_key_id: 'AKIAOTHER', secret_access_key: 'other-user-secret' });
    const as = (method: string, path: string, b?: unknown) => call(stack.url, method, path, { key: other.apiKey, ...(b === undefined ? {} : { body: b }) });
    for (let i = 0; i < 20; i++) expect((await as('POST', '/sources', body(`s${i}`))).status).toBe(201);
    const over = await as('POST', '/sources', body('s20'));
    expect({ status: over.status, code: over.body.error.code }).toEqual({ status: 403, code: 'PLAN_LIMIT_EXCEEDED' });
    const dup = await as('DELETE', `/sources/${(await as('GET', '/sources')).body.sources[0].id}`);
    expect(dup.status).toBe(200);
    const again = await as('POST', '/sources', body('s1'));
    expect({ status: again.status, message: again.body.error.message }).toEqual({ status: 400, message: 'name: you already have a source named "s1"' });
    const mine = (await api('GET', '/sources')).body.sources.find((x: { name: string }) => x.name === 'customer');
    expect((await as('DELETE', `/sources/${mine.id}`)).status).toBe(404);
    expect((await as('POST', '/jobs', { files: [{ url: `s3://${customer.bucket}/empty.txt`, source: mine.id }] })).status).toBe(400);
    expect((await as('GET', '/sources')).body.sources.map((x: { name: string }) => x.name)).not.toContain('customer');
  });
});

describe('request headers per file', () => {
  it('sends them on every request for the file, and drops them after a redirect to another origin', async () => {
    const body = bytesOf(41, 400_000);
    const required = { 'X-Api-Token': TOKEN, Authorization: BEARER };
    const privateUrl = origin.set('/private/report.bin', { body, requireHeaders: required, etag: '"r1"' });
    other.set('/elsewhere.bin', { body });
    const movedUrl = origin.set('/moved.bin', { body, redirectTo: `${other.url}/elsewhere.bin` });
    for (const mode of ['stored', 'stream']) {
      const done = await job({ mode, files: [{ url: privateUrl, headers: required }, { url: movedUrl, headers: required }] });
      expect(done.status).toBe('completed');
      expect(done.files.map((f: { header_names?: string[] }) => f.header_names)).toEqual([['authorization', 'x-api-token'], ['authorization', 'x-api-token']]);
      const zip = await download(done.zips[0].download_url);
      expect((await readZip(zip.body)).map((e) => e.sha256)).toEqual([sha256(body), sha256(body)]);
    }
    const toPrivate = origin.requests.filter((r) => r.path === '/private/report.bin');
    // Probe (HEAD), the stored body, the stream download's ranged GETs: each one carried them.
    expect(new Set(toPrivate.map((r) => r.method))).toEqual(new Set(['HEAD', 'GET']));
    expect(toPrivate.every((r) => r.headers['x-api-token'] === TOKEN && r.headers.authorization === BEARER)).toBe(true);
    expect(origin.requests.filter((r) => r.path === '/moved.bin').every((r) => r.headers['x-api-token'] === TOKEN)).toBe(true);
    const redirected = other.requests.filter((r) => r.path === '/elsewhere.bin');
    expect(redirected.length).toBeGreaterThan(0);
    expect(redirected.some((r) => 'x-api-token' in r.headers || 'authorization' in r.headers)).toBe(false);
  });

  it('refuses bad headers, s3:// without a source, unknown sources and sources on http URLs with 400 naming the field', async () => {
    const url = `${origin.url}/x.bin`;
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`X-H${i}`, 'v']));
    const cases: [unknown, RegExp][] = [
      [{ url, headers: eleven }, /^files\[0\]\.headers: must have at most 10 headers \(got 11\)/],
      [{ url, headers: { Host: 'evil' } }, /^files\[0\]\.headers: header "Host" is a header the service sets itself/],
      [{ url, headers: { 'Proxy-Authorization': 'x' } }, /^files\[0\]\.headers: header "Proxy-Authorization"/],
      [{ url, headers: { 'X-A': 'a\r\nInjected: 1' } }, /^files\[0\]\.headers\["X-A"\]|^files\[0\]\.headers\.X-A/],
      [{ url, headers: { 'X-A': 'a'.repeat(4097) } }, /must be at most 4096 characters/],
      [{ url, headers: { 'bad name': 'v' } }, /is not a valid header name/],
      [{ url: `s3://${customer.bucket}/a.bin` }, /^files\[0\]\.source: is required for an s3:\/\/ URL/],
      [{ url: `s3://${customer.bucket}/a.bin`, source: 'nobody' }, /^files\[0\]\.source: no source named "nobody"/],
      [{ url, source: 'customer' }, /^files\[0\]\.source: is only for s3:\/\/ URLs/],
    ];
    for (const [file, message] of cases) {
      const res = await api('POST', '/jobs', { files: [file] });
      expect({ file, status: res.status, code: res.body.error?.code }).toEqual({ file, status: 400, code: 'INVALID_REQUEST' });
      expect(res.body.error.message).toMatch(message);
    }
    const crlf = await api('POST', '/jobs', { files: [{ url, headers: { 'X-A': 'a\r\nInjected: 1' } }] });
    expect(crlf.body.error.message).toMatch(/must not contain CR, LF or NUL characters/);
  });
});

describe('the CLI', () => {
  it('creates, lists and deletes sources, and creates jobs with --source and --header', async () => {
    const env = { ARCHIVE_API_URL: stack.url, ARCHIVE_API_KEY: key, ARCHIVE_SOURCE_SECRET: CUSTOMER.secretAccessKey, ARCHIVE_POLL_MS: '100' };
    const run = async (...argv: string[]) => {
      let text = '';
      const stdout = new Writable({ write: (chunk, _enc, done) => ((text += String(chunk)), done()) });
      const code = await runCli([...argv, '--json'], { env, signal: new AbortController().signal, stdout, stderr: stdout as unknown as NodeJS.WriteStream });
      bodies.push(text);
      return { code, result: JSON.parse(text.trim().split('\n').pop()!) };
    };
    const created = await run('sources', 'create', 'from-cli', '--region', 'us-east-1', '--access-key-id', CUSTOMER.accessKeyId, '--endpoint', customer.endpoint, '--force-path-style');
    expect(created).toMatchObject({ code: 0, result: { success: true, source: { name: 'from-cli', force_path_style: true } } });
    const s3Job = await run('create', `s3://${customer.bucket}/reports/2026/data.bin`, '--source', 'from-cli', '--wait');
    expect(s3Job).toMatchObject({ code: 0, result: { status: 'completed' } });
    const privateUrl = origin.set('/private/cli.bin', { body: bytesOf(61, 5_000), requireHeaders: { 'X-Api-Token': TOKEN } });
    const headerJob = await run('create', privateUrl, '--header', `X-Api-Token: ${TOKEN}`, '--wait');
    expect(headerJob).toMatchObject({ code: 0, result: { status: 'completed' } });
    const listed = await run('sources', 'list');
    expect(listed.result.sources.map((x: { name: string }) => x.name)).toContain('from-cli');
    expect((await run('sources', 'delete', created.result.source.id)).result).toEqual({ success: true, id: created.result.source.id, message: 'source deleted' });
  });
});

describe('secrets at rest and in motion', () => {
  it('keeps ciphertext in the columns and no secret in any response, log line or Redis command', async () => {
    // An encrypted stored job and an encrypted stream job, downloaded: the password goes through
    // the API, the queue, the packer and the download route.
    const encryption = { method: 'aes-256', password: ARCHIVE_PASSWORD };
    expect((await job({ files: s3Files(), encryption })).status).toBe('completed');
    const streamed = await job({ mode: 'stream', files: s3Files(), encryption });
    const zip = await fetch(streamed.zips[0].download_url);
    expect({ status: zip.status, bytes: (await zip.arrayBuffer()).byteLength }).toEqual({ status: 200, bytes: streamed.zips[0].size });
    const sources = await stack.ctx.db.$queryRaw<{ secret_access_key: string }[]>`SELECT secret_access_key FROM sources`;
    const headers = await stack.ctx.db.$queryRaw<{ headers: string }[]>`SELECT headers FROM job_files WHERE headers IS NOT NULL`;
    const passwords = await stack.ctx.db.$queryRaw<{ encryption_password: string }[]>`SELECT encryption_password FROM jobs WHERE encryption_password IS NOT NULL`;
    expect(sources.length).toBeGreaterThanOrEqual(3);
    expect(headers.length).toBeGreaterThanOrEqual(4);
    expect(passwords.length).toBeGreaterThanOrEqual(2);
    for (const sealed of [...sources.map((s) => s.secret_access_key), ...headers.map((h) => h.headers), ...passwords.map((p) => p.encryption_password)]) {
      expect(sealedKeyId(sealed)).toBe(stack.ctx.secrets.currentKeyId);
      for (const secret of SECRETS) expect(sealed).not.toContain(secret);
    }
    expect(logLines.length).toBeGreaterThan(20);
    expect(redisCommands.length).toBeGreaterThan(20);
    bodies.push(JSON.stringify((await api('GET', '/sources')).body));
    for (const [where, texts] of [['responses', bodies], ['logs', logLines], ['redis', redisCommands]] as const) {
      for (const secret of SECRETS) expect({ where, secret, found: texts.some((t) => t.includes(secret)) }).toEqual({ where, secret, found: false });
    }
  });
});

describe('a deleted source, and rotating SECRETS_KEY', () => {
  it('fails later reads of a deleted source\'s objects with "source deleted", and new jobs naming it with 400', async () => {
    const created = await api('POST', '/sources', {
      name: 'short-lived', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true,
      access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey,
    });
    const done = await job({ mode: 'stream', files: [{ url: `s3://${customer.bucket}/reports/2026/data.bin`, source: 'short-lived' }] });
    expect(done.status).toBe('completed');
    expect((await api('DELETE', `/sources/${created.body.source.id}`)).body).toEqual({ success: true, message: 'source deleted' });
    const res = await download(done.zips[0].download_url);
    expect(res.status).toBe(502);
    expect(JSON.parse(res.body.toString('utf8')).error).toEqual({ code: 'SOURCE_UNAVAILABLE', message: `a source file could not be fetched: s3://${customer.bucket}/reports/2026/data.bin: source deleted` });
    const again = await api('POST', '/jobs', { files: [{ url: `s3://${customer.bucket}/a.bin`, source: 'short-lived' }] });
    expect(again.status).toBe(400);
  });

  it('re-seals every stored secret under the new key; with the old key gone, everything still reads', async () => {
    // A database of its own: a rotation re-seals every row, and other suites of the run share theirs.
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `${url.pathname}_rotation`;
    const databaseUrl = url.toString();
    await ensureDatabase(databaseUrl);
    await migrate(databaseUrl);
    const before = await startStack({ DATABASE_URL: databaseUrl });
    let rotated: Stack | undefined;
    try {
      const { apiKey } = await createUser(before.ctx, { plan: 'pro' });
      const as = (path: string, body: unknown) => call(before.url, 'POST', path, { key: apiKey, body });
      const source = { name: 'customer', type: 's3', region: 'us-east-1', endpoint: customer.endpoint, force_path_style: true, access_key_id: CUSTOMER.accessKeyId, secret_access_key: CUSTOMER.secretAccessKey };
      expect((await as('/sources', source)).status).toBe(201);
      const privateUrl = origin.set('/private/rotated.bin', { body: bytesOf(51, 9_000), requireHeaders: { 'X-Api-Token': TOKEN } });
      const created = await as('/jobs', { mode: 'stream', files: [{ url: `s3://${customer.bucket}/reports/2026/data.bin`, source: 'customer' }, { url: privateUrl, headers: { 'X-Api-Token': TOKEN } }], encryption: { method: 'aes-256', password: 'rotate-me-please' } });
      const streamed = await waitForJob(before.url, apiKey, created.body.job_id);
      expect(streamed.status).toBe('completed');
      const first = await download(streamed.zips[0].download_url);
      expect(first.status).toBe(200);
      const newKey = generateSecretsKey();
      const during = secretBox(keyringFrom(newKey, before.ctx.config.SECRETS_KEY));
      const reports = await rotateSealedColumns(before.ctx.db, during);
      expect(reports.map((r) => [r.table, r.column, r.resealed, r.current])).toEqual([['sources', 'secret_access_key', 1, 0], ['job_files', 'headers', 1, 0], ['jobs', 'encryption_password', 1, 0], ['webhooks', 'secret', 0, 0], ['webhooks', 'previous_secret', 0, 0]]);
      expect((await rotateSealedColumns(before.ctx.db, during)).map((r) => [r.resealed, r.current])).toEqual([[0, 1], [0, 1], [0, 1], [0, 0], [0, 0]]);
      const sealed = await before.ctx.db.$queryRaw<{ v: string }[]>`SELECT secret_access_key AS v FROM sources UNION ALL SELECT headers FROM job_files WHERE headers IS NOT NULL UNION ALL SELECT encryption_password FROM jobs WHERE encryption_password IS NOT NULL`;
      expect(sealed).toHaveLength(3);
      expect(new Set(sealed.map((row) => sealedKeyId(row.v)))).toEqual(new Set([during.currentKeyId]));
      // A stack holding only the new key serves the stream ZIP (AES, its password re-sealed too) again, byte for byte.
      rotated = await startStack({ DATABASE_URL: databaseUrl, SECRETS_KEY: newKey });
      const again = await download(streamed.zips[0].download_url.replace(before.url, rotated.url));
      expect(again.status).toBe(200);
      expect(again.body.equals(first.body)).toBe(true);
    } finally {
      await rotated?.close();
      await before.close();
      await dropDatabase(databaseUrl);
    }
  });
});
