// Hardening 3, item 3 (docs/guarantees.md#hardening-third-round-items-1-6): an S3 endpoint a
// user controls cannot make the service hold a huge answer: a list page or an error body of
// 600 MB is cut at 8 MiB (at most 16 MiB, asked) with a worded error, and the process's RSS
// rises by less than 50 MB.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { until } from './helpers';
import { createFetcher, type Fetcher } from '@ap/fetch';

/**
 * The hostile endpoint, in a process of its own as a user's endpoint would be (its memory is not
 * the service's): /small answers a short list page, /listing... 600 MB of list page, anything
 * else 404 to HEAD and 403 with a 600 MB error body to GET. It reports each answer's bytes sent.
 */
const ENDPOINT = `
const http = require('node:http');
const HUGE = 600 * 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, '<Contents><Key>p/x</Key><Size>1</Size></Contents>');
function endless(res, path, head) {
  let written = 0;
  res.on('error', () => {});
  res.on('close', () => process.stdout.write('sent ' + path + ' ' + written + '\\n'));
  res.write(head);
  const more = () => {
    while (written < HUGE) {
      written += CHUNK.length;
      if (!res.write(CHUNK)) return void res.once('drain', more);
    }
    res.end('</ListBucketResult>');
  };
  more();
}
const server = http.createServer((req, res) => {
  const path = req.url.split('?')[0];
  if (req.method === 'HEAD' && path.startsWith('/big')) return void res.writeHead(200, { 'content-length': String(100 * 1024 * 1024), etag: '"e"' }).end();
  if (req.method === 'HEAD') return void res.writeHead(404).end();
  if (path.startsWith('/small')) {
    return void res.writeHead(200, { 'content-type': 'application/xml' }).end('<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>p/a</Key><Size>1</Size></Contents></ListBucketResult>');
  }
  if (path.startsWith('/listing')) {
    res.writeHead(200, { 'content-type': 'application/xml' });
    return endless(res, path, '<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><IsTruncated>false</IsTruncated>');
  }
  res.writeHead(403, { 'content-type': 'application/xml' });
  endless(res, path, '<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>');
});
server.listen(0, '127.0.0.1', () => process.stdout.write('port ' + server.address().port + '\\n'));
`;

let endpointProcess: ChildProcess;
let endpoint: string;
let fetcher: Fetcher;
/** Body bytes the endpoint sent, per request path. */
const sent = new Map<string, number>();

beforeAll(async () => {
  endpointProcess = spawn(process.execPath, ['-e', ENDPOINT], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve) => {
    createInterface({ input: endpointProcess.stdout! }).on('line', (line) => {
      const [what, a, b] = line.split(' ');
      if (what === 'port') resolve(a!);
      if (what === 'sent') sent.set(a!, (sent.get(a!) ?? 0) + Number(b));
    });
  });
  endpoint = `http://127.0.0.1:${port}`;
  fetcher = createFetcher({ allowPrivate: true, connectTimeoutMs: 2_000, idleTimeoutMs: 10_000, retries: 0, userAgent: 'test' });
  // The SDK's code for a listing is loaded now, not counted in the first measure.
  expect(await fetcher.listPrefix('s3://small/p/', { access: { s3: s3() }, limit: 100 })).toMatchObject({ ok: true, objects: [{ key: 'p/a' }] });
});
afterAll(() => {
  fetcher.close();
  endpointProcess.kill();
});

const sentUnder = (prefix: string) => [...sent].reduce((sum, [path, n]) => (path.startsWith(prefix) ? sum + n : sum), 0);
const s3 = () => ({ sourceId: 'hostile', region: 'us-east-1', endpoint, forcePathStyle: true, accessKeyId: 'AKIAHOSTILE', secretAccessKey: 'hostile-secret' });

/** The most RSS rose above its level at the start while `work` ran (sampled every 20 ms). */
async function peakRssRise<T>(work: () => Promise<T>): Promise<{ result: T; riseMb: number }> {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  try {
    const result = await work();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, riseMb: (peak - base) / 1024 / 1024 };
  } finally {
    clearInterval(timer);
  }
}

describe('hardening 3, item 3: bounded answers from endpoints users control', () => {
  it('a HEAD answer is not held to the bound: its Content-Length is the object\'s size', async () => {
    expect(await fetcher.probe('s3://big/key.bin', { access: { s3: s3() } })).toMatchObject({ ok: true, size: 100 * 1024 * 1024 });
  });

  it('a 600 MB list page is cut at 8 MiB, worded, with RSS up by less than 50 MB', async () => {
    const { result, riseMb } = await peakRssRise(() => fetcher.listPrefix('s3://listing/p/', { access: { s3: s3() }, limit: 100 }));
    expect(result).toMatchObject({ ok: false, error: "the S3 endpoint's answer is too large (over 8 MiB)" });
    expect(riseMb).toBeLessThan(50);
    await until(() => sentUnder('/listing') > 0, 'the endpoint to see the answer cut');
    expect(sentUnder('/listing')).toBeGreaterThan(8 * 1024 * 1024);
    expect(sentUnder('/listing')).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);

  it('a 600 MB error body (HeadObject answered 404, its GET 403) is cut the same way', async () => {
    const { result, riseMb } = await peakRssRise(() => fetcher.probe('s3://errors/key.bin', { access: { s3: s3() } }));
    expect(result).toMatchObject({ ok: false, error: "the S3 endpoint's answer is too large (over 8 MiB)" });
    expect(riseMb).toBeLessThan(50);
    await until(() => sentUnder('/errors') > 0, 'the endpoint to see the answer cut');
    expect(sentUnder('/errors')).toBeGreaterThan(8 * 1024 * 1024);
    expect(sentUnder('/errors')).toBeLessThan(64 * 1024 * 1024);
  }, 60_000);
});
