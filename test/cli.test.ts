// The archive-packager CLI (its published bundle, run as a process) against the real stack and
// a local origin. The CLI reaches the API through a proxy that counts the download bytes it
// passes on, and can hold a download halfway so the test can interrupt the CLI there.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { buildCli } from '../packages/cli/src/build';
import { call, createUser } from './helpers';
import { bytesOf, sha256, startOrigin, type Origin } from './origin';
import { startStack, type Stack } from './stack';
import { readZip } from './zip-readers';

interface DownloadSeen { range?: string; ifRange?: string; status: number; bytes: number }

interface CountingProxy {
  url: string;
  upstream: string;
  downloads: DownloadSeen[];
  /** Download body bytes passed on per response before the proxy holds the rest (null: all). */
  holdAfter: number | null;
  close(): Promise<void>;
}

async function startProxy(): Promise<CountingProxy> {
  const proxy: CountingProxy = { url: '', upstream: '', downloads: [], holdAfter: null, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', proxy.upstream);
    const up = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      const isDownload = target.pathname.startsWith('/download/') && req.method === 'GET';
      const seen: DownloadSeen | null = isDownload
        ? { range: req.headers.range, ifRange: req.headers['if-range'] as string | undefined, status: upRes.statusCode ?? 0, bytes: 0 }
        : null;
      if (seen) proxy.downloads.push(seen);
      const holdAfter = proxy.holdAfter;
      upRes.on('data', (chunk: Buffer) => {
        if (seen && holdAfter !== null) {
          const room = holdAfter - seen.bytes;
          if (room <= 0) return void upRes.pause();
          if (chunk.length > room) {
            seen.bytes += room;
            res.write(chunk.subarray(0, room));
            return void upRes.pause();
          }
        }
        if (seen) seen.bytes += chunk.length;
        res.write(chunk);
      });
      upRes.on('end', () => res.end());
    });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return proxy;
}

let cli: string;
let origin: Origin;
let proxy: CountingProxy;
let stack: Stack;
let key: string;

beforeAll(async () => {
  cli = await buildCli();
  origin = await startOrigin();
  proxy = await startProxy();
  stack = await startStack({ PUBLIC_BASE_URL: proxy.url });
  proxy.upstream = stack.url;
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
}, 120_000);
afterAll(async () => {
  await stack?.close();
  await proxy?.close();
  await origin?.close();
});

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function spawnCli(args: string[], env: Record<string, string> = {}): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [cli, ...args], {
    env: { PATH: process.env.PATH ?? '', ARCHIVE_API_URL: proxy.url, ARCHIVE_API_KEY: key, ARCHIVE_POLL_MS: '100', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<Run>((resolve) => child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { child, done };
}

const runCli = (args: string[], env?: Record<string, string>) => spawnCli(args, env).done;

/** The last stdout line, parsed (the --json contract). */
function lastJson(run: Run): any {
  const lines = run.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]!);
}

const tmp = (name: string) => mkdtempSync(path.join(os.tmpdir(), `cli-${name}-`));

function urlFile(files: { path: string; body: Buffer; filename?: string }[]): string {
  const file = path.join(tmp('list'), 'urls.txt');
  writeFileSync(file, `# inputs\n${files.map((f) => `${origin.set(f.path, { body: f.body })}${f.filename ? ` ${f.filename}` : ''}`).join('\n')}\n`);
  return file;
}

