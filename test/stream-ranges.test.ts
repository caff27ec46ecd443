// Stream ZIP ranges from a cold start (issue 45): the first byte goes out before the CRCs the
// range needs later are known, concurrent ranges share the work of learning them, and what is
// read from the origins only to learn them is bounded per ZIP (each input at most once more than
// the bytes sent). Bytes are compared with the whole archive rendered from the inputs.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { planZip, type ZipLayout } from '@ap/zip';
import { renderWhole } from '../packages/zip/src/testing';
import { call, createUser, download, waitForJob } from './helpers';
import { bytesOf } from './origin';
import { writeOriginHead } from './origin-range';
import { startStack, type Stack } from './stack';

const MiB = 1024 * 1024;

/** An origin that counts what each GET served and can hold GETs that start below a byte. */
interface HoldingOrigin {
  url: string;
  set(path: string, body: Buffer): string;
  /** GETs of `path` starting below `at` wait until `release`. */
  holdBelow(path: string, at: number): void;
  release(): void;
  held(path: string): number;
  served: { path: string; start: number; bytes: number }[];
  bytesOf(paths: readonly string[]): number;
  close(): Promise<void>;
}

async function startHoldingOrigin(): Promise<HoldingOrigin> {
  const files = new Map<string, Buffer>();
  const holds = new Map<string, number>();
  let waiting: { path: string; go: () => void }[] = [];
  const served: HoldingOrigin['served'] = [];
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const body = files.get(path);
    if (!body) return void res.writeHead(404).end();
    const go = () => {
      const span = writeOriginHead(req, res, body.length, `"${path}-${body.length}"`);
      if (!span || req.method === 'HEAD') return void res.end();
      served.push({ path, start: span.start, bytes: span.end - span.start });
      res.end(body.subarray(span.start, span.end));
    };
    const start = /^bytes=(\d+)-/.exec(req.headers.range ?? '');
    const from = start ? Number(start[1]) : 0;
    const hold = holds.get(path);
    if (req.method === 'GET' && hold !== undefined && from < hold) waiting.push({ path, go });
    else go();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    served,
    set: (path, body) => (files.set(path, body), url + path),
    holdBelow: (path, at) => void holds.set(path, at),
    release: () => {
      holds.clear();
      const now = waiting;
      waiting = [];
      for (const w of now) w.go();
    },
    held: (path) => waiting.filter((w) => w.path === path).length,
    bytesOf: (paths) => served.filter((s) => paths.includes(s.path)).reduce((n, s) => n + s.bytes, 0),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

let stack: Stack;
let origin: HoldingOrigin;
let key: string;
let seq = 0;

beforeAll(async () => {
  stack = await startStack({ STREAM_DOWNLOADS_PER_USER: '64' });
  origin = await startHoldingOrigin();
  key = (await createUser(stack.ctx, { plan: 'pro' })).apiKey;
});
afterAll(async () => {
  await stack.close();
  await origin.close();
});

/** A fresh (cold) stream ZIP of these bodies: its URL, layout, whole bytes and origin paths. */
async function coldZip(bodies: Buffer[]): Promise<{ url: string; layout: ZipLayout; whole: Buffer; paths: string[] }> {
  const run = ++seq;
  const paths = bodies.map((_, i) => `/z${run}/f${i}.bin`);
  const files = bodies.map((b, i) => ({ url: origin.set(paths[i]!, b) }));
  const res = await call(stack.url, 'POST', '/jobs', { key, body: { files, mode: 'stream' } });
  expect(res.status).toBe(201);
  const job = await waitForJob(stack.url, key, res.body.job_id);
  expect(job.status).toBe('completed');
  const zipId = job.zips[0].id;
  const zip = await stack.ctx.db.zip.findUniqueOrThrow({ where: { id: zipId }, include: { job: true } });
  const rows = await stack.ctx.db.jobFile.findMany({ where: { zipId }, orderBy: { position: 'asc' } });
  const layout = planZip(rows.map((f) => ({ name: f.entryName!, size: Number(f.size) })), { mtime: zip.job.createdAt });
  return { url: job.zips[0].download_url, layout, whole: renderWhole(layout, bodies), paths };
}

async function range(url: string, start: number, end: number): Promise<Buffer> {
  const res = await download(url, { range: `bytes=${start}-${end}` });
  expect(res.status).toBe(206);
  return res.body;
}

describe('a cold stream ZIP', () => {
  it('sends a range deep in a large entry before that entry’s CRC is known', async () => {
    const bodies = [bytesOf(4501, 50_000), bytesOf(4502, 8 * MiB)];
    const zip = await coldZip(bodies);
    const big = zip.layout.entries[1]!;
    const deep = 6 * MiB;
    // Nothing below the range's start in the large file is served until the first bytes are in.
    origin.holdBelow(zip.paths[1]!, deep);
    const start = big.dataOffset + deep;
    const res = await fetch(zip.url, { headers: { range: `bytes=${start}-` } });
    expect(res.status).toBe(206);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(first.done).toBe(false);
    // The prefix read to learn the CRC is still held at the origin: the bytes came first.
    expect(origin.served.filter((s) => s.path === zip.paths[1] && s.start < deep)).toEqual([]);
    // The work to learn it has begun meanwhile (held at the origin now).
    while (origin.held(zip.paths[1]!) === 0) await new Promise((r) => setTimeout(r, 20));
    origin.release();
    const chunks = [Buffer.from(first.value!)];
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(Buffer.from(r.value));
    expect(Buffer.concat(chunks).equals(zip.whole.subarray(start))).toBe(true);
  });

  it('reads each prefix once for two concurrent ranges', async () => {
    const bodies = [bytesOf(4601, 30_000), bytesOf(4602, 8 * MiB)];
    const zip = await coldZip(bodies);
    const big = zip.layout.entries[1]!;
    const [a, b] = [big.dataOffset + 5 * MiB, big.dataOffset + 6 * MiB];
    const size = zip.layout.totalSize;
    // The second asks while the first is sending (a loaded machine may take longer than the sibling wait between two requests).
    const first = await fetch(zip.url, { headers: { range: `bytes=${a}-${size - 1}` } });
    const reader = first.body!.getReader();
    const head = await reader.read();
    const rest = (async () => {
      const chunks = [Buffer.from(head.value!)];
      for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(Buffer.from(r.value));
      return Buffer.concat(chunks);
    })();
    const [ra, rb] = await Promise.all([rest, range(zip.url, b, size - 1)]);
    expect(ra.equals(zip.whole.subarray(a))).toBe(true);
    expect(rb.equals(zip.whole.subarray(b))).toBe(true);
    // Below the first range: read once, only to hash it. From there, what each range sends.
    const below = origin.served.filter((s) => s.path === zip.paths[1] && s.start < 5 * MiB).reduce((n, s) => n + s.bytes, 0);
    expect(below).toBe(5 * MiB);
    expect(origin.bytesOf([zip.paths[1]!])).toBeLessThanOrEqual(5 * MiB + 3 * MiB + 2 * MiB);
  });

  it('answers a tail range from one read of each file, shared with later requests', async () => {
    const bodies = [bytesOf(4701, 3 * MiB), bytesOf(4702, 0), bytesOf(4703, 2 * MiB + 17), bytesOf(4704, 90_000)];
    const zip = await coldZip(bodies);
    const size = zip.layout.totalSize;
    // The whole central directory: every CRC, from one read of each file at most.
    const tail = await download(zip.url, { range: `bytes=-${size - zip.layout.centralOffset}` });
    expect(tail.status).toBe(206);
    expect(tail.body.equals(zip.whole.subarray(zip.layout.centralOffset))).toBe(true);
    const sizes = bodies.reduce((n, b) => n + b.length, 0);
    expect(origin.bytesOf(zip.paths)).toBeLessThanOrEqual(sizes);
    // Learned for every later request: the central directory costs no origin byte now.
    const before = origin.bytesOf(zip.paths);
    const central = await range(zip.url, zip.layout.centralOffset, size - 1);
    expect(central.equals(zip.whole.subarray(zip.layout.centralOffset))).toBe(true);
    expect(origin.bytesOf(zip.paths)).toBe(before);
    // Tails are the tail of the full download.
    const full = await download(zip.url);
    for (const n of [200, 4096]) expect((await download(zip.url, { range: `bytes=-${n}` })).body.equals(full.body.subarray(size - n))).toBe(true);
  });

  it('does not wait on a whole download that has not reached the entries a tail range needs', async () => {
    const bodies = [bytesOf(4801, 6 * MiB), bytesOf(4802, 6 * MiB), bytesOf(4803, 6 * MiB)];
    const zip = await coldZip(bodies);
    const size = zip.layout.totalSize;
    // A whole download whose client reads nothing: its later bodies never begin.
    const stalled = await new Promise<http.IncomingMessage>((resolve, reject) => http.get(zip.url, { agent: false }, resolve).on('error', reject));
    stalled.pause();
    try {
      const tail = await range(zip.url, zip.layout.centralOffset, size - 1);
      expect(tail.equals(zip.whole.subarray(zip.layout.centralOffset))).toBe(true);
    } finally {
      stalled.destroy();
    }
  });
});

/** Seeded, so a failure names the ranges it saw. */
function random(seed: number): () => number {
  let x = seed >>> 0;
  return () => {
    x = (x + 0x6d2b79f5) >>> 0;
    let t = Math.imul(x ^ (x >>> 15), 1 | x);
    t ^= t + Math.imul(t ^ (t >>> 7), 61 | t);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe('any range, cold or warm, one connection or eight', () => {
  const sizes = [700_000, 0, 2 * MiB + 5, 333, 1_300_000, 64_000];
  const bodiesOf = (seed: number) => sizes.map((n, i) => bytesOf(seed * 10 + i, n));

  it('an 8-range download of a cold ZIP equals the full download and reads at most 1.15x its bytes', async () => {
    const zip = await coldZip(bodiesOf(48));
    const size = zip.layout.totalSize;
    const cuts = Array.from({ length: 9 }, (_, i) => Math.floor((size * i) / 8));
    const parts = await Promise.all(cuts.slice(0, 8).map((s, i) => range(zip.url, s, cuts[i + 1]! - 1)));
    expect(Buffer.concat(parts).equals(zip.whole)).toBe(true);
    expect(origin.bytesOf(zip.paths) / size).toBeLessThanOrEqual(1.15);
  });

  it('serves random ranges byte for byte, reading each input at most once more than the bytes sent', async () => {
    const seed = Number(process.env.RANGES_SEED ?? Date.now() % 100_000);
    process.stdout.write(`random ranges: seed ${seed}\n`);
    const next = random(seed);
    for (const connections of [1, 8]) {
      const zip = await coldZip(bodiesOf(50 + connections));
      const size = zip.layout.totalSize;
      const inputs = sizes.reduce((n, s) => n + s, 0);
      let sent = 0;
      const pick = (): [number, number] => {
        const a = Math.floor(next() * size);
        const b = Math.min(size - 1, a + Math.floor(next() * next() * size));
        return [a, b];
      };
      // Cold, then warm (what the first rounds learned), with one range at a time or eight at once.
      for (let round = 0; round < 3; round++) {
        const spans = Array.from({ length: connections === 1 ? 4 : 8 }, pick);
        const one = async ([a, b]: [number, number]) => {
          const got = await range(zip.url, a, b);
          sent += got.length;
          expect({ seed, span: [a, b], same: got.equals(zip.whole.subarray(a, b + 1)) }).toEqual({ seed, span: [a, b], same: true });
        };
        if (connections === 1) for (const s of spans) await one(s);
        else await Promise.all(spans.map(one));
      }
      expect({ seed, connections, extra: origin.bytesOf(zip.paths) - sent <= inputs }).toEqual({ seed, connections, extra: true });
    }
  });
});
