// `pnpm smoke --base-url URL` with the key in ARCHIVE_API_KEY (or `--api-key KEY`, which pnpm
// echoes with the command line): an end-to-end check of a running deployment
// (docs/operations.md#the-rules): a stored job, a split job, and a stream download resumed with
// Range/If-Range, each archive read back with yauzl and compared byte for byte with what was
// sent; given a bucket service (`--s3-endpoint`), also a prefix job written into a bucket of it
// (smoke-s3.ts). Exits 0 when all passed, 1 on any failure (printing what failed), 2 on bad usage.
//
// The files come from an origin this script serves itself, computed, not stored. By default it
// listens on 127.0.0.1 (an ephemeral port) and hands the stack http://127.0.0.1:<port>/ URLs:
// the stack must then run with ALLOW_PRIVATE_URLS=true on the same machine (`pnpm start`).
// A stack elsewhere (docker compose, a cluster) needs the origin where it can reach it:
// `--origin-listen HOST:PORT` says where to listen and `--origin-url URL` is the base the
// stack fetches from (e.g. --origin-listen 0.0.0.0:8099 --origin-url http://host.docker.internal:8099).
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import yauzl from 'yauzl';
import { prefixToDestination, type SmokeS3Options } from './smoke-s3';

const MB = 1_000_000;
/** The smallest split cap the API accepts (docs/api.md#limits): two files just over half of it make two ZIPs. */
const SPLIT_CAP = 104_857_600;

const usage = `usage: ARCHIVE_API_KEY=KEY pnpm smoke --base-url URL [--api-key KEY] [--origin-url URL] [--origin-listen HOST:PORT] [--timeout SECONDS]
  [--s3-endpoint URL [--s3-local-endpoint URL] [--s3-bucket NAME] [--s3-region REGION]] (keys in SMOKE_S3_ACCESS_KEY_ID, SMOKE_S3_SECRET_ACCESS_KEY)`;

// --- computed files: name -> size; byte i of a file is its pattern[i % pattern.length] ---
interface SourceFile {
  name: string;
  size: number;
  pattern: Buffer;
}

function sourceFile(name: string, size: number): SourceFile {
  // A pattern length that is not a power of two, so every part and range boundary falls at a
  // different place in it.
  return { name, size, pattern: randomBytes(65_521) };
}

function bytesOf(file: SourceFile, start: number, end: number): Buffer {
  const out = Buffer.allocUnsafe(end - start);
  const p = file.pattern;
  let at = 0;
  while (at < out.length) {
    const offset = (start + at) % p.length;
    const n = Math.min(p.length - offset, out.length - at);
    p.copy(out, at, offset, offset + n);
    at += n;
  }
  return out;
}

function sha256Of(file: SourceFile): string {
  const hash = createHash('sha256');
  for (let at = 0; at < file.size; at += 4 * MB) hash.update(bytesOf(file, at, Math.min(file.size, at + 4 * MB)));
  return hash.digest('hex');
}

async function serveOrigin(files: Map<string, SourceFile>, host: string, port: number): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    const file = files.get(decodeURIComponent((req.url ?? '/').split('?')[0]!.slice(1)));
    if (!file || (req.method !== 'GET' && req.method !== 'HEAD')) return void res.writeHead(404).end();
    const etag = `"${file.name}-${file.size}"`;
    let start = 0;
    let end = file.size; // exclusive
    const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
    if (range && (range[1] || range[2])) {
      if (range[1]) {
        start = Number(range[1]);
        end = range[2] ? Math.min(file.size, Number(range[2]) + 1) : file.size;
      } else {
        start = Math.max(0, file.size - Number(range[2]));
      }
      if (start >= end) return void res.writeHead(416, { 'content-range': `bytes */${file.size}` }).end();
      res.writeHead(206, { 'content-range': `bytes ${start}-${end - 1}/${file.size}`, 'content-length': end - start, etag, 'accept-ranges': 'bytes' });
    } else {
      res.writeHead(200, { 'content-length': file.size, etag, 'accept-ranges': 'bytes', 'content-type': 'application/octet-stream' });
    }
    if (req.method === 'HEAD') return void res.end();
    let at = start;
    const pump = () => {
      while (at < end) {
        const chunk = bytesOf(file, at, Math.min(end, at + 256 * 1024));
        at += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      res.end();
    };
    res.on('error', () => undefined);
    pump();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}

// --- the API ---
class SmokeFailure extends Error {}

function check(condition: unknown, what: string): asserts condition {
  if (!condition) throw new SmokeFailure(what);
}

/** fetch, whose own error says only "fetch failed": the reason is its cause. */
function reach(url: string, init: RequestInit): Promise<Response> {
  return fetch(url, init).catch((err: Error & { cause?: { code?: string; message?: string } }) => {
    // A download URL's token is a credential: never printed.
    const shown = url.split('?')[0]!.replace(/\/download\/[^/]+/, '/download/…');
    throw new SmokeFailure(`${init.method ?? 'GET'} ${shown} got no answer: ${err.cause?.code ?? err.cause?.message ?? err.message}`);
  });
}