async function until(check: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('create --from FILE --wait --download DIR', () => {
  const inputs = [
    { path: '/cli/one.bin', body: bytesOf(11, 300_000) },
    { path: '/cli/two.txt', body: bytesOf(12, 123_457), filename: 'docs/two.txt' },
    { path: '/cli/three.bin', body: bytesOf(13, 1) },
  ];
  const expected = [
    { name: 'one.bin', size: 300_000, sha256: sha256(inputs[0]!.body) },
    { name: 'docs/two.txt', size: 123_457, sha256: sha256(inputs[1]!.body) },
    { name: 'three.bin', size: 1, sha256: sha256(inputs[2]!.body) },
  ];

  for (const [label, flags] of [
    ['stored', []],
    ['split', ['--split', '100MiB', '--name', 'parts-{n}-of-{total}.zip']],
    ['stream', ['--mode', 'stream', '--name', 'streamed.zip']],
  ] as const) {
    it(`writes a verified ZIP for a ${label} job and prints the paths as JSON`, async () => {
      const dir = tmp(label);
      const run = await runCli(['create', '--from', urlFile(inputs), ...flags, '--wait', '--download', dir, '--json']);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      const result = lastJson(run);
      expect(result).toMatchObject({ success: true, job_id: expect.stringMatching(/^[0-9a-f-]{36}$/), status: 'completed', paths: [expect.any(String)] });
      // Only the JSON object on stdout with --json.
      expect(run.stdout.trim().split('\n')).toHaveLength(1);
      const job = (await call(stack.url, 'GET', `/jobs/${result.job_id}`, { key })).body.job;
      expect(job.multi_zip).toBe(label === 'split');
      const file = result.paths[0] as string;
      expect(path.dirname(file)).toBe(dir);
      expect(path.basename(file)).toBe(job.zips[0].filename);
      if (label === 'split') expect(path.basename(file)).toBe('parts-1-of-1.zip');
      if (label === 'stream') expect(path.basename(file)).toBe('streamed.zip');
      const bytes = readFileSync(file);
      expect(bytes.length).toBe(job.zips[0].size);
      expect(await readZip(bytes)).toEqual(expected);
      expect(existsSync(`${file}.resume.json`)).toBe(false);
    });
  }

  it('--compress LEVEL and --password-file FILE ask for deflate and AES-256; the password is never printed', async () => {
    const passwordFile = path.join(tmp('pw'), 'password.txt');
    writeFileSync(passwordFile, 'cli-secret-password\n');
    const deflated = await runCli(['create', '--from', urlFile(inputs), '--compress', '9', '--wait', '--json']);
    const encrypted = await runCli(['create', '--from', urlFile(inputs), '--mode', 'stream', '--password-file', passwordFile, '--wait', '--json']);
    for (const run of [deflated, encrypted]) {
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).not.toContain('cli-secret-password');
    }
    const viewOf = async (run: Run) => (await call(stack.url, 'GET', `/jobs/${lastJson(run).job_id}`, { key })).body.job;
    expect(await viewOf(deflated)).toMatchObject({ compression: 'deflate', compression_level: 9, encryption: null });
    expect(await viewOf(encrypted)).toMatchObject({ compression: 'store', encryption: { method: 'aes-256' } });
    const bad = await runCli(['create', '--from', urlFile(inputs), '--compress', '10']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--compress takes a level from 1 to 9/);
  });

  it('prints people-readable lines without --json, and nothing of the bars when not a terminal', async () => {
    const dir = tmp('plain');
    const run = await runCli(['create', '--from', urlFile(inputs.slice(0, 1)), '--download', dir]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^created job [0-9a-f-]{36}\n/);
    expect(run.stdout).toMatch(/1 entry verified \(downloaded\)/);
    expect(run.stderr).toBe('');
    const jobId = /^created job ([0-9a-f-]{36})/.exec(run.stdout)![1]!;
    expect((await runCli(['jobs', 'get', jobId])).stdout).toMatch(new RegExp(`^job ${jobId}: completed, 1/1 file, 1 ZIP, \\d+(\\.\\d)? kB\n  1\\. .+\\.zip  completed  1 file  `));
    expect((await runCli(['jobs', 'list', '--limit', '1'])).stdout).toMatch(new RegExp(`^${jobId}  completed\\s+1/1 file  1 ZIP  `));
  });
});

