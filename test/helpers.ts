// Helpers for tests that run the real services in-process against the run's Postgres, Redis and S3.
import type { AddressInfo } from 'node:net';
import { closeSync, ftruncateSync, openSync, writeSync } from 'node:fs';
import http, { type Server } from 'node:http';
import { loadConfig, type Config } from '@ap/config';
import { createUserWithKey } from '@ap/accounts';
import { applyServerSettings, createApp, settleDownloads, type AppOptions } from '@ap/api';
import type { Plan } from '@ap/db';
import { createWorkQueues, type WorkQueues } from '@ap/queue';
import { createServiceContext, type ServiceContext } from '@ap/service-kit';
import { checkResponse } from './contract';

export interface TestApi {
  ctx: ServiceContext & { queues: WorkQueues };
  url: string;
  close(): Promise<void>;
}

export function testConfig(overrides: Partial<Record<keyof Config, string>> = {}): Config {
  return loadConfig({ ...process.env, ...overrides });
}

/** Starts the real API on an ephemeral port. */
export async function startApi(overrides: Partial<Record<keyof Config, string>> = {}, appOptions: AppOptions = {}): Promise<TestApi> {
  const base = createServiceContext('api-test', testConfig(overrides));
  const ctx = { ...base, queues: createWorkQueues(base.redis, base.config.REDIS_PREFIX, { planConcurrentBins: base.config.PLAN_CONCURRENT_BINS }) };
  const app = createApp(ctx, appOptions);
  const server: Server = app.listen(0, '127.0.0.1');
  applyServerSettings(server, { requestTimeoutMs: ctx.config.REQUEST_TIMEOUT_MS });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    ctx,
    url,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await settleDownloads(app);
      await ctx.queues.close();
      await ctx.close();
    },
  };
}

let userCounter = 0;
export async function createUser(ctx: Pick<ServiceContext, 'db'>, options: { plan?: Plan; password?: string; overage?: boolean } = {}) {
  const email = `user${++userCounter}.${process.pid}.${Date.now()}@example.test`;
  const result = await createUserWithKey(ctx.db, { email, plan: options.plan ?? 'free', overage: options.overage ?? false, password: options.password });
  return { ...result, email };
}

export interface JsonResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** fetch + JSON, for API calls in tests. */
export async function call<T = any>(base: string, method: string, path: string, options: { key?: string; bearer?: string; body?: unknown; rawBody?: string; headers?: Record<string, string> } = {}): Promise<JsonResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers['x-api-key'] = options.key;
  if (options.bearer !== undefined) headers.authorization = `Bearer ${options.bearer}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  checkResponse(method, base + path, res.status, res.headers.get('content-type'), parsed);
  return { status: res.status, headers: res.headers, body: parsed as T };
}

/** Polls GET /jobs/:id until the job reaches one of `statuses`. */
export async function waitForJob(base: string, key: string, jobId: string, statuses: string[] = ['completed', 'failed'], timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(base, 'GET', `/jobs/${jobId}`, { key });
    if (res.status !== 200) throw new Error(`GET /jobs/${jobId} answered ${res.status}: ${JSON.stringify(res.body)}`);
    if (statuses.includes(res.body.job.status)) return res.body.job;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${res.body.job.status} after ${timeoutMs} ms: ${JSON.stringify(res.body.job).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** GETs a URL and returns status, headers and the whole body. */
export async function download(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(url, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  const type = res.headers.get('content-type');
  let json: unknown;
  if (type?.startsWith('application/json')) json = JSON.parse(body.toString('utf8'));
  checkResponse('GET', url, res.status, type, json);
  return { status: res.status, headers: res.headers, body };
}

/** GET that stops reading after `limit` bytes and closes the connection. */
export function partialGet(url: string, limit: number, headers: Record<string, string> = {}): Promise<{ status: number; etag: string; got: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let got = 0;
      res.on('data', (c: Buffer) => {
        if (got >= limit) return;
        const take = c.subarray(0, limit - got);
        chunks.push(take);
        got += take.length;
        if (got >= limit) {
          req.destroy();
          resolve({ status: res.statusCode!, etag: String(res.headers.etag), got: Buffer.concat(chunks) });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode!, etag: String(res.headers.etag), got: Buffer.concat(chunks) }));
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

/**
 * GETs a URL (status 200) into `file`, leaving chunks of zero bytes as holes: a body of gigabytes
 * of zeros costs no disk writes, and readers read the holes back as zeros. Resolves with the
 * number of bytes received.
 */
export function downloadSparse(url: string, file: string): Promise<number> {
  const zeros = Buffer.alloc(1 << 20);
  const allZero = (chunk: Buffer) => {
    for (let at = 0; at < chunk.length; at += zeros.length) {
      const piece = chunk.subarray(at, at + zeros.length);
      if (!piece.equals(zeros.subarray(0, piece.length))) return false;
    }
    return true;
  };
  return new Promise((resolve, reject) => {
    const fd = openSync(file, 'w');
    let at = 0;
    let settled = false;
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      try {
        if (!err) ftruncateSync(fd, at);
      } finally {
        closeSync(fd);
      }
      if (err) reject(err);
      else resolve(at);
    };
    const req = http.get(url, { agent: false }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return finish(new Error(`GET ${url} answered ${res.statusCode}`));
      }
      res.on('data', (chunk: Buffer) => {
        if (!allZero(chunk)) writeSync(fd, chunk, 0, chunk.length, at);
        at += chunk.length;
      });
      res.on('end', () => finish(null));
      res.on('error', finish);
    });
    req.on('error', finish);
  });
}

/** Polls `check` until it holds; throws naming `what` after `timeoutMs`. */
export async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