async function api(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await reach(base + path, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

async function createJob(base: string, key: string, request: Record<string, unknown>): Promise<string> {
  const res = await api(base, key, 'POST', '/jobs', request);
  check(res.status === 201 && typeof res.body?.job_id === 'string', `POST /jobs answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
  return res.body.job_id;
}

async function waitForJob(base: string, key: string, jobId: string, timeoutMs: number): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api(base, key, 'GET', `/jobs/${jobId}`);
    check(res.status === 200, `GET /jobs/${jobId} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 500)}`);
    const job = res.body.job;
    if (job.status === 'completed') return job;
    check(job.status !== 'failed', `job ${jobId} failed: ${JSON.stringify(job).slice(0, 1500)}`);
    check(Date.now() < deadline, `job ${jobId} still ${job.status} after ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await reach(url, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** Entries of a ZIP as yauzl reads them (sizes validated), with each one's SHA-256. */
function zipEntries(bytes: Buffer): Promise<Array<{ name: string; size: number; sha256: string }>> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, validateEntrySizes: true, strictFileNames: true }, (err, zip) => {
      if (err || !zip) return reject(err ?? new Error('not a ZIP'));
      const out: Array<{ name: string; size: number; sha256: string }> = [];
      zip.on('error', reject);
      zip.on('end', () => resolve(out));
      zip.on('entry', (entry: yauzl.Entry) => {
        zip.openReadStream(entry, (e, stream) => {
          if (e || !stream) return reject(e ?? new Error(`entry ${entry.fileName} unreadable`));
          const hash = createHash('sha256');
          stream.on('data', (c: Buffer) => hash.update(c));
          stream.on('error', reject);
          stream.on('end', () => {
            out.push({ name: entry.fileName, size: entry.uncompressedSize, sha256: hash.digest('hex') });
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

async function checkArchive(what: string, bytes: Buffer, expected: SourceFile[]): Promise<void> {
  let entries;
  try {
    entries = await zipEntries(bytes);
  } catch (err) {
    throw new SmokeFailure(`${what}: not a valid ZIP (${(err as Error).message})`);
  }
  const want = expected.map((f) => ({ name: f.name, size: f.size, sha256: sha256Of(f) }));
  check(JSON.stringify(entries) === JSON.stringify(want), `${what}: entries ${JSON.stringify(entries)} instead of ${JSON.stringify(want)}`);
}

// --- the checks ---
async function main(): Promise<number> {
  let args;
  try {
    args = parseArgs({
      options: {
        'base-url': { type: 'string' },
        'api-key': { type: 'string' },
        'origin-url': { type: 'string' },
        'origin-listen': { type: 'string' },
        timeout: { type: 'string', default: '300' },
        's3-endpoint': { type: 'string' },
        's3-local-endpoint': { type: 'string' },
        's3-bucket': { type: 'string', default: 'smoke-customer' },
        's3-region': { type: 'string', default: 'us-east-1' },
      },
      strict: true,
    }).values;
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}\n`);
    return 2;
  }
  const base = args['base-url']?.replace(/\/+$/, '');
  const key = args['api-key'] ?? process.env.ARCHIVE_API_KEY;
  const timeoutMs = Number(args.timeout) * 1000;
  const listen = /^(.+):(\d+)$/.exec(args['origin-listen'] ?? '127.0.0.1:0');
  const s3: SmokeS3Options | null = args['s3-endpoint']
    ? {
        endpoint: args['s3-endpoint'],
        localEndpoint: args['s3-local-endpoint'] ?? args['s3-endpoint'],
        region: args['s3-region']!,
        bucket: args['s3-bucket']!,
        accessKeyId: process.env.SMOKE_S3_ACCESS_KEY_ID ?? '',
        secretAccessKey: process.env.SMOKE_S3_SECRET_ACCESS_KEY ?? '',
      }
    : null;
  if (!base || !/^https?:\/\//.test(base) || !key || !listen || !(timeoutMs > 0) || (s3 && (!s3.accessKeyId || !s3.secretAccessKey))) {
    process.stderr.write(`${usage}\n`);
    return 2;
  }

  const stored = [sourceFile('smoke-a.bin', 3 * MB + 17), sourceFile('smoke-b.txt', 200_001), sourceFile('smoke-c.bin', 1)];
  const split = [sourceFile('split-1.bin', 60 * MB), sourceFile('split-2.bin', 60 * MB + 3)];
  const streamed = [sourceFile('stream-1.bin', 5 * MB + 5), sourceFile('stream-2.bin', 2 * MB)];
  const files = new Map([...stored, ...split, ...streamed].map((f) => [f.name, f]));
  const origin = await serveOrigin(files, listen[1]!, Number(listen[2]));
  const originBase = (args['origin-url'] ?? `http://127.0.0.1:${origin.port}`).replace(/\/+$/, '');
  const urlOf = (f: SourceFile) => ({ url: `${originBase}/${encodeURIComponent(f.name)}` });

  const say = (line: string) => process.stdout.write(`[smoke] ${line}\n`);
  const failures: string[] = [];
  const step = async (name: string, run: () => Promise<string>) => {
    const started = Date.now();
    try {
      say(`ok   ${name}: ${await run()} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
    } catch (err) {
      const message = err instanceof SmokeFailure ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
      failures.push(`${name}: ${message}`);
      say(`FAIL ${name}: ${message}`);
    }
  };

  try {
    await step('health', async () => {
      const res = await get(`${base}/readyz`);
      check(res.status === 200, `GET /readyz answered ${res.status}: ${res.body.toString().slice(0, 300)}`);
      return 'the API is ready';
    });

    // Created together, checked in turn: the stack works on all three at once.
    const jobs = await Promise.allSettled([
      createJob(base, key, { files: stored.map(urlOf) }),
      createJob(base, key, { files: split.map(urlOf), max_zip_size_bytes: SPLIT_CAP }),
      createJob(base, key, { files: streamed.map(urlOf), mode: 'stream' }),
    ]);
    const jobId = (i: number) => {
      const r = jobs[i]!;
      if (r.status === 'rejected') throw r.reason;
      return r.value;
    };

    await step('stored job', async () => {
      const job = await waitForJob(base, key, jobId(0), timeoutMs);
      check(job.zips?.length === 1 && job.download_url, `expected one ZIP with a download_url, got ${JSON.stringify(job.zips)}`);
      const zip = await get(job.download_url);
      check(zip.status === 200, `download answered ${zip.status}`);
      check(zip.body.length === job.zips[0].size, `downloaded ${zip.body.length} bytes, the job says ${job.zips[0].size}`);
      await checkArchive('stored ZIP', zip.body, stored);
      return `job ${job.id}, ${zip.body.length} bytes, ${stored.length} entries intact`;
    });

    await step('split job', async () => {
      const job = await waitForJob(base, key, jobId(1), timeoutMs);
      check(job.multi_zip === true && job.zips?.length === 2, `expected two ZIPs, got ${JSON.stringify(job.zips)}`);
      for (const [i, expected] of split.entries()) {
        const zip = await get(job.zips[i].download_url);
        check(zip.status === 200, `ZIP ${i + 1} download answered ${zip.status}`);
        await checkArchive(`split ZIP ${i + 1}`, zip.body, [expected]);
      }
      return `job ${job.id}, 2 ZIPs under the ${SPLIT_CAP}-byte cap, entries intact`;
    });

    await step('stream download with a Range resume', async () => {
      const job = await waitForJob(base, key, jobId(2), timeoutMs);
      const url: string = job.zips?.[0]?.download_url;
      check(url, `no download_url: ${JSON.stringify(job.zips)}`);
      const size: number = job.zips[0].size;
      const cut = Math.floor(size / 3);
      // As a client whose transfer broke after `cut` bytes: the first part, then the rest
      // with If-Range, so a changed archive would come back whole (200) instead of spliced.
      const first = await get(url, { range: `bytes=0-${cut - 1}` });
      check(first.status === 206 && first.body.length === cut, `first range answered ${first.status} with ${first.body.length} bytes`);
      const etag = first.headers.get('etag');
      check(etag, 'the first range carried no ETag');
      const rest = await get(url, { range: `bytes=${cut}-`, 'if-range': etag });
      check(rest.status === 206, `the resumed range answered ${rest.status}`);
      check(rest.headers.get('content-range') === `bytes ${cut}-${size - 1}/${size}`, `Content-Range ${rest.headers.get('content-range')} for bytes ${cut}- of ${size}`);
      const whole = Buffer.concat([first.body, rest.body]);
      check(whole.length === size, `resumed download is ${whole.length} bytes, the job says ${size}`);
      await checkArchive('resumed stream ZIP', whole, streamed);
      return `job ${job.id}, ${size} bytes in two ranges, entries intact`;
    });

    if (s3) {
      await step('prefix job into a destination bucket', () =>
        prefixToDestination(s3, { api: (method, path, body) => api(base, key, method, path, body), waitForJob: (id) => waitForJob(base, key, id, timeoutMs), download: (url) => get(url), sourceFile, bytesOf, checkArchive, check }),
      );
    }
  } finally {
    origin.server.closeAllConnections();
    origin.server.close();
  }

  if (failures.length) {
    process.stderr.write(`[smoke] FAILED ${failures.length} check(s):\n${failures.map((f) => `  - ${f}`).join('\n')}\n`);
    return 1;
  }
  say('all checks passed');
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`[smoke] FAILED: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