describe('download resume', () => {
  let jobId: string;
  let zipSize: number;
  let zipBytes: Buffer;

  beforeAll(async () => {
    const run = await runCli(['create', '--from', urlFile([
      { path: '/resume/a.bin', body: bytesOf(21, 1_500_000) },
      { path: '/resume/b.bin', body: bytesOf(22, 1_200_000) },
    ]), '--name', 'resume.zip', '--wait', '--json']);
    expect(run.code).toBe(0);
    jobId = lastJson(run).job_id;
    const job = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
    zipSize = job.zips[0].size;
    // The reference bytes, fetched around the proxy.
    const direct = await fetch(job.zips[0].download_url.replace(proxy.url, stack.url));
    zipBytes = Buffer.from(await direct.arrayBuffer());
    expect(zipBytes.length).toBe(zipSize);
  });

  /** Starts `download`, lets `half` bytes through, interrupts the CLI with Ctrl-C (SIGINT). */
  async function interruptedDownload(dir: string, half: number): Promise<string> {
    proxy.downloads.length = 0;
    proxy.holdAfter = half;
    const file = path.join(dir, 'resume.zip');
    const { child, done } = spawnCli(['download', jobId, '--out', dir, '--json']);
    await until(() => existsSync(file) && statSync(file).size === half, `the partial file holds ${half} bytes`);
    child.kill('SIGINT');
    const run = await done;
    proxy.holdAfter = null;
    expect(run.code).toBe(130);
    expect(run.stderr).toMatch(/interrupted/);
    expect(lastJson(run)).toMatchObject({ success: false, job_id: jobId, error: { code: 'INTERRUPTED' } });
    expect(statSync(file).size).toBe(half);
    expect(existsSync(`${file}.resume.json`)).toBe(true);
    expect(proxy.downloads).toEqual([{ range: undefined, ifRange: undefined, status: 200, bytes: half }]);
    return file;
  }

  it('resumes a download cut halfway, asking only for the missing bytes', async () => {
    const dir = tmp('resume');
    const half = Math.floor(zipSize / 2);
    const file = await interruptedDownload(dir, half);
    const etag = JSON.parse(readFileSync(`${file}.resume.json`, 'utf8')).etag as string;

    proxy.downloads.length = 0;
    const run = await runCli(['download', jobId, '--out', dir, '--json']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(lastJson(run)).toEqual({ success: true, job_id: jobId, status: 'completed', paths: [file] });
    expect(proxy.downloads).toEqual([{ range: `bytes=${half}-`, ifRange: etag, status: 206, bytes: zipSize - half }]);
    expect(readFileSync(file).equals(zipBytes)).toBe(true);
    expect(existsSync(`${file}.resume.json`)).toBe(false);

    // Once complete, another run fetches nothing and verifies the file again.
    proxy.downloads.length = 0;
    const again = await runCli(['download', jobId, '--out', dir, '--crc']);
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/already complete/);
    expect(proxy.downloads).toEqual([]);
  });

  it('continues a file cut by hand (no resume record) from its size, and checks every entry', async () => {
    const dir = tmp('cut');
    const file = path.join(dir, 'resume.zip');
    const cut = Math.floor(zipSize / 2);
    writeFileSync(file, zipBytes.subarray(0, cut));
    proxy.downloads.length = 0;
    const run = await runCli(['download', jobId, '--out', dir, '--json']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(proxy.downloads).toEqual([{ range: `bytes=${cut}-`, ifRange: undefined, status: 206, bytes: zipSize - cut }]);
    expect(readFileSync(file).equals(zipBytes)).toBe(true);
    expect(existsSync(`${file}.resume.json`)).toBe(false);
  });

  it('downloads a hand-cut file again from byte 0 when its bytes are not this ZIP\'s', async () => {
    const dir = tmp('foreign');
    const file = path.join(dir, 'resume.zip');
    const cut = Math.floor(zipSize / 2);
    const foreign = Buffer.from(zipBytes.subarray(0, cut));
    foreign.fill(7, 1_000, cut); // the headers survive, the first entry's data does not
    writeFileSync(file, foreign);
    proxy.downloads.length = 0;
    const run = await runCli(['download', jobId, '--out', dir, '--json']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(proxy.downloads).toEqual([
      { range: `bytes=${cut}-`, ifRange: undefined, status: 206, bytes: zipSize - cut },
      { range: undefined, ifRange: undefined, status: 200, bytes: zipSize },
    ]);
    expect(readFileSync(file).equals(zipBytes)).toBe(true);
  });

  it('downloads a changed ZIP again from the start (If-Range mismatch)', async () => {
    const dir = tmp('changed');
    const half = Math.floor(zipSize / 3);
    const file = await interruptedDownload(dir, half);
    const oldEtag = JSON.parse(readFileSync(`${file}.resume.json`, 'utf8')).etag as string;
    // The ZIP the link points at is now another version (its validator changed).
    const job = (await call(stack.url, 'GET', `/jobs/${jobId}`, { key })).body.job;
    const row = await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: job.zips[0].id } });
    await stack.ctx.db.zip.update({ where: { id: row.id }, data: { etag: `${row.etag}-v2` } });
    try {
      proxy.downloads.length = 0;
      const run = await runCli(['download', jobId, '--out', dir, '--json']);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(proxy.downloads).toEqual([{ range: `bytes=${half}-`, ifRange: oldEtag, status: 200, bytes: zipSize }]);
      expect(readFileSync(file).equals(zipBytes)).toBe(true);
    } finally {
      await stack.ctx.db.zip.update({ where: { id: row.id }, data: { etag: row.etag } });
    }
  });
});

describe('exit codes and messages', () => {
  it('exits 2 on bad usage', async () => {
    for (const args of [['create'], ['create', '--split', 'lots', 'https://a.example/x'], ['create', '--mode', 'zip', 'https://a.example/x'], ['frobnicate'], ['jobs', 'get'], ['create', '--bogus']]) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toMatch(/error/);
    }
    const noKey = await runCli(['jobs', 'list'], { ARCHIVE_API_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/ARCHIVE_API_KEY/);
    // Input the API refuses (a URL that is not http) is bad usage too, with the API's message.
    const refused = await runCli(['create', 'ftp://files.example/x', '--json']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/INVALID_REQUEST: files\[0\]\.url/);
    expect(lastJson(refused)).toMatchObject({ success: false, error: { code: 'INVALID_REQUEST', status: 400 } });
  });

  it('exits 1 on a failed job, naming the failure', async () => {
    const missing = `${origin.url}/cli/does-not-exist.bin`;
    const run = await runCli(['create', missing, '--wait', '--json']);
    expect(run.code).toBe(1);
    const result = lastJson(run);
    expect(result).toMatchObject({ success: false, job_id: expect.any(String), status: 'failed' });
    expect(result.errors.map((e: { url: string }) => e.url)).toContain(missing);
    expect(run.stderr).toMatch(/job .* failed/);
    // `download` of a failed job is a failure too.
    expect((await runCli(['download', result.job_id, '--out', tmp('failed')])).code).toBe(1);
  });

  it('explains API errors: a wrong key, an unknown job', async () => {
    const wrongKey = await runCli(['jobs', 'list'], { ARCHIVE_API_KEY: 'azk_wrong' });
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toMatch(/HTTP 401 UNAUTHORIZED: invalid API key \(check --key/);
    const unknown = await runCli(['jobs', 'get', '00000000-0000-4000-8000-000000000000', '--json']);
    expect(unknown.code).toBe(1);
    expect(lastJson(unknown)).toMatchObject({ success: false, job_id: '00000000-0000-4000-8000-000000000000', error: { code: 'NOT_FOUND' } });
  });

  it('lists, reads and retries jobs and manages keys', async () => {
    const list = await runCli(['jobs', 'list', '--limit', '2', '--json']);
    expect(list.code).toBe(0);
    expect(lastJson(list)).toMatchObject({ success: true, jobs: expect.any(Array), meta: { limit: 2 } });
    const failed = await runCli(['jobs', 'list', '--status', 'failed', '--json']);
    const failedId = lastJson(failed).jobs[0].id as string;
    const got = await runCli(['jobs', 'get', failedId, '--json']);
    expect(lastJson(got)).toMatchObject({ job_id: failedId, status: 'failed', job: { id: failedId } });
    const retried = await runCli(['jobs', 'retry', failedId, '--from-scratch', '--json']);
    expect({ code: retried.code, out: lastJson(retried) }).toEqual({ code: 0, out: { success: true, job_id: failedId } });

    const created = await runCli(['keys', 'create', '--name', 'from-cli', '--json']);
    expect(created.code).toBe(0);
    const newKey = lastJson(created).api_key;
    expect(newKey.key).toMatch(/^azk_/);
    const listed = await runCli(['keys', 'list'], { ARCHIVE_API_KEY: newKey.key });
    expect(listed.stdout).toContain(newKey.id);
    expect(listed.stdout).not.toContain(newKey.key);
    expect((await runCli(['keys', 'revoke', newKey.id])).code).toBe(0);
    expect((await runCli(['keys', 'list'], { ARCHIVE_API_KEY: newKey.key })).code).toBe(1);
  });

  it('deletes a job: it then reads as unknown, and deleting it again is an API error', async () => {
    const failed = await runCli(['jobs', 'list', '--status', 'failed', '--json']);
    const id = lastJson(failed).jobs.at(-1).id as string;
    const deleted = await runCli(['delete', id, '--json']);
    expect({ code: deleted.code, out: lastJson(deleted) }).toEqual({ code: 0, out: { success: true, job_id: id, message: expect.any(String) } });
    expect((await runCli(['jobs', 'get', id])).code).toBe(1);
    const again = await runCli(['delete', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/not found/);
  });

  it('manages webhooks through the SDK: create (secret once), list, delete; an unknown event is bad usage', async () => {
    const hookUrl = `${origin.url}/cli/hook`;
    expect((await runCli(['webhooks', 'create', hookUrl, '--events', 'job.completed,job.exploded'])).code).toBe(2);
    const created = await runCli(['webhooks', 'create', hookUrl, '--events', 'job.completed,job.failed', '--description', 'from the cli', '--json']);
    expect(created.code).toBe(0);
    const hook = lastJson(created).webhook;
    expect(hook).toMatchObject({ url: hookUrl, events: ['job.completed', 'job.failed'], description: 'from the cli', secret: expect.any(String) });
    const listed = await runCli(['webhooks', 'list', '--json']);
    const seen = lastJson(listed).webhooks.find((w: { id: string }) => w.id === hook.id);
    expect(seen).toMatchObject({ id: hook.id, url: hookUrl });
    expect(listed.stdout).not.toContain(hook.secret);
    const deleted = await runCli(['webhooks', 'delete', hook.id, '--json']);
    expect(lastJson(deleted)).toMatchObject({ success: true, id: hook.id });
    expect(lastJson(await runCli(['webhooks', 'list', '--json'])).webhooks.map((w: { id: string }) => w.id)).not.toContain(hook.id);
  });
});
